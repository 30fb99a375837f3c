package workflow

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// BenchmarkFreezePlan times Freeze's shard plan of a seeded catalog on local
// S3 (BENCH_ROWS rows, default 200 000; 16 shards) at Freeze's own
// checkpoint, through its passive writer: "blocks" is shard.PlanBalanced (the SSTs'
// block indexes, what Freeze does), "bytes" the byte scan it did before
// (shard.PlanByScan, unchanged). "imbalance" is the largest shard's bytes over
// the mean, as a full byte scan's profile measures them. "replica" is the
// read replica's copy at that checkpoint (MakeReplica).
func BenchmarkFreezePlan(b *testing.B) {
	rows := testenv.EnvInts(b, "BENCH_ROWS", []int{200_000})[0]
	const shards = 16
	ctx := context.Background()
	stack := s3server.Start(b)
	s3server.SetEnv(b, stack)
	if err := stack.CreateBucket(ctx, "rocklake", true); err != nil {
		b.Fatal(err)
	}
	url := "s3://rocklake/catalogs/bench"
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: rows, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	so := slatedb.Options{Passive: true}
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Store: so})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour, Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	prof, err := shard.Measure(ctx, w.Catalog, nil)
	if err != nil {
		b.Fatal(err)
	}
	blocks, err := slatedb.ProfileBlocks(ctx, url, cp.ID, so, shard.MaxBlocks)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%d rows: %d keys, %d bytes; %d compacted SSTs, %d blocks (merged %d), WAL %d SSTs", rows, prof.Keys, prof.Bytes, blocks.SSTs, len(blocks.Blocks), blocks.Merged, blocks.WALSSTs)
	plans := []struct {
		name, balance string
		plan          func() ([]shard.Range, string, error)
	}{
		{"blocks", "blocks", func() ([]shard.Range, string, error) {
			return shard.PlanBalanced(ctx, w.Catalog, shard.BlockSource{URL: url, Checkpoint: cp.ID, Options: so}, shards, shard.ByteScanBudget)
		}},
		{"bytes", "bytes", func() ([]shard.Range, string, error) {
			return shard.PlanByScan(ctx, w.Catalog, shards, shard.ByteScanBudget)
		}},
	}
	for _, p := range plans {
		b.Run(p.name, func(b *testing.B) {
			var rs []shard.Range
			for b.Loop() {
				var balance string
				if rs, balance, err = p.plan(); err != nil || balance != p.balance {
					b.Fatalf("plan: %q, %v", balance, err)
				}
			}
			b.ReportMetric(shard.Imbalance(prof.RangeBytes(rs)), "imbalance")
		})
	}
	// The read replica Freeze makes at its checkpoint (MakeReplica: a
	// server-side copy of the checkpoint's objects), each into a new place.
	b.Run("replica", func(b *testing.B) {
		n := 0
		for b.Loop() {
			n++
			copied, err := slatedb.CopyCheckpoint(ctx, url, cp.ID, "s3://rocklake/catalogs/replica-"+strconv.Itoa(n), so)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(copied.Bytes)/(1<<20), "MiB")
			b.ReportMetric(float64(copied.Objects), "objects")
		}
	})
}
