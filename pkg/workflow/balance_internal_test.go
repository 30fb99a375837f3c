package workflow

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// Freeze cuts shards by bytes; a scan that would run past its budget (here
// none at all) falls back to the counters' key ranges, which still
// partition the key space, and says so.
func TestPlanShardsFallsBackWithinItsBudget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	url := "file://" + t.TempDir() + "/c"
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 2000, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rs, balance, err := planShards(ctx, c, 4, byteScanBudget)
	if err != nil || balance != "bytes" || len(rs) != 4 {
		t.Fatalf("within the budget: %d ranges, %q, %v", len(rs), balance, err)
	}
	rs, balance, err = planShards(ctx, c, 4, time.Nanosecond)
	if err != nil || !strings.HasPrefix(balance, "key ranges") || shard.CheckRanges(rs) != nil || len(rs) != 4 {
		t.Fatalf("past the budget: %d ranges, %q, %v", len(rs), balance, err)
	}
}
