package shard_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Shards cut from the SSTs' block indexes hold about what shards cut by a
// byte scan hold: on a seeded catalog the largest, measured by the scan's
// profile, is within 10 % of the mean, and the plan partitions the key
// space.
func TestBlockPlanBalancesLikeTheByteScan(t *testing.T) {
	if testing.Short() {
		t.Skip("seeds 200 000 rows")
	}
	ctx := testenv.Context(t)
	url := fileURL(t, "c")
	seeded(t, url, 200_000)
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	scan, err := shard.Measure(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{4, 16, 64} {
		byBlocks, err := shard.PlanByBlocks(ctx, url, "", slatedb.Options{}, n)
		if err != nil {
			t.Fatalf("%d shards: %v", n, err)
		}
		if err := shard.CheckRanges(byBlocks); err != nil || len(byBlocks) != n {
			t.Fatalf("%d shards: %d ranges, %v", n, len(byBlocks), err)
		}
		byBytes, err := scan.Ranges(n)
		if err != nil {
			t.Fatal(err)
		}
		got, want := shard.Imbalance(scan.RangeBytes(byBlocks)), shard.Imbalance(scan.RangeBytes(byBytes))
		t.Logf("%d shards of %d keys, %d bytes: imbalance by blocks %.3f, by the byte scan %.3f", n, scan.Keys, scan.Bytes, got, want)
		if got > 1.10 {
			t.Errorf("%d shards cut by blocks: largest %.3f × the mean, want ≤ 1.10", n, got)
		}
	}
}

// A profile that cannot be trusted is ErrBlocksUnusable, saying why: no
// compacted data, more in the WAL than a small share of a shard, too few
// blocks a shard. A small WAL and enough blocks make a profile.
func TestBlocksUnusable(t *testing.T) {
	blocks := func(n int, size int64) []slatedb.Block {
		out := make([]slatedb.Block, n)
		for i := range out {
			out[i] = slatedb.Block{Start: []byte(fmt.Sprintf("k%06d", i)), Bytes: size}
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		b      slatedb.Blocks
		shards int
		ok     bool
	}{
		{"nothing compacted", slatedb.Blocks{Merged: 1, WALSSTs: 3, WALBytes: 100}, 1, false},
		{"a big WAL", slatedb.Blocks{Blocks: blocks(1000, 4096), Merged: 1, WALSSTs: 9, WALBytes: 2 << 20}, 4, false},
		{"a small WAL", slatedb.Blocks{Blocks: blocks(1000, 4096), Merged: 1, WALSSTs: 1, WALBytes: 900 << 10}, 4, true},
		{"a WAL small beside a shard", slatedb.Blocks{Blocks: blocks(10000, 64<<10), Merged: 1, WALSSTs: 9, WALBytes: 4 << 20}, 4, true},
		{"too few blocks", slatedb.Blocks{Blocks: blocks(100, 4096), Merged: 1}, 4, false},
		{"merged blocks count as theirs", slatedb.Blocks{Blocks: blocks(100, 4096), Merged: 4}, 4, true},
	} {
		p, err := shard.FromBlocks(tc.b, tc.shards)
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, shard.ErrBlocksUnusable) {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if tc.ok {
			rs, err := p.Ranges(tc.shards)
			if err != nil || shard.CheckRanges(rs) != nil {
				t.Errorf("%s: ranges %v, %v", tc.name, rs, err)
			}
		}
	}
	// A tiny catalog has too few blocks for 4 shards.
	ctx := testenv.Context(t)
	url := fileURL(t, "small")
	seeded(t, url, 10)
	if _, err := shard.PlanByBlocks(ctx, url, "", slatedb.Options{}, 4); !errors.Is(err, shard.ErrBlocksUnusable) {
		t.Fatalf("tiny catalog: %v, want ErrBlocksUnusable", err)
	}
}
