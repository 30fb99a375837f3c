package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// ImportOutput says whether Import has every shard in; the state machine
// calls Import again until Done.
type ImportOutput struct {
	runstate.Migration
	Done        bool `json:"done"`
	ShardsDone  int  `json:"shards_done"`
	ShardsTotal int  `json:"shards_total"`
	// Rows is how many rows this call wrote (the dashboard's rows/s).
	Rows uint64 `json:"rows"`
}

func (o ImportOutput) StepRows() uint64 { return o.Rows }

// Import is the one writer of the new catalog. It imports shards until all
// are in or its deadline nears, keeping its progress in the target itself
// and its last state in staging.
func Import(ctx context.Context, env runstate.Env, m runstate.Migration) (ImportOutput, error) {
	// Rows come from the shard counter, which the CLI's display shares
	// when it gives one.
	prog := env.Progress.Import
	if prog == nil {
		prog = new(shard.Progress)
	}
	before := prog.Records.Load() // a shared counter spans the Import loop's calls
	opts := shard.ImportOptions{Format: m.To, Store: env.SlateDB, NoFinalize: true, Progress: prog,
		// The lock is confirmed between shards, not only at the call's
		// start: a run replaced meanwhile stops within one shard.
		Continue: func(ctx context.Context) error { return lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID) }}
	if dl, ok := ctx.Deadline(); ok {
		margin := env.ImportMargin
		if margin == 0 {
			margin = time.Minute
		}
		opts.StopAfter = dl.Add(-margin)
	}
	st := env.StagingOf(m.MigrationID)
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return ImportOutput{Migration: m}, err
	}
	if m.RollbackOf != "" {
		// A rollback imports nothing: its target is a finished catalog.
		return ImportOutput{Migration: m, Done: true}, nil
	}
	if err := claimTarget(ctx, env, m); err != nil {
		return ImportOutput{Migration: m}, err
	}
	res, err := shard.Import(ctx, env.Store, st.ImportDir(m.From, m.To), m.Target, opts)
	if err != nil {
		return ImportOutput{Migration: m}, err
	}
	out := ImportOutput{Migration: m, Done: res.ShardsDone == res.ShardsTotal, ShardsDone: res.ShardsDone, ShardsTotal: res.ShardsTotal, Rows: prog.Records.Load() - before}
	if err := env.Store.PutJSON(ctx, st.ImportResult(), out); err != nil {
		return out, err
	}
	return out, nil
}

// claimTarget records in staging that this migration creates the target,
// before anything is written there, so that Abort deletes only a catalog this
// migration made. A target location that already holds objects when no claim
// exists is someone else's: TargetNotEmpty, and Abort leaves it alone (and
// withdraws the claim Check made beside the pointer).
func claimTarget(ctx context.Context, env runstate.Env, m runstate.Migration) error {
	owned, err := ownsTarget(ctx, env, m)
	if err != nil {
		return fmt.Errorf("workflow: read target claim: %w", err)
	}
	if owned {
		return nil
	}
	if err := targetFree(ctx, env, m); err != nil {
		return err
	}
	return env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).TargetClaim(), map[string]string{"target": m.Target, "migration_id": m.MigrationID})
}

// ownsTarget reports whether this migration claimed its target.
func ownsTarget(ctx context.Context, env runstate.Env, m runstate.Migration) (bool, error) {
	_, _, err := env.Store.Get(ctx, env.StagingOf(m.MigrationID).TargetClaim())
	if errors.Is(err, blob.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Finalize writes the counter and system keys and the format version in one
// batch: only now does the new catalog open.
func Finalize(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	if m.RollbackOf != "" {
		return m, nil // the rounds wrote a finished catalog's keys in place
	}
	return m, shard.Finalize(ctx, m.Target, m.To, env.SlateDB)
}
