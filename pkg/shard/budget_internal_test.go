package shard

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// Freeze cuts shards from the SSTs' block indexes; a profile too coarse for
// the shards (a small catalog) falls back to the byte scan, and a scan that
// would run past its budget (here none at all) to the counters' key ranges,
// which still partition the key space; balance says which and why.
func TestPlanShardsFallsBackWithinItsBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := "file://" + t.TempDir() + "/c"
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 20000, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	src := BlockSource{URL: url}
	rs, balance, err := PlanBalanced(ctx, c, src, 4, ByteScanBudget)
	if err != nil || balance != "blocks" || len(rs) != 4 {
		t.Fatalf("by blocks: %d ranges, %q, %v", len(rs), balance, err)
	}
	rs, balance, err = PlanBalanced(ctx, c, src, 1000, ByteScanBudget)
	if err != nil || !strings.HasPrefix(balance, "bytes (blocks unusable: ") || !strings.Contains(balance, "a shard") || len(rs) != 1000 {
		t.Fatalf("too few blocks a shard: %d ranges, %q, %v", len(rs), balance, err)
	}
	rs, balance, err = PlanBalanced(ctx, c, src, 1000, time.Nanosecond)
	if err != nil || !strings.HasPrefix(balance, "key ranges") || !strings.Contains(balance, "blocks unusable") || CheckRanges(rs) != nil || len(rs) != 1000 {
		t.Fatalf("past the budget: %d ranges, %q, %v", len(rs), balance, err)
	}
	// The engine cannot profile (no checkpoint of that id): the scan.
	bad := BlockSource{URL: url, Checkpoint: "6f1d7c44-0000-4000-8000-000000000000"}
	if _, balance, err = PlanBalanced(ctx, c, bad, 4, ByteScanBudget); err != nil || !strings.HasPrefix(balance, "bytes (blocks unusable: ") {
		t.Fatalf("no such checkpoint: %q, %v", balance, err)
	}
}

// The scan's watch stops a scan whose rate so far says it would not end
// within its budget, as soon as it can tell, and leaves one that will.
func TestWatchScanStopsAScanThatWouldNotEndInTime(t *testing.T) {
	for _, tc := range []struct {
		name     string
		estimate uint64
		stopped  bool
	}{
		{"too slow", 1 << 40, true}, // 1 000 keys in 0.2 s: 35 years to go
		{"in time", 1500, false},    // 500 keys to go at 5 000 keys/s
	} {
		ctx, cancel := context.WithCancelCause(context.Background())
		var prog Progress
		prog.Records.Store(1000)
		done := make(chan struct{})
		go func() {
			defer close(done)
			watchScan(ctx, cancel, &prog, tc.estimate, 2*time.Second, time.Now().Add(-200*time.Millisecond))
		}()
		select {
		case <-ctx.Done():
		case <-time.After(4 * projectEvery):
		}
		stopped := errors.Is(context.Cause(ctx), errScanPastBudget)
		cancel(nil)
		<-done
		if stopped != tc.stopped {
			t.Errorf("%s: stopped %v, want %v", tc.name, stopped, tc.stopped)
		}
	}
}
