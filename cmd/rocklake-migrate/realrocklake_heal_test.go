package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
)

var writerStarted = regexp.MustCompile(`event=started mode=writer catalog=\S+ format=\S+ pid=(\d+)`)

// writerPIDs are the pids of the writers serve started, in order.
func writerPIDs(s string) []int {
	var out []int
	for _, m := range writerStarted.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.Atoi(m[1])
		out = append(out, n)
	}
	return out
}

// Issue 37 item 2: RockLake killed with SIGKILL while a dry run and while an
// online migration copy (their locks say writes go on) is back as a writer
// within one poll and one restart, and takes writes, while the run still
// holds the lock; the run goes on (the online one flips) and every
// acknowledged commit is in the catalog the pointer names at the end.
func TestRealRockLakeKilledDuringACopyIsHealed(t *testing.T) {
	ctx, _ := s3Stack(t, 6*time.Minute)
	dir := t.TempDir()
	ptr, _ := pointedCatalogOfRows(t, ctx, dir, 300000)
	sv, cl := servedWriter(t, ctx, ptr, "before_runs")
	w := commitEvery(ctx, cl, 200*time.Millisecond)
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []struct {
		name string
		args []string
	}{
		{"dry run", []string{"--dry-run"}},
		{"online", []string{"--online", "--freeze-grace", "60s"}},
	} {
		done := make(chan result, 1)
		go func() {
			args := append([]string{"migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://" + dir + "/new/", "--shards", "4", "--read-replica=false"}, run.args...)
			done <- cli(t, args...)
		}()
		var holder string
		eventually(t, run.name+": the lock held, writes going on", func() error {
			l, _, err := lock.Read(ctx, store, ptr, "")
			if err != nil {
				return err
			}
			if !l.Held(time.Now()) || !(l.DryRun || l.WritesGoOn()) {
				return fmt.Errorf("lock %+v", l)
			}
			holder = l.MigrationID
			return nil
		})
		pids := writerPIDs(sv.errOut.String())
		killed := pids[len(pids)-1]
		if err := syscall.Kill(killed, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		eventually(t, run.name+": a new writer takes a write", func() error {
			if p := writerPIDs(sv.errOut.String()); p[len(p)-1] == killed {
				return fmt.Errorf("no writer started since pid %d was killed", killed)
			}
			return writeSchema(ctx, cl, fmt.Sprintf("healed_%d", len(pids)))
		})
		back := time.Since(at)
		l, _, err := lock.Read(ctx, store, ptr, "")
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: RockLake (pid %d) killed; a new writer took a write %s later, lock held by %s: %v", run.name, killed, back.Round(time.Millisecond), l.MigrationID, l.Held(time.Now()))
		if l.MigrationID != holder || !l.Held(time.Now()) {
			t.Fatalf("%s: the run ended (lock %+v) before the writer came back: the run was too short to show the healing", run.name, l)
		}
		if back > 5*time.Second {
			t.Fatalf("%s: the writer came back %s after the kill, want within one poll and one restart", run.name, back)
		}
		select {
		case r := <-done:
			r.want(t, exitOK)
		case <-time.After(4 * time.Minute):
			t.Fatalf("%s: migrate did not end", run.name)
		}
	}
	acked, _ := w.halt()
	eventually(t, "the writer on the catalog the pointer names", func() error { return writeSchema(ctx, cl, "after_runs") })
	if err := allCommitted(ctx, cl, append(acked, "before_runs", "after_runs")); err != nil {
		t.Fatal(err)
	}
}

// pointedCatalogOfRows seeds a catalog of rows rows in <dir>/catalogs/prod
// and points s3://rocklake/CURRENT at it.
func pointedCatalogOfRows(t *testing.T, ctx context.Context, dir string, rows int) (ptr, src string) {
	t.Helper()
	src = dir + "/catalogs/prod"
	cli(t, "seed", "--catalog", "file://"+src, "--rows", strconv.Itoa(rows), "--seed", "7").want(t, exitOK)
	return pointAt(t, src), src
}

// Issue 37 item 3: a cleanup's lock lets the writer go on. `cleanup
// --apply` while the real RockLake serves under `serve` refuses no write;
// and a cleanup's lock left by a cleanup that was killed (written here as
// it leaves it) neither stops the writer nor keeps the supervisor from
// restarting a RockLake that crashed meanwhile.
func TestRealRockLakeCleanupWhileServing(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	ptr, _, sv, cl := servedPointer(t, ctx, dir)
	w := commitEvery(ctx, cl, 100*time.Millisecond)
	time.Sleep(time.Second)
	cli(t, "cleanup", "--pointer", ptr, "--apply").want(t, exitOK)
	time.Sleep(500 * time.Millisecond)

	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	left := lock.Lock{MigrationID: "cleanup-killed", Owner: "test", AcquiredAt: now, ExpiresAt: now.Add(time.Hour), Kind: history.KindCleanup}
	b, _ := json.Marshal(left)
	if _, err := store.Put(ctx, layout.Lock(ptr), b); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the supervisor reads the cleanup's lock", func() error {
		if !strings.Contains(sv.errOut.String(), "lock=cleanup-killed") {
			return fmt.Errorf("no health line names the lock")
		}
		return nil
	})
	pids := writerPIDs(sv.errOut.String())
	if err := syscall.Kill(pids[len(pids)-1], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new writer under the cleanup's lock takes a write", func() error {
		if p := writerPIDs(sv.errOut.String()); len(p) == len(pids) {
			return fmt.Errorf("no writer restarted")
		}
		return writeSchema(ctx, cl, "under_cleanup_lock")
	})
	acked, refused := w.halt()
	t.Logf("%d commits acknowledged through a cleanup --apply and a killed cleanup's lock, %d refused (the ones in the crash)", len(acked), refused)
	if refused > 10 {
		t.Fatalf("%d writes refused: more than the crash and the restart", refused)
	}
	if err := allCommitted(ctx, cl, append(acked, "under_cleanup_lock")); err != nil {
		t.Fatal(err)
	}
}
