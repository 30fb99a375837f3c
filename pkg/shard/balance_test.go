package shard_test

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// exactBytes scans each range of c and sums its keys' and values' bytes.
func exactBytes(t *testing.T, c *catalog.Catalog, rs []shard.Range) []int64 {
	t.Helper()
	out := make([]int64, len(rs))
	for i, r := range rs {
		for e, err := range c.ScanRaw(testenv.Context(t), r.Start, r.End) {
			if err != nil {
				t.Fatal(err)
			}
			out[i] += int64(len(e.Key) + len(e.Value))
		}
	}
	return out
}

// Shards cut by bytes hold about equal bytes (the largest within 5 % of the
// mean, measured by scanning each range), where the counter-estimated key
// ranges are far apart; both partition the key space.
func TestByteBalancedShards(t *testing.T) {
	ctx := testenv.Context(t)
	url := fileURL(t, "c")
	seeded(t, url, 20000)
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := shard.Measure(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Keys < 20000 || p.Bytes == 0 {
		t.Fatalf("profile: %d keys, %d bytes", p.Keys, p.Bytes)
	}
	const n = 8
	byKeys, err := shard.Plan(ctx, c, n)
	if err != nil {
		t.Fatal(err)
	}
	byBytes, err := shard.PlanByBytes(ctx, c, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := shard.CheckRanges(byBytes); err != nil {
		t.Fatal(err)
	}
	keysSizes, bytesSizes := exactBytes(t, c, byKeys), exactBytes(t, c, byBytes)
	var total int64
	for _, s := range bytesSizes {
		total += s
	}
	if total != p.Bytes {
		t.Fatalf("the ranges hold %d bytes, the catalog %d", total, p.Bytes)
	}
	before, after := shard.Imbalance(keysSizes), shard.Imbalance(bytesSizes)
	t.Logf("largest shard over the mean, %d shards of %d keys, %d bytes: key ranges %.2f (%v), by bytes %.3f (%v)", n, p.Keys, p.Bytes, before, keysSizes, after, bytesSizes)
	if after > 1.05 {
		t.Fatalf("byte-balanced shards: largest %.3f × the mean, want ≤ 1.05: %v", after, bytesSizes)
	}
	// The profile's estimate of each range is what a scan finds, within
	// its sampling step.
	for i, est := range p.RangeBytes(byBytes) {
		if d := est - bytesSizes[i]; d > p.Bytes/500 || -d > p.Bytes/500 {
			t.Errorf("range %d: estimated %d bytes, holds %d", i, est, bytesSizes[i])
		}
	}
	// More shards than keys still partitions, with no empty range.
	small := fileURL(t, "small")
	seeded(t, small, 10)
	sc, err := catalog.Open(ctx, small, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if _, err := shard.PlanByBytes(ctx, sc, 200, nil); err != nil {
		t.Fatalf("200 shards of a tiny catalog: %v", err)
	}
}

// Measure scans in parts at once, and counts every key and byte exactly
// once: its totals, overall and by tag, are a plain scan's.
func TestMeasureCountsEveryKeyOnce(t *testing.T) {
	ctx := testenv.Context(t)
	url := fileURL(t, "c")
	seeded(t, url, 5000)
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var prog shard.Progress
	p, err := shard.Measure(ctx, c, &prog)
	if err != nil {
		t.Fatal(err)
	}
	var keys uint64
	var size int64
	perTag := map[byte]int64{}
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		keys++
		size += int64(len(e.Key) + len(e.Value))
		perTag[e.Key[0]] += int64(len(e.Key) + len(e.Value))
	}
	if p.Keys != keys || p.Bytes != size || len(p.PerTag) != len(perTag) || prog.Records.Load() != keys {
		t.Fatalf("profile: %d keys (progress %d), %d bytes, %d tags; scan: %d, %d, %d", p.Keys, prog.Records.Load(), p.Bytes, len(p.PerTag), keys, size, len(perTag))
	}
	for tag, b := range p.PerTag {
		if perTag[byte(tag)] != b.Bytes {
			t.Errorf("tag %s: %d bytes, scan %d", tag, b.Bytes, perTag[byte(tag)])
		}
	}
}
