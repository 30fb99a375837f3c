package shard

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Freeze's shard plan: ranges balanced by bytes, from the SSTs' block
// indexes, else from a byte scan within a budget, else from the counters.

// ByteScanBudget bounds Freeze's byte-balancing scan (about 34 million keys
// at docs/performance-history.md's 286 000 keys/s on S3, one part at a
// time), and never more than half the time the step has left: the source is
// frozen meanwhile, and a Lambda has 15 minutes. Past it, the shards are cut
// by the counters' estimate.
const ByteScanBudget = 2 * time.Minute

// errScanPastBudget: the byte scan's rate so far, over the counters'
// estimate of the keys, says it would not end within its budget.
var errScanPastBudget = errors.New("the byte scan would run past its budget")

// BlockSource is where PlanBalanced reads SST block indexes: the catalog's
// URL, the checkpoint its ranges are exported from ("": the latest state,
// a dry run's) and the engine's options.
type BlockSource struct {
	URL, Checkpoint string
	Options         slatedb.Options
}

// PlanBalanced cuts n ranges balanced by bytes: from the SSTs' block indexes
// of src (a read of each SST's index, whatever the row count), else from a
// scan of c within budget, else by the counters' estimate; balance says
// which and why. A scan whose rate says early that it would not end in
// time is stopped then (watchScan), not at the end of the budget.
func PlanBalanced(ctx context.Context, c *catalog.Catalog, src BlockSource, n int, budget time.Duration) (ranges []Range, balance string, err error) {
	ranges, err = PlanByBlocks(ctx, src.URL, src.Checkpoint, src.Options, n)
	if err == nil {
		return ranges, "blocks", nil
	}
	if ctx.Err() != nil {
		return nil, "", err
	}
	// Any failure of the block profile (unusable, or the engine could not
	// read it) leaves the scan, which needs nothing the profile does.
	why := "blocks unusable: " + strings.TrimPrefix(err.Error(), ErrBlocksUnusable.Error()+": ")
	ranges, balance, err = PlanByScan(ctx, c, n, budget)
	if err != nil {
		return nil, "", err
	}
	if balance == "bytes" {
		return ranges, "bytes (" + why + ")", nil
	}
	return ranges, strings.TrimSuffix(balance, ")") + "; " + why + ")", nil
}

// PlanByScan cuts n ranges balanced by bytes, from a scan of c within
// budget, else by the counters' estimate; balance says which.
func PlanByScan(ctx context.Context, c *catalog.Catalog, n int, budget time.Duration) (ranges []Range, balance string, err error) {
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	tctx, cancelT := context.WithTimeout(ctx, budget)
	defer cancelT()
	sctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	var prog Progress
	start := time.Now()
	if est, err := EstimateKeys(ctx, c); err == nil && est > 0 {
		go watchScan(sctx, cancel, &prog, est, budget, start)
	}
	ranges, err = PlanByBytes(sctx, c, n, &prog)
	if err == nil {
		return ranges, "bytes", nil
	}
	if ctx.Err() != nil || sctx.Err() == nil {
		return nil, "", err
	}
	why := fmt.Sprintf("the byte scan ran past its %s budget", budget.Round(time.Second))
	if errors.Is(context.Cause(sctx), errScanPastBudget) {
		why = fmt.Sprintf("the byte scan, at %d keys in %s, would have run past its %s budget", prog.Records.Load(), time.Since(start).Round(time.Second), budget.Round(time.Second))
	}
	ranges, err = Plan(ctx, c, n)
	return ranges, "key ranges estimated from the counters (" + why + ")", err
}

// Projection of the byte scan: after projectAfter of its budget, every
// projectEvery, the keys still to scan (from the counters' estimate, which
// can be off either way: hence the margin) at the rate so far must fit in
// what is left of the budget.
const (
	projectAfter  = 0.05
	projectEvery  = 250 * time.Millisecond
	projectMargin = 1.25
)

// watchScan stops the scan counted by prog (cancel, errScanPastBudget) as
// soon as its rate says it would not end within budget: the source stays
// frozen while Freeze scans, so an early fallback is time saved.
func watchScan(ctx context.Context, cancel context.CancelCauseFunc, prog *Progress, estimate uint64, budget time.Duration, start time.Time) {
	t := time.NewTicker(projectEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			elapsed := now.Sub(start)
			done := prog.Records.Load()
			if elapsed < time.Duration(projectAfter*float64(budget)) || done == 0 || done >= estimate {
				continue
			}
			rate := float64(done) / elapsed.Seconds()
			left := time.Duration(float64(estimate-done) / rate * float64(time.Second))
			if float64(elapsed+left) > projectMargin*float64(budget) {
				cancel(errScanPastBudget)
				return
			}
		}
	}
}
