package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
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
	if err := runstate.AwaitFence(ctx, env, m); err != nil {
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
	ranges, balance, err := shard.PlanBalanced(ctx, w.Catalog, shard.BlockSource{URL: m.Source, Checkpoint: cp.ID, Options: so}, m.Shards, shard.ByteScanBudget)
	if err != nil {
		return m, err
	}
	if err := w.CloseContext(ctx); err != nil {
		return m, fmt.Errorf("workflow: freeze %s: close: %w", m.Source, err)
	}
	m.Checkpoint = cp.ID
	return m, runstate.WritePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
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
	ranges, balance, err := shard.PlanBalanced(ctx, c, shard.BlockSource{URL: m.Source, Options: env.SlateDB}, m.Shards, shard.ByteScanBudget)
	if err != nil {
		return m, err
	}
	m.Checkpoint = ""
	m.WouldFence = fmt.Sprintf("a real run would fence RockLake's writer of %s (writer-epoch %d, next_snapshot_id %d) and checkpoint it", m.Source, epoch, nextSnap)
	if ep, err := c.GetRaw(ctx, format.SystemKey(format.SystemEndpoint)); err == nil && len(ep) > 0 {
		m.WouldFence += fmt.Sprintf("; its writer published endpoint %q", ep)
	}
	return m, runstate.WritePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
}
