package catalog_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// BenchmarkInspect seeds a 1 000 000-row catalog on file:// once, then
// times what `inspect` does: the summary (counts, counters, system keys)
// and the full JSON document with every row decoded.
func BenchmarkInspect(b *testing.B) {
	const rows = 1_000_000
	ctx := context.Background()
	url := "file://" + b.TempDir() + "/catalog"
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: rows, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.Run("summary", func(b *testing.B) {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if _, err := c.Summary(ctx); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "rows/s")
	})
	b.Run("json-all-rows", func(b *testing.B) {
		start := time.Now()
		for i := 0; i < b.N; i++ {
			if err := c.InspectJSON(ctx, io.Discard, format.KnownTags()...); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(rows*b.N)/time.Since(start).Seconds(), "rows/s")
	})
}
