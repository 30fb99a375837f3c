package seed_test

import (
	"context"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// BenchmarkSeed seeds a 1 000 000-row format-1 catalog on file:// per
// iteration (run with -benchtime 1x), the size DESIGN 6 targets.
func BenchmarkSeed(b *testing.B) {
	const rows = 1_000_000
	ctx := context.Background()
	var total time.Duration
	for i := 0; i < b.N; i++ {
		url := "file://" + b.TempDir() + "/catalog"
		start := time.Now()
		res, err := seed.Seed(ctx, url, seed.Options{Rows: rows, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		if i == 0 {
			b.Logf("keys per tag: %v", res.Keys)
		}
	}
	b.ReportMetric(float64(rows*b.N)/total.Seconds(), "rows/s")
}
