package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
)

// readersRun is what a writer and its readers, each under
// `serve` on one pointer, saw around a migration.
type readersRun struct {
	// refusedBefore: writes refused before the migration started (readers
	// starting and refreshing beside the writer).
	refusedBefore, refused, acked int
	// writeFreeze: the longest span from a refused write to the next
	// acknowledged one.
	writeFreeze time.Duration
	// readGap and staleness, per reader: the longest span its reads failed
	// in a row; the longest an acknowledged commit took to show in it.
	readGap, staleness []time.Duration
	migrate            time.Duration
}

type readObs struct {
	at    time.Time
	ok    bool
	names map[string]bool
}

// readersThroughMigration serves ptr with a writer and `readers`
// readers (--mode reader, --refresh refresh), commits a schema through the
// writer every 200 ms and reads through each reader every 200 ms for quiet,
// runs `migrate --rebuild --online` (target beside targetDir), goes on for
// quiet, and checks that every acknowledged commit is in the catalog the
// pointer names.
func readersThroughMigration(tb testing.TB, ctx context.Context, ptr, targetDir string, readers int, refresh, quiet time.Duration) readersRun {
	tb.Helper()
	_, wc := servedWriter(tb, ctx, ptr, "fleet_first")
	bin, err := rocklake.Binary()
	if err != nil {
		tb.Fatal(err)
	}
	var rs []*supervisor
	for range readers {
		rs = append(rs, superviseRockLake(tb, ctx, ptr, bin, 16, "--interval", "200ms", "--refresh", refresh.String(), "--", "--mode", "reader"))
	}
	for i, r := range rs {
		eventually(tb, fmt.Sprintf("reader %d reads", i+1), func() error { _, err := schemas(ctx, rocklake.Client(r.port)); return err })
	}

	loopCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex
	type ack struct {
		name string
		at   time.Time
		ok   bool
	}
	var writes []ack
	obs := make([][]readObs, readers)
	wg.Add(1 + readers)
	go func() {
		defer wg.Done()
		for i := 0; loopCtx.Err() == nil; i++ {
			name := fmt.Sprintf("fleet_%04d", i)
			cctx, cancel := context.WithTimeout(loopCtx, 5*time.Second)
			_, err := rocklake.AddSchema(cctx, wc, name)
			cancel()
			if loopCtx.Err() != nil {
				return
			}
			mu.Lock()
			writes = append(writes, ack{name, time.Now(), err == nil})
			mu.Unlock()
			time.Sleep(200 * time.Millisecond)
		}
	}()
	for i, r := range rs {
		go func() {
			defer wg.Done()
			cl := rocklake.Client(r.port)
			for loopCtx.Err() == nil {
				at := time.Now()
				cctx, cancel := context.WithTimeout(loopCtx, 5*time.Second)
				got, err := schemas(cctx, cl)
				cancel()
				if loopCtx.Err() != nil {
					return
				}
				o := readObs{at: at, ok: err == nil, names: map[string]bool{}}
				for _, n := range strings.Split(got, ",") {
					o.names[n] = true
				}
				mu.Lock()
				obs[i] = append(obs[i], o)
				mu.Unlock()
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	time.Sleep(quiet)
	started := time.Now()
	cli(tb, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", targetDir, "--online", "--shards", "8",
		"--freeze-grace", "60s", "--read-replica=false", "--json").want(tb, exitOK)
	out := readersRun{migrate: time.Since(started)}
	time.Sleep(quiet)
	stop()
	wg.Wait()

	var acked []string
	var refusedAt time.Time
	for _, a := range writes {
		switch {
		case a.ok:
			acked = append(acked, a.name)
			if !refusedAt.IsZero() {
				out.writeFreeze = max(out.writeFreeze, a.at.Sub(refusedAt))
				refusedAt = time.Time{}
			}
		default:
			out.refused++
			if a.at.Before(started) {
				out.refusedBefore++
			}
			if refusedAt.IsZero() {
				refusedAt = a.at
			}
		}
	}
	out.acked = len(acked)
	end := time.Now()
	for i := range rs {
		var gap time.Duration
		var failedAt time.Time
		for _, o := range obs[i] {
			switch {
			case !o.ok && failedAt.IsZero():
				failedAt = o.at
			case o.ok && !failedAt.IsZero():
				gap = max(gap, o.at.Sub(failedAt))
				failedAt = time.Time{}
			}
		}
		if !failedAt.IsZero() {
			gap = max(gap, end.Sub(failedAt))
		}
		var stale time.Duration
		for _, a := range writes {
			if !a.ok {
				continue
			}
			seen := end
			for _, o := range obs[i] {
				if o.ok && o.at.After(a.at) && o.names[a.name] {
					seen = o.at
					break
				}
			}
			// Commits made in the last refresh before the end are not
			// counted: they had no time to show.
			if seen == end && end.Sub(a.at) < refresh+5*time.Second {
				continue
			}
			stale = max(stale, seen.Sub(a.at))
		}
		out.readGap, out.staleness = append(out.readGap, gap), append(out.staleness, stale)
	}
	if err := allCommitted(ctx, wc, acked); err != nil {
		tb.Fatalf("the catalog the pointer names after the migration: %v", err)
	}
	return out
}

// Issue 37 item 1: readers beside the writer, each under `serve
// --mode reader` on the pointer, serve copies of the catalog (made beside
// it, refreshed every 2 s), so that starting them and their refreshes
// refuse none of the writer's writes; they show each commit within the
// refresh and a copy; through an online migration their reads never fail
// for over a second, and they follow to the new catalog.
func TestRealRockLakeReadersNeverFenceTheWriter(t *testing.T) {
	ctx, _ := s3Stack(t, 5*time.Minute)
	dir := t.TempDir()
	ptr, _ := pointedCatalog(t, ctx, dir)
	r := readersThroughMigration(t, ctx, ptr, "file://"+filepath.Join(dir, "online")+"/", 2, 2*time.Second, 6*time.Second)
	t.Logf("a writer and 2 readers through an online migration (%s): %d writes acknowledged, %d refused (%d before the migration), write freeze %s; readers' read gaps %v, staleness %v",
		r.migrate.Round(time.Millisecond), r.acked, r.refused, r.refusedBefore, r.writeFreeze.Round(time.Millisecond), r.readGap, r.staleness)
	if r.refusedBefore != 0 {
		t.Fatalf("the readers made the writer refuse %d writes before any migration", r.refusedBefore)
	}
	for i := range r.readGap {
		if r.readGap[i] > time.Second {
			t.Fatalf("reader %d: reads failed for %s in a row", i+1, r.readGap[i])
		}
		if r.staleness[i] > 10*time.Second {
			t.Fatalf("reader %d: a commit took %s to show, want within the 2 s refresh and a copy", i+1, r.staleness[i])
		}
	}
}
