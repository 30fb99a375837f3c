package shard_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// benchCatalog is the catalog the shard benchmarks read (BENCH_ROWS, default
// 200 000), one zstd shard of all of it per op, file://.
func benchCatalog(b *testing.B) (*blob.Store, *catalog.Catalog, uint64) {
	b.Helper()
	rows := testenv.EnvInts(b, "BENCH_ROWS", []int{200_000})[0]
	ctx := context.Background()
	url := "file://" + filepath.Join(b.TempDir(), "src")
	res, err := seed.Seed(ctx, url, seed.Options{Rows: rows, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	var keys uint64
	for _, n := range res.Keys {
		keys += n
	}
	store, err := blob.New(ctx)
	if err != nil {
		b.Fatal(err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return store, c, keys
}

func benchPath(b *testing.B) []migration.Conversion {
	path, err := migration.Path(format.V1, format.V2)
	if err != nil {
		b.Fatal(err)
	}
	return path
}

// The Map's shard step: ExportShard then TransformFile of its output, as
// two steps did, against ExportTransformShard in one pass.
func BenchmarkShardStep(b *testing.B) {
	store, c, keys := benchCatalog(b)
	h := header(c, shard.Range{}, 1)
	dir := b.TempDir()
	v1, v2 := filepath.Join(dir, "v1.ndjson.zst"), filepath.Join(dir, "v2.ndjson.zst")
	// CPU time as well as wall: on a shared machine, wall time says how
	// many cores the benchmark got as much as what it costs.
	var cpu0 time.Duration
	rate := func(b *testing.B) {
		b.ReportMetric(float64(keys)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
		// What zstd's level costs in size: both shard files as written.
		for name, f := range map[string]string{"v1-bytes": v1, "v2-bytes": v2} {
			if fi, err := os.Stat(f); err == nil {
				b.ReportMetric(float64(fi.Size()), name)
			}
		}
	}
	start := func(b *testing.B) { cpu0 = cpuTime(b) }
	b.Run("separate", func(b *testing.B) {
		start(b)
		for b.Loop() {
			if _, err := shard.ExportShard(context.Background(), store, c, h, v1, nil); err != nil {
				b.Fatal(err)
			}
			if _, err := migration.TransformFile(context.Background(), store, v1, v2, format.V2, "bench", migration.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
	b.Run("fused", func(b *testing.B) {
		start(b)
		t := shard.Transformed{Out: v2, To: format.V2, Path: benchPath(b), CreatedBy: "bench"}
		for b.Loop() {
			if _, _, err := shard.ExportTransformShard(context.Background(), store, c, h, v1, t, nil); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
	b.Run("transform", func(b *testing.B) {
		if _, err := shard.ExportShard(context.Background(), store, c, h, v1, nil); err != nil {
			b.Fatal(err)
		}
		start(b)
		for b.Loop() {
			if _, err := migration.TransformFile(context.Background(), store, v1, v2, format.V2, "bench", migration.Options{}); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
	b.Run("export", func(b *testing.B) {
		start(b)
		for b.Loop() {
			if _, err := shard.ExportShard(context.Background(), store, c, h, v1, nil); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
	b.Run("scan", func(b *testing.B) {
		start(b)
		for b.Loop() {
			scanAll(b, c)
		}
		rate(b)
	})
}

// scanAll reads every key and value of c, raw: the rate the other
// benchmarks' readings are held to.
func scanAll(b *testing.B, c *catalog.Catalog) {
	for _, err := range c.ScanRaw(context.Background(), nil, nil) {
		if err != nil {
			b.Fatal(err)
		}
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Verify's two reads, the catalog's digest (DigestCatalog) and the shards'
// (DigestShards, of BENCH_SHARDS zstd shards, default 8), and Verify,
// which makes both at once, against the raw scan of the same catalog in the
// same run.
func BenchmarkDigest(b *testing.B) {
	store, c, keys := benchCatalog(b)
	var cpu0 time.Duration
	start := func(b *testing.B) { cpu0 = cpuTime(b) }
	rate := func(b *testing.B) {
		b.ReportMetric(float64(keys)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric((cpuTime(b)-cpu0).Seconds()/float64(b.N), "cpu-s/op")
	}
	b.Run("scan", func(b *testing.B) {
		start(b)
		for b.Loop() {
			scanAll(b, c)
		}
		rate(b)
	})
	b.Run("catalog", func(b *testing.B) {
		start(b)
		for b.Loop() {
			if _, err := shard.DigestCatalog(context.Background(), c, nil); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
	n := testenv.EnvInts(b, "BENCH_SHARDS", []int{8})[0]
	dir := b.TempDir()
	if _, err := shard.Export(context.Background(), store, c.URL(), dir, shard.ExportOptions{Shards: n, Compression: "zst"}); err != nil {
		b.Fatal(err)
	}
	b.Run("shards", func(b *testing.B) {
		start(b)
		for b.Loop() {
			if _, _, err := shard.DigestShards(context.Background(), store, dir); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
	// Both reads, as the verify command makes them.
	b.Run("verify", func(b *testing.B) {
		start(b)
		for b.Loop() {
			if _, err := shard.Verify(context.Background(), store, c.URL(), dir, shard.VerifyOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		rate(b)
	})
}
