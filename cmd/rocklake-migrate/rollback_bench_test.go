package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
)

// BenchmarkRollback: a rollback that carries commits back, after an online
// `migrate --rebuild` of a seeded catalog of BENCH_ROLLBACK_ROWS rows
// (default 1000000), with BENCH_ROLLBACK_COMMITS commits (default
// 1000,10000) made through the real RockLake on the new catalog since the
// flip, and a client committing every 100 ms through the rollback itself.
// Reported per run: freeze-s (the rollback's write freeze, from its Fence
// to the pointer's write), rollback-s (the command), carried-keys, rounds,
// commit-s (the commits since the flip, for scale), and acked / refused
// during the rollback. Every commit RockLake acknowledged must be in the
// previous catalog at the end, or the benchmark fails.
func BenchmarkRollback(b *testing.B) {
	if _, err := rocklake.Binary(); err != nil {
		b.Fatal(err)
	}
	rows := testenv.EnvInts(b, "BENCH_ROLLBACK_ROWS", []int{1000000})
	commits := testenv.EnvInts(b, "BENCH_ROLLBACK_COMMITS", []int{1000, 10000})
	for _, n := range rows {
		for _, k := range commits {
			b.Run(fmt.Sprintf("rows=%d/commits=%d", n, k), func(b *testing.B) {
				for b.Loop() {
					b.StopTimer()
					r := rollbackAfterCommits(b, n, k)
					b.StartTimer()
					b.ReportMetric(r.freeze, "freeze-s")
					b.ReportMetric(r.seconds, "rollback-s")
					b.ReportMetric(float64(r.carried), "carried-keys")
					b.ReportMetric(float64(r.rounds), "rounds")
					b.ReportMetric(r.commitSeconds, "commit-s")
					b.ReportMetric(float64(r.acked), "acked")
					b.ReportMetric(float64(r.refused), "refused")
				}
			})
		}
	}
}

type rollbackRun struct {
	freeze, seconds, commitSeconds  float64
	carried, rounds, acked, refused int
}

// rollbackAfterCommits seeds n rows, migrates them online into a new
// catalog, commits k times there through the real RockLake, then rolls
// back while a client commits every 100 ms; it fails unless every
// acknowledged commit is in the previous catalog afterwards.
func rollbackAfterCommits(b *testing.B, n, k int) rollbackRun {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	defer cancel()
	dir, src, ptr := seededPointer(b, ctx, n)
	r := cli(b, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "new")+"/", "--shards", "8", "--json")
	r.want(b, exitOK)
	var fwd localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &fwd); err != nil {
		b.Fatal(err)
	}
	srv, err := rocklake.Serve(ctx, strings.TrimPrefix(fwd.Target, "file://"))
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	var names []string
	start := time.Now()
	for i := range k {
		name := fmt.Sprintf("since_flip_%05d", i)
		if _, err := rocklake.AddSchema(ctx, srv, name); err != nil {
			b.Fatalf("commit %d on the new catalog: %v\n%s", i, err, srv.Logs())
		}
		names = append(names, name)
	}
	out := rollbackRun{commitSeconds: time.Since(start).Seconds()}
	w := commitEvery(ctx, srv, 100*time.Millisecond)
	time.Sleep(time.Second)
	start = time.Now()
	back := cli(b, "rollback", "--pointer", ptr, "--freeze-grace", "0s", "--json")
	out.seconds = time.Since(start).Seconds()
	acked, refused := w.halt()
	back.want(b, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(back.stdout), &rep); err != nil || rep.Online == nil {
		b.Fatalf("rollback report %q: %v", back.stdout, err)
	}
	out.freeze, out.rounds, out.carried = rep.Online.FreezeSeconds, len(rep.Online.Rounds), rep.CarriedKeys
	out.acked, out.refused = len(acked), refused
	_ = srv.Stop()
	served, err := rocklake.Serve(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	defer served.Stop()
	if err := allCommitted(ctx, served, append(names, acked...)); err != nil {
		b.Fatalf("the previous catalog after the rollback: %v", err)
	}
	return out
}
