package workflow

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/statemachine"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// AbortInput is the migration and the error that stopped it (Catch output).
type AbortInput struct {
	Migration runstate.Migration `json:"migration"`
	Error     map[string]any     `json:"error,omitempty"`
}

// AbortOutput says what Abort removed.
type AbortOutput struct {
	runstate.Migration
	TargetObjects  int `json:"target_objects_deleted"`
	StagingObjects int `json:"staging_objects_deleted"`
	// RevertedKeys: a rollback's target keys put back as they were at the
	// flip.
	RevertedKeys int `json:"reverted_keys,omitempty"`
	// HistoryError: the run's record could not be finished (the cleanup
	// stands).
	HistoryError string `json:"history_error,omitempty"`
}

// Abort removes the new catalog, the staging objects and the checkpoint. It
// never touches the source's data or the pointer, refuses to delete a catalog
// the pointer names, and deletes the target only if this migration claimed it
// (a location someone else filled stays as it was).
func Abort(ctx context.Context, env runstate.Env, in AbortInput) (out AbortOutput, err error) {
	start := time.Now()
	out = AbortOutput{Migration: in.Migration}
	m := in.Migration
	// Fail closed: if the pointer cannot be read, the target may be the
	// live catalog (a Flip whose answer was lost), so nothing is deleted and
	// the state machine's Retry tries again.
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return out, fmt.Errorf("%w: cannot read the pointer %s, so it cannot tell whether %s is live: %w", ErrAbortUndecided, m.Pointer, m.Target, err)
	}
	if cur.Catalog == m.Target {
		// The migration flipped: it is over, and its lock with it.
		if err := lock.Release(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
			return out, err
		}
		return out, fmt.Errorf("%w: the pointer names %s", runstate.ErrAbortAfterFlip, m.Target)
	}
	if err := runstate.Decide(ctx, env, m, layout.DecisionAbort); err != nil {
		if errors.Is(err, runstate.ErrAbortAfterFlip) {
			// Its Flip decided: the run is over, and its lock with it, so
			// the next migration need not wait out the lease. The target
			// stays: that Flip's write may have landed, or land yet (on
			// Check's ETag, so never over a later migration's flip).
			if lerr := lock.Release(ctx, env.Store, m.Pointer, m.MigrationID); lerr != nil {
				err = fmt.Errorf("%w; freeing the lock failed: %w", err, lerr)
			}
		}
		return out, err
	}
	// Decided: the run ends here, whatever the cleanup does. What staging
	// says of the run is read before the cleanup deletes it.
	stats, notes := runstate.CollectStats(ctx, env, m)
	defer func() {
		stats.Seconds[statemachine.StepAbort] = time.Since(start).Seconds()
		if err != nil {
			notes = append(notes, "the cleanup failed: "+err.Error())
		}
		out.HistoryError = runstate.FinishRecord(ctx, env, m, stats, notes, func(r *history.Record) { abortOutcome(r, in) })
	}()
	if m.RollbackOf != "" {
		// Only once Snapshot proved the target reads as its pin (its plan
		// written) can anything in it be this run's: before, a change
		// there is someone else's and stays.
		if _, err := runstate.ReadPlan(ctx, env, m.MigrationID); err == nil {
			if out.RevertedKeys, err = revertTarget(ctx, env, m); err != nil {
				return out, err // the lock stays this run's: abort again
			}
		} else if !errors.Is(err, blob.ErrNotFound) {
			return out, fmt.Errorf("%w: whether rollback %s wrote to %s cannot be told: %w", ErrAbortUndecided, m.MigrationID, m.Target, err)
		}
	} else if err := runstate.DropFlipPin(ctx, env, m.Source, m.MigrationID); err != nil {
		return out, fmt.Errorf("workflow: abort: %w", err)
	}
	owned, err := ownsTarget(ctx, env, m)
	if err != nil {
		return out, fmt.Errorf("workflow: abort: %w", err)
	}
	if m.Target != "" && owned {
		n, err := runstate.DeleteTarget(ctx, env, m.Target)
		out.TargetObjects = n
		if err != nil {
			return out, fmt.Errorf("workflow: abort: %w", err)
		}
	}
	// The target is gone, or was never this migration's (Import did not
	// claim it: someone else's, or nothing written): the claim beside the
	// pointer must not outlive it.
	if m.Target != "" && !m.InPlace {
		if err := claim.Delete(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
			return out, fmt.Errorf("workflow: abort: %w", err)
		}
	}
	cp := m.Checkpoint
	if cp == "" { // Freeze wrote the plan but did not return
		if p, err := runstate.ReadPlan(ctx, env, m.MigrationID); err == nil {
			cp = p.Checkpoint
		}
	}
	if err := runstate.DeleteCheckpoints(ctx, env, m, cp); err != nil {
		return out, fmt.Errorf("workflow: abort: %w", err)
	}
	n, err := env.Store.DeletePrefix(ctx, env.StagingOf(m.MigrationID).Prefix())
	if err != nil {
		return out, fmt.Errorf("workflow: abort: delete staging: %w", err)
	}
	out.StagingObjects = n
	if err := lock.Release(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return out, err
	}
	return out, runstate.DropReplica(ctx, env, m)
}

// abortOutcome is how a run Abort ended is recorded: the error that sent it
// to Abort (the Catch's), else a dry run's cleanup, else an operator's abort.
func abortOutcome(r *history.Record, in AbortInput) {
	name, _ := in.Error["Error"].(string)
	cause, _ := in.Error["Cause"].(string)
	switch {
	case name != "":
		r.Outcome, r.ErrorName, r.Error = history.Failed, name, cause
	case in.Migration.DryRun:
		r.Outcome, r.State = history.DryRunOK, statemachine.StepVerify
	default:
		r.Outcome = history.Aborted
	}
}
