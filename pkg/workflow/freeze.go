package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Freeze opens the source as its SlateDB writer, which fences the running
// RockLake writer, records writer-epoch and next_snapshot_id, takes a
// checkpoint through that writer and writes the shard plan to staging.
func Freeze(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	if m.DryRun {
		return freezeDryRun(ctx, env, m)
	}
	// The servers' supervisors switch to reader mode before the fence; the
	// lock is read again after it: a run aborted and replaced meanwhile
	// must not fence the source the next run is using.
	if err := runstate.AwaitAcknowledgements(ctx, env, m); err != nil {
		return m, err
	}
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	// Passive: fencing and the checkpoint are all Freeze may change in the
	// source; no compaction or garbage collection of RockLake's catalog.
	so := env.SlateDB
	so.Passive = true
	w, err := catalog.OpenWriter(ctx, m.Source, catalog.Options{Expect: m.From, Store: so})
	if err != nil {
		return m, fmt.Errorf("workflow: freeze %s: %w", m.Source, err)
	}
	defer w.Close()
	epoch, nextSnap, err := w.Catalog.Marks(ctx)
	if err != nil {
		return m, err
	}
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: 7 * 24 * time.Hour, Name: layout.FreezeCheckpoint(m.MigrationID)})
	if err != nil {
		return m, err
	}
	// Reads fail from the fence until the servers read the replica: it is
	// made first.
	m.Replica = runstate.MakeReplica(ctx, env, m, cp.ID)
	ranges, balance, err := planShards(ctx, w.Catalog, blockSource{m.Source, cp.ID, so}, m.Shards, ByteScanBudget)
	if err != nil {
		return m, err
	}
	if err := w.CloseContext(ctx); err != nil {
		return m, fmt.Errorf("workflow: freeze %s: close: %w", m.Source, err)
	}
	m.Checkpoint = cp.ID
	return m, writePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
}

// freezeDryRun is a dry run's Freeze: it fences nothing and writes nothing
// to the source, not even a checkpoint. It reads the source as it is (the
// export steps then read its latest state, WAL included, each once) and
// says in the migration what a real run would fence.
func freezeDryRun(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.From, Store: env.SlateDB})
	if err != nil {
		return m, fmt.Errorf("workflow: freeze (dry run) %s: %w", m.Source, err)
	}
	defer c.Close()
	epoch, nextSnap, err := c.Marks(ctx)
	if err != nil {
		return m, err
	}
	ranges, balance, err := planShards(ctx, c, blockSource{url: m.Source, opts: env.SlateDB}, m.Shards, ByteScanBudget)
	if err != nil {
		return m, err
	}
	m.Checkpoint = ""
	m.WouldFence = fmt.Sprintf("a real run would fence RockLake's writer of %s (writer-epoch %d, next_snapshot_id %d) and checkpoint it", m.Source, epoch, nextSnap)
	if ep, err := c.GetRaw(ctx, format.SystemKey(format.SystemEndpoint)); err == nil && len(ep) > 0 {
		m.WouldFence += fmt.Sprintf("; its writer published endpoint %q", ep)
	}
	return m, writePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
}

// ByteScanBudget bounds Freeze's byte-balancing scan (about 34 million keys
// at docs/performance-history.md's 286 000 keys/s on S3, one part at a
// time), and never more than half the time the step has left: the source is
// frozen meanwhile, and a Lambda has 15 minutes. Past it, the shards are cut
// by the counters' estimate.
const ByteScanBudget = 2 * time.Minute

// errScanPastBudget: the byte scan's rate so far, over the counters'
// estimate of the keys, says it would not end within its budget.
var errScanPastBudget = errors.New("the byte scan would run past its budget")

// blockSource is where planShards reads SST block indexes: the catalog's
// URL, the checkpoint its ranges are exported from ("": the latest state,
// a dry run's) and the engine's options.
type blockSource struct {
	url, checkpoint string
	opts            slatedb.Options
}

// planShards cuts n ranges balanced by bytes: from the SSTs' block indexes
// of src (a read of each SST's index, whatever the row count), else from a
// scan of c within budget, else by the counters' estimate; balance says
// which and why. A scan whose rate says early that it would not end in
// time is stopped then (watchScan), not at the end of the budget.
func planShards(ctx context.Context, c *catalog.Catalog, src blockSource, n int, budget time.Duration) (ranges []shard.Range, balance string, err error) {
	ranges, err = shard.PlanByBlocks(ctx, src.url, src.checkpoint, src.opts, n)
	if err == nil {
		return ranges, "blocks", nil
	}
	if ctx.Err() != nil {
		return nil, "", err
	}
	// Any failure of the block profile (unusable, or the engine could not
	// read it) leaves the scan, which needs nothing the profile does.
	why := "blocks unusable: " + strings.TrimPrefix(err.Error(), shard.ErrBlocksUnusable.Error()+": ")
	ranges, balance, err = planByScan(ctx, c, n, budget)
	if err != nil {
		return nil, "", err
	}
	if balance == "bytes" {
		return ranges, "bytes (" + why + ")", nil
	}
	return ranges, strings.TrimSuffix(balance, ")") + "; " + why + ")", nil
}

// planByScan cuts n ranges balanced by bytes, from a scan of c within
// budget, else by the counters' estimate; balance says which.
func planByScan(ctx context.Context, c *catalog.Catalog, n int, budget time.Duration) (ranges []shard.Range, balance string, err error) {
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	tctx, cancelT := context.WithTimeout(ctx, budget)
	defer cancelT()
	sctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	var prog shard.Progress
	start := time.Now()
	if est, err := shard.EstimateKeys(ctx, c); err == nil && est > 0 {
		go watchScan(sctx, cancel, &prog, est, budget, start)
	}
	ranges, err = shard.PlanByBytes(sctx, c, n, &prog)
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
	ranges, err = shard.Plan(ctx, c, n)
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
func watchScan(ctx context.Context, cancel context.CancelCauseFunc, prog *shard.Progress, estimate uint64, budget time.Duration, start time.Time) {
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

// writePlan records the source's state and the shard plan in staging.
func writePlan(ctx context.Context, env runstate.Env, m runstate.Migration, epoch, nextSnap uint64, ranges []shard.Range, balance string) error {
	state, err := engineState(ctx, env, m.Source)
	if err != nil {
		return err
	}
	plan := runstate.Plan{
		MigrationID: m.MigrationID, Pointer: m.Pointer, PointerETag: m.PointerETag,
		Source: m.Source, Target: m.Target, From: m.From, To: m.To, Checkpoint: m.Checkpoint,
		WriterEpoch: epoch, NextSnapshotID: nextSnap, EngineState: state, UnknownTags: m.UnknownTags, Ranges: ranges, Balance: balance, Replica: m.Replica,
	}
	return env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).Plan(), plan)
}

// engineState names the newest SlateDB manifest and WAL objects of the
// catalog at url (inplace.EngineState). Any SlateDB writer that commits to
// it after Freeze opens first, and opening writes a manifest (it fences
// Freeze's writer), so a write that moves none of RockLake's own marks
// still changes this.
func engineState(ctx context.Context, env runstate.Env, url string) (string, error) {
	s, err := inplace.EngineState(ctx, env.Store, url)
	if err != nil {
		return "", fmt.Errorf("workflow: %w", err)
	}
	return s, nil
}

func ReadPlan(ctx context.Context, env runstate.Env, id string) (runstate.Plan, error) {
	var p runstate.Plan
	err := env.Store.GetJSON(ctx, env.StagingOf(id).Plan(), &p)
	return p, err
}
