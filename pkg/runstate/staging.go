package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Plan is what Freeze decides and every later step reads from staging.
type Plan struct {
	Run
	Checkpoint     string `json:"checkpoint"`
	WriterEpoch    uint64 `json:"writer_epoch"`
	NextSnapshotID uint64 `json:"next_snapshot_id"`
	// EngineState is the source's newest SlateDB manifest and WAL objects
	// once Freeze's writer closed (see EngineState).
	EngineState string        `json:"engine_state"`
	UnknownTags string        `json:"unknown_tags"`
	Ranges      []shard.Range `json:"ranges"`
	// Balance says how the ranges were cut: "blocks" (the SSTs' block
	// indexes), else "bytes (...)" (a byte scan) or by the counters'
	// estimate when the scan would take too long, with why (shard.PlanBalanced).
	Balance string `json:"balance,omitempty"`
	// Replica is the read replica Freeze (or Fence) made ("" when none).
	Replica string `json:"replica,omitempty"`
	// FenceView is an online run's view of the fenced source (Checkpoint
	// is its snapshot's), taken at FencedAt: the marks and engine state
	// above are the fenced source's from then on.
	FenceView slatedb.View `json:"fence_view,omitzero"`
	FencedAt  time.Time    `json:"fenced_at,omitzero"`
	// FenceBacklog is the WAL backlog Fence's writer replayed, fetched
	// ahead of the freeze.
	FenceBacklog *history.Backlog `json:"fence_backlog,omitempty"`
	// Start: the first catch-up round starts here, not at Checkpoint with
	// the shards' digest (a rollback: the source's pin at the flip and
	// the target's digest); RollbackOf and FlipPoint say which flip it
	// rolls back, and its pins.
	Start      *RoundStart        `json:"start,omitempty"`
	RollbackOf string             `json:"rollback_of,omitempty"`
	FlipPoint  *pointer.FlipPoint `json:"flip_point,omitempty"`
}

// RoundStart is where a run's first catch-up round starts when it is not
// the snapshot's checkpoint and the shards' digest: a rollback's, the
// source's pin at the flip and the target's digest.
type RoundStart struct {
	View   slatedb.View  `json:"view"`
	Digest ndjson.Digest `json:"digest"`
}

// ShardResult is what a shard's export or transform leaves in staging: its
// records and digest, and the unknown tags its transform carried or
// dropped (Verify and the run's record read them).
type ShardResult struct {
	Records uint64                `json:"records"`
	Digest  ndjson.Digest         `json:"digest"`
	Carried map[format.Tag]uint64 `json:"carried,omitempty"`
	Dropped map[format.Tag]uint64 `json:"dropped,omitempty"`
}

// WritePlan records the source's state and the shard plan in staging.
func WritePlan(ctx context.Context, env Env, m Migration, epoch, nextSnap uint64, ranges []shard.Range, balance string) error {
	state, err := EngineState(ctx, env, m.Source)
	if err != nil {
		return err
	}
	plan := Plan{
		Run: m.Run, Checkpoint: m.Checkpoint,
		WriterEpoch: epoch, NextSnapshotID: nextSnap, EngineState: state, UnknownTags: m.UnknownTags, Ranges: ranges, Balance: balance, Replica: m.Replica,
	}
	return env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).Plan(), plan)
}

// EngineState names the newest SlateDB manifest and WAL objects of the
// catalog at url (inplace.EngineState). Any SlateDB writer that commits to
// it after Freeze opens first, and opening writes a manifest (it fences
// Freeze's writer), so a write that moves none of RockLake's own marks
// still changes this.
func EngineState(ctx context.Context, env Env, url string) (string, error) {
	s, err := inplace.EngineState(ctx, env.Store, url)
	if err != nil {
		return "", fmt.Errorf("runstate: %w", err)
	}
	return s, nil
}

// ReadPlan reads run id's plan from its staging.
func ReadPlan(ctx context.Context, env Env, id string) (Plan, error) {
	var p Plan
	err := env.Store.GetJSON(ctx, env.StagingOf(id).Plan(), &p)
	return p, err
}

// stagingOwner is what Staging.Owner holds.
type stagingOwner struct {
	Pointer     string `json:"pointer"`
	MigrationID string `json:"migration_id"`
}

// ownStaging writes the staging's owner with If-None-Match; a staging
// another pointer's run owns is ErrStagingTaken.
func ownStaging(ctx context.Context, env Env, st layout.Staging, m Migration) error {
	own, err := json.Marshal(stagingOwner{Pointer: m.Pointer, MigrationID: m.MigrationID})
	if err != nil {
		return err
	}
	_, err = env.Store.PutIfAbsent(ctx, st.Owner(), own)
	if !errors.Is(err, blob.ErrPreconditionFailed) {
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrStagingUnusable, env.Staging, err)
		}
		return nil
	}
	var had stagingOwner
	if gerr := env.Store.GetJSON(ctx, st.Owner(), &had); gerr != nil {
		return fmt.Errorf("%w: %s: %w", ErrStagingTaken, st.Prefix(), gerr)
	}
	if had.Pointer != m.Pointer {
		return fmt.Errorf("%w: %s is the staging of migration %s of pointer %s; give this run another --migration-id; nothing was touched", ErrStagingTaken, st.Prefix(), had.MigrationID, had.Pointer)
	}
	return nil
}

// ProbeStaging makes the migration's staging this pointer's (Owner, an
// If-None-Match write; a retried Check finds its own) and writes and
// deletes an object there.
func ProbeStaging(ctx context.Context, env Env, m Migration) error {
	if env.Staging == "" {
		return fmt.Errorf("%w: no staging location configured", ErrStagingUnusable)
	}
	st := env.StagingOf(m.MigrationID)
	// Strategy A stages nothing but the probe: no owner.
	if !m.InPlace {
		if err := ownStaging(ctx, env, st, m); err != nil {
			return err
		}
	}
	url := st.Probe()
	if _, err := env.Store.Put(ctx, url, []byte(m.MigrationID)); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStagingUnusable, env.Staging, err)
	}
	if err := env.Store.Delete(ctx, url); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStagingUnusable, env.Staging, err)
	}
	return nil
}

// Round is catch-up round n's record in staging: written with its views
// before the round writes to the target (a retry reruns the same views),
// and again with what it found once done.
type Round struct {
	Round int          `json:"round"`
	From  slatedb.View `json:"from"`
	To    slatedb.View `json:"to"`
	// Last: the round after the fence, to the fenced source.
	Last    bool                `json:"last,omitempty"`
	Done    bool                `json:"done"`
	Result  shard.CatchUpResult `json:"result"`
	Seconds float64             `json:"seconds"`
}

// ReadRound reads round n's record; it must be done.
func ReadRound(ctx context.Context, env Env, m Migration, n int) (Round, error) {
	var r Round
	if err := env.Store.GetJSON(ctx, env.StagingOf(m.MigrationID).Round(n), &r); err != nil {
		return r, err
	}
	if !r.Done {
		return r, fmt.Errorf("%w: %s: catch-up round %d did not finish", shard.ErrMismatch, m.Target, n)
	}
	return r, nil
}
