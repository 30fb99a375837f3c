package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// BenchmarkFleetCatalogs: `fleet migrate --to v2` of BENCH_FLEET_CATALOGS
// catalogs (default 20) of BENCH_FLEET_CATALOG_ROWS rows each (default
// 100000), each behind its own pointer under one prefix on versitygw, at
// --concurrency 1, 2 and 4 (BENCH_FLEET_CONCURRENCY), canary 1; a fleet
// rollback between runs puts every pointer back. It reports the fleet
// run's wall time, the mean run and write freeze per catalog, and fails
// unless every catalog migrated.
func BenchmarkFleetCatalogs(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Minute)
	defer cancel()
	n := testenv.EnvInts(b, "BENCH_FLEET_CATALOGS", []int{20})[0]
	rows := testenv.EnvInts(b, "BENCH_FLEET_CATALOG_ROWS", []int{100000})[0]
	s3server.StartWith(b, map[string]bool{"rocklake": true})
	dir := b.TempDir()
	prefix := "s3://rocklake/tenants/"
	seeded := time.Now()
	for i := range n {
		src := "file://" + filepath.Join(dir, fmt.Sprintf("t%02d", i))
		if _, err := seed.Seed(ctx, src, seed.Options{Rows: rows, Seed: int64(i + 1)}); err != nil {
			b.Fatal(err)
		}
		cli(b, "init-pointer", "--pointer", fmt.Sprintf("%st%02d/CURRENT", prefix, i), "--catalog", src).want(b, exitOK)
	}
	b.Logf("seeded %d catalogs of %d rows in %s", n, rows, time.Since(seeded).Round(time.Second))
	for _, c := range testenv.EnvInts(b, "BENCH_FLEET_CONCURRENCY", []int{1, 2, 4}) {
		b.Run(fmt.Sprintf("catalogs=%d/rows=%d/concurrency=%d", n, rows, c), func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				r := cli(b, "fleet", "migrate", "--pointers", prefix, "--to", "v2", "--concurrency", fmt.Sprint(c), "--canary", "1", "--shards", "4", "--freeze-grace", "0s", "--json", "--timeout", "50m")
				wall := time.Since(start)
				r.want(b, exitOK)
				var run fleet.Run
				if err := json.Unmarshal([]byte(r.stdout), &run); err != nil || run.Totals[fleet.Migrated] != n {
					b.Fatalf("fleet migrate: %v, %v", run.Totals, err)
				}
				var each, freeze float64
				for _, l := range run.Lines {
					each += l.Seconds
					freeze += l.FreezeSeconds
				}
				b.ReportMetric(wall.Seconds(), "fleet-s")
				b.ReportMetric(each/float64(n), "run-s/catalog")
				b.ReportMetric(freeze/float64(n), "freeze-s/catalog")
				b.StopTimer()
				cli(b, "fleet", "rollback", "--pointers", prefix, "--concurrency", "4", "--freeze-grace", "0s", "--timeout", "50m").want(b, exitOK)
				b.StartTimer()
			}
		})
	}
}
