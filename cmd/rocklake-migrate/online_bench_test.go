package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// BenchmarkOnlineMigration: the write freeze of an offline and an online
// migration (a rebuild, so that the real RockLake serves the result) of a
// seeded catalog the real RockLake serves while a client commits through
// it every 100 ms for the whole run, at each row count of
// BENCH_ONLINE_ROWS (default 100000,1000000,3000000). Reported per run:
// freeze-s (offline: from Freeze's fence, right after Check, to the end of
// the run; online: from Fence to the pointer's write), refused (commits RockLake refused while the run ran: from the
// fence on, as no supervisor restarts it here), acked, and migrate-s. Every
// acknowledged commit must be in the new catalog, or the benchmark fails.
func BenchmarkOnlineMigration(b *testing.B) {
	if _, err := rocklake.Binary(); err != nil {
		b.Fatal(err)
	}
	rows := testenv.EnvInts(b, "BENCH_ONLINE_ROWS", []int{100000, 1000000, 3000000})
	for _, n := range rows {
		for _, mode := range []string{"offline", "online"} {
			b.Run(fmt.Sprintf("rows=%d/%s", n, mode), func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					r := migrateWhileCommitting(b, n, mode == "online")
					b.StartTimer()
					b.ReportMetric(r.freeze, "freeze-s")
					b.ReportMetric(float64(r.refused), "refused")
					b.ReportMetric(float64(r.acked), "acked")
					b.ReportMetric(r.seconds, "migrate-s")
					b.ReportMetric(float64(r.rounds), "rounds")
					if mode == "online" {
						// The freeze's parts.
						b.ReportMetric(r.fence, "fence-s")
						b.ReportMetric(r.lastRound, "last-round-s")
						b.ReportMetric(r.lastKeys, "last-round-keys")
						b.ReportMetric(r.lastCandidates, "last-round-candidates")
						b.ReportMetric(r.verify, "verify-s")
						b.ReportMetric(r.flip, "flip-s")
					}
				}
			})
		}
	}
}

// seededPointer starts versitygw with a versioned bucket "rocklake" for
// b, seeds a catalog of n rows in <dir>/catalogs/prod (file://) and points
// s3://rocklake/CURRENT at it.
func seededPointer(b *testing.B, ctx context.Context, n int) (dir, src, ptr string) {
	b.Helper()
	s3server.StartWith(b, map[string]bool{"rocklake": true})
	dir = b.TempDir()
	src = filepath.Join(dir, "catalogs", "prod")
	if _, err := seed.Seed(ctx, "file://"+src, seed.Options{Rows: n, Seed: 26}); err != nil {
		b.Fatal(err)
	}
	return dir, src, pointAt(b, src)
}

type committedRun struct {
	freeze, seconds        float64
	refused, acked, rounds int
	// An online run's freeze, in parts: Fence, the last round (and its
	// source keys), Verify and Flip.
	fence, lastRound, lastKeys, lastCandidates, verify, flip float64
}

// migrateWhileCommitting seeds a catalog of n rows, serves it with the real
// RockLake, commits through it every 100 ms and runs migrate --rebuild
// (online or not) meanwhile; it fails unless every acknowledged commit is
// in the new catalog.
func migrateWhileCommitting(b *testing.B, n int, online bool) committedRun {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	dir, src, ptr := seededPointer(b, ctx, n)
	srv, err := rocklake.Serve(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	w := commitEvery(ctx, srv, 100*time.Millisecond)
	time.Sleep(time.Second)
	args := []string{"migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://" + filepath.Join(dir, "new") + "/",
		"--shards", "8", "--freeze-grace", "0s", "--read-replica=false", "--json"}
	if !online {
		args = append(args, "--offline")
	}
	start := time.Now()
	r := cli(b, args...)
	secs := time.Since(start).Seconds()
	acked, refused := w.halt()
	r.want(b, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		b.Fatal(err)
	}
	out := committedRun{seconds: secs, refused: refused, acked: len(acked)}
	if online {
		if rep.Online == nil {
			b.Fatalf("no online report: %s", r.stdout)
		}
		out.freeze, out.rounds = rep.Online.FreezeSeconds, len(rep.Online.Rounds)
		last := rep.Online.Rounds[len(rep.Online.Rounds)-1]
		out.fence, out.lastRound, out.lastKeys, out.lastCandidates = rep.StateSeconds["Fence"], last.Seconds, float64(last.Keys), float64(last.Candidates)
		out.verify, out.flip = rep.StateSeconds["Verify"], rep.StateSeconds["Flip"]
	} else {
		// Freeze fences as it starts, right after Check: the rest of the
		// run (the Map's items run at once: wall time, not their sum).
		out.freeze = secs - rep.StateSeconds["Check"]
	}
	_ = srv.Stop()
	served, err := rocklake.Serve(ctx, strings.TrimPrefix(rep.Target, "file://"))
	if err != nil {
		b.Fatal(err)
	}
	defer served.Stop()
	if err := allCommitted(ctx, served, acked); err != nil {
		b.Fatalf("the new catalog %s: %v", rep.Target, err)
	}
	return out
}

// BenchmarkReaders: a writer and two readers, each under
// `serve` on one pointer (readers with --refresh 5s), a client committing
// through the writer and reading through each reader every 200 ms, through
// `migrate --rebuild --online` of a seeded catalog of BENCH_READERS_ROWS
// rows (default 1000000). Reported: write-freeze-s (the longest span from a
// refused write to the next acknowledged one), refused, refused-before
// (before the migration: must be 0), read-gap-s and staleness-s (the worst
// reader's: reads failing in a row; how long an acknowledged commit took
// to show), migrate-s.
func BenchmarkReaders(b *testing.B) {
	for _, n := range testenv.EnvInts(b, "BENCH_READERS_ROWS", []int{1000000}) {
		b.Run(fmt.Sprintf("rows=%d", n), func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
				dir, _, ptr := seededPointer(b, ctx, n)
				r := readersThroughMigration(b, ctx, ptr, "file://"+filepath.Join(dir, "new")+"/", 2, 5*time.Second, 15*time.Second)
				cancel()
				b.StartTimer()
				gap, stale := slices.Max(r.readGap), slices.Max(r.staleness)
				b.ReportMetric(r.writeFreeze.Seconds(), "write-freeze-s")
				b.ReportMetric(float64(r.refused), "refused")
				b.ReportMetric(float64(r.refusedBefore), "refused-before")
				b.ReportMetric(gap.Seconds(), "read-gap-s")
				b.ReportMetric(stale.Seconds(), "staleness-s")
				b.ReportMetric(r.migrate.Seconds(), "migrate-s")
				if r.refusedBefore != 0 {
					b.Fatalf("the readers made the writer refuse %d writes", r.refusedBefore)
				}
			}
		})
	}
}
