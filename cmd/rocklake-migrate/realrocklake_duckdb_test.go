package main

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
)

// readGap is the longest time DuckDB's reads failed in a row: from the
// first failed read of a run to the next read that succeeded.
func readGap(evs []rocklake.SessionEvent) time.Duration {
	var worst time.Duration
	var since time.Time
	for _, e := range evs {
		switch {
		case e.Op != "read":
		case !e.OK && since.IsZero():
			since = e.Time()
		case e.OK && !since.IsZero():
			worst = max(worst, e.Time().Sub(since))
			since = time.Time{}
		}
	}
	if !since.IsZero() {
		worst = time.Hour // never came back
	}
	return worst
}

// Issue 37 item 7: DuckDB 1.5.3 attached through RockLake under `serve`
// (its DuckLake extension keeps one connection open) inserts a row and
// reads the count every 200 ms while two online migrations (--rebuild)
// run one after the other. Reads never fail for more than a second in a
// row (the supervisor serves them from a copy of the source from the
// fence to the flip, and hands new connections to the new writer); writes
// come back after each flip; and every insert DuckDB was told succeeded is
// in the catalog the pointer names at the end, read back through the same
// connection.
func TestRealRockLakeDuckDBThroughTwoOnlineMigrations(t *testing.T) {
	const readGapMax, writesBackMax = time.Second, 10 * time.Second
	ctx, _ := s3Stack(t, 5*time.Minute)
	dir := t.TempDir()
	bin, err := rocklake.Binary()
	if err != nil {
		t.Fatal(err)
	}
	// A lake DuckDB itself wrote through RockLake.
	src, data := filepath.Join(dir, "catalogs", "prod"), filepath.Join(dir, "data")+"/"
	withRockLake(t, ctx, src, func(srv *rocklake.Server) error {
		_, err := rocklake.DuckDB(ctx, srv, data, rocklake.DuckDBWorkload, nil)
		return err
	})
	ptr := pointAt(t, src)
	sv := superviseRockLake(t, ctx, ptr, bin, 16, "--interval", "200ms")
	var sess *rocklake.Session
	eventually(t, "DuckDB attaches through the supervisor", func() error {
		var err error
		sess, err = rocklake.DuckDBSession(ctx, sv.port, data, 200*time.Millisecond)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	var flips []time.Time
	for i := range 2 {
		time.Sleep(time.Second)
		r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "online")+"/",
			"--online", "--shards", "2", "--freeze-grace", "30s", "--read-replica=false", "--json")
		r.want(t, exitOK)
		var rep localrun.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("migration %d report %q: %v", i+1, r.stdout, err)
		}
		flips = append(flips, time.Now())
	}
	time.Sleep(3 * time.Second)
	evs, err := sess.Stop()
	if err != nil {
		t.Fatalf("%v\n%s", err, healthLines(sv.errOut.String()))
	}
	var acked []int64
	var final []int64
	reads, failedReads, failedWrites := 0, 0, 0
	for _, e := range evs {
		switch {
		case e.Op == "write" && e.OK:
			acked = append(acked, e.ID)
		case e.Op == "write":
			failedWrites++
			if failedWrites <= 3 {
				t.Logf("write %d at %s failed: %s", e.ID, e.Time().Format("15:04:05.000"), e.Error)
			}
		case e.Op == "read":
			reads++
			if !e.OK {
				failedReads++
				if failedReads <= 5 {
					t.Logf("read %d at %s failed: %s", e.ID, e.Time().Format("15:04:05.000"), e.Error)
				}
			}
		case e.Op == "final":
			final = e.IDs
		}
	}
	gap := readGap(evs)
	// Writes back after each flip: the first acknowledged write after it.
	var back []time.Duration
	for _, f := range flips {
		for _, e := range evs {
			if e.Op == "write" && e.OK && e.Time().After(f.Add(-5*time.Second)) && !e.Time().Before(firstFailedWriteBefore(evs, f)) {
				back = append(back, max(e.Time().Sub(firstFailedWriteBefore(evs, f)), 0))
				break
			}
		}
	}
	t.Logf("DuckDB through two online migrations: %d reads (%d failed, longest gap %s), %d writes acknowledged, %d refused; writes back %v after their first refusal",
		reads, failedReads, gap.Round(time.Millisecond), len(acked), failedWrites, back)
	if gap > readGapMax {
		for _, e := range evs {
			t.Logf("%s %s %d ok=%v %.400s", e.Time().Format("15:04:05.000"), e.Op, e.ID, e.OK, e.Error)
		}
		t.Fatalf("reads failed for %s in a row, want at most %s\n%s", gap, readGapMax, healthLines(sv.errOut.String()))
	}
	for i, b := range back {
		if b > writesBackMax {
			t.Fatalf("writes came back %s after the first refusal around flip %d, want within %s", b, i+1, writesBackMax)
		}
	}
	if len(back) != len(flips) {
		t.Fatalf("writes came back after %d of %d flips", len(back), len(flips))
	}
	if final == nil {
		t.Fatal("the session's final read failed")
	}
	for _, id := range acked {
		if !slices.Contains(final, id) {
			t.Fatalf("insert %d was acknowledged to DuckDB and is not in the catalog the pointer names (%d rows)", id, len(final))
		}
	}
	if !strings.Contains(sv.errOut.String(), "/reader-") {
		t.Fatalf("the supervisor never served a copy:\n%s", healthLines(sv.errOut.String()))
	}
}

// firstFailedWriteBefore is the start of the last run of refused writes
// that began before at (the fence of the run that flipped at at); at
// itself when none.
func firstFailedWriteBefore(evs []rocklake.SessionEvent, at time.Time) time.Time {
	start := at
	for _, e := range evs {
		if e.Op != "write" || e.Time().After(at) {
			continue
		}
		if !e.OK {
			if start.Equal(at) || start.After(e.Time()) {
				start = e.Time()
			}
		} else {
			start = at
		}
	}
	return start
}
