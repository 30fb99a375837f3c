package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/statemachine"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// FlipOutput reports the new pointer version.
type FlipOutput struct {
	runstate.Migration
	PointerVersionID string `json:"pointer_version_id"`
	// CleanupError: the source checkpoint could not be deleted. The
	// migration has succeeded all the same (the drift check reports the
	// leftover), so it is not an error of the step.
	CleanupError string `json:"cleanup_error,omitempty"`
	// HistoryError: the run's record could not be finished. The flip
	// stands (the pointer is the outcome, and its versions name the
	// migration); see record.go.
	HistoryError string `json:"history_error,omitempty"`
	// Online: an online run's rounds and write freeze.
	Online *history.Online `json:"online,omitempty"`
	// CarriedKeys: a rollback's count of the keys it carried back.
	CarriedKeys int `json:"carried_keys,omitempty"`
}

// Flip moves the pointer to the new catalog. Every precondition is checked
// before the decision to flip is taken, so that a Flip that refuses leaves
// a run Abort ends (and the next migration can start at once): the lock is
// still this run's, nobody moved the pointer since Check, the source took
// no write since Freeze, and the target passes its startup check right
// before the decision and the pointer's write (a target removed since
// Verify is never pointed at). A pointer moved between the check and the
// write refuses the write, and Flip withdraws its decision (withdrawFlip).
func Flip(ctx context.Context, env runstate.Env, m runstate.Migration) (FlipOutput, error) {
	start := time.Now()
	out := FlipOutput{Migration: m}
	p, err := runstate.ReadPlan(ctx, env, m.MigrationID)
	if err != nil {
		return out, err
	}
	decided, err := runstate.DecisionOf(ctx, env, m)
	if err != nil {
		return out, err
	}
	if decided == layout.DecisionAbort {
		return out, fmt.Errorf("%w: migration %s decided to abort first: the pointer is left as it is", runstate.ErrDecided, m.MigrationID)
	}
	cur, ref, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return out, err
	}
	// A retry of a Flip whose write landed (its answer lost) has nothing
	// left to check or write: the checkpoint it deleted moved the source's
	// engine state, and the lock may be free already.
	if decided != layout.DecisionFlip || cur.MigrationID != m.MigrationID || cur.Catalog != m.Target {
		if ref, err = flip(ctx, env, m, p, ref); err != nil {
			return out, err
		}
	}
	out.PointerVersionID = ref.VersionID
	if m.CopiesOnline() || m.OfflineBecause != "" {
		out.Online = runstate.OnlineReport(ctx, env, m, p)
	}
	var cleanup []string
	// The target was live: its claim keeps that beyond the pointer's
	// history and staging's lifecycle, so no cleanup ever takes it for a
	// leftover.
	if _, err := claim.Update(ctx, env.Store, m.Pointer, m.MigrationID, func(c *claim.Claim) {
		if c.Named == nil {
			c.Named = &claim.Event{By: m.MigrationID, At: time.Now().UTC(), PointerVersionID: ref.VersionID}
		}
	}); err != nil && !errors.Is(err, claim.ErrNoClaim) {
		cleanup = append(cleanup, err.Error())
	}
	if err := runstate.DeleteCheckpoints(ctx, env, m, p.Checkpoint); err != nil {
		cleanup = append(cleanup, err.Error())
	}
	if err := runstate.DropPins(ctx, env, p); err != nil {
		cleanup = append(cleanup, err.Error())
	}
	if err := lock.Release(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		cleanup = append(cleanup, err.Error())
	} else if err := runstate.DropReplica(ctx, env, m); err != nil {
		cleanup = append(cleanup, err.Error())
	}
	out.CleanupError = strings.Join(cleanup, "; ")
	stats, notes := runstate.CollectStats(ctx, env, m)
	stats.Seconds[statemachine.StepFlip] = time.Since(start).Seconds()
	if out.CleanupError != "" {
		notes = append(notes, "cleanup after the flip: "+out.CleanupError)
	}
	if m.RollbackOf != "" && out.Online != nil {
		// The rounds the online report read: the keys they carried.
		for _, r := range out.Online.Rounds {
			out.CarriedKeys += r.Keys
		}
		notes = append(notes, rollbackNote(m, out.CarriedKeys))
	}
	out.HistoryError = runstate.FinishRecord(ctx, env, m, stats, notes, func(r *history.Record) {
		r.Outcome, r.State, r.PointerVersionID = history.Succeeded, statemachine.StepFlip, ref.VersionID
		r.ErrorName, r.Error = "", ""
		r.Online = out.Online
	})
	return out, nil
}

// flip checks Flip's preconditions against the pointer as read (cur), then
// takes the decision and writes the pointer.
func flip(ctx context.Context, env runstate.Env, m runstate.Migration, p runstate.Plan, cur pointer.Ref) (pointer.Ref, error) {
	if cur.ETag != m.PointerETag {
		moved := &pointer.Error{Kind: pointer.ErrPointerConflict, Op: "flip", URL: m.Pointer, ExpectedETag: m.PointerETag, CurrentETag: cur.ETag,
			Detail: fmt.Sprintf("the pointer was moved since Check read it (a rollback, an operator, another flip): expected ETag %s, found %s; nothing was written", m.PointerETag, cur.ETag)}
		return pointer.Ref{}, withdrawFlip(ctx, env, m, moved)
	}
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return pointer.Ref{}, err
	}
	if err := sourceUnchanged(ctx, env, m, p); err != nil {
		return pointer.Ref{}, err
	}
	marks, err := targetMarks(ctx, env, m)
	if err != nil {
		return pointer.Ref{}, err
	}
	next, err := flipIntent(ctx, env, m, marks)
	if err != nil {
		return pointer.Ref{}, err
	}
	// Last, the decision: once it says flip, no Abort deletes the target.
	if err := runstate.Decide(ctx, env, m, layout.DecisionFlip); err != nil {
		return pointer.Ref{}, err
	}
	ref, err := pointer.Flip(ctx, env.Store, m.Pointer, next, pointer.Ref{ETag: m.PointerETag})
	if errors.Is(err, pointer.ErrPointerConflict) {
		return ref, withdrawFlip(ctx, env, m, err)
	}
	return ref, err
}

// targetMarks runs the target's startup check, as Rollback does with the
// catalog it restores, and reads the marks the pointer records for it.
func targetMarks(ctx context.Context, env runstate.Env, m runstate.Migration) (pointer.Marks, error) {
	c, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: m.To, Store: env.SlateDB})
	if err != nil {
		return pointer.Marks{}, fmt.Errorf("workflow: flip: check %s: %w", m.Target, err)
	}
	defer c.Close()
	return runstate.CatalogMarks(ctx, c)
}

// withdrawFlip takes back this migration's decision to flip when the
// pointer moved since Check (cause): its conditional write cannot land any
// more, so Abort may remove the target. The decision stays if a version of
// the pointer ever named this migration (its write landed and was rolled
// back or flipped over since): that catalog was live and may hold commits,
// and Abort keeps it. It returns cause, with what it could not do.
func withdrawFlip(ctx context.Context, env runstate.Env, m runstate.Migration, cause error) error {
	url := env.StagingOf(m.MigrationID).Decision()
	got, info, err := env.Store.Get(ctx, url)
	switch {
	case errors.Is(err, blob.ErrNotFound), err == nil && string(got) != layout.DecisionFlip:
		return cause
	case err != nil:
		return fmt.Errorf("%w; the decision to flip stays (reading it failed: %w)", cause, err)
	}
	named, err := pointerNamed(ctx, env, m)
	if err != nil {
		return fmt.Errorf("%w; the decision to flip stays: whether the pointer ever named %s cannot be told: %w", cause, m.Target, err)
	}
	if named {
		return fmt.Errorf("%w; the pointer named %s before, so the decision to flip stays and Abort keeps it", cause, m.Target)
	}
	if _, err := env.Store.PutIfMatch(ctx, url, []byte(layout.DecisionWithdrawn), info.ETag); err != nil {
		return fmt.Errorf("%w; withdrawing the decision to flip failed: %w", cause, err)
	}
	return cause
}

// pointerNamed tells whether any kept version of the pointer names
// migration m or its target. A version it cannot read counts as naming it.
func pointerNamed(ctx context.Context, env runstate.Env, m runstate.Migration) (bool, error) {
	vs, err := pointer.History(ctx, env.Store, m.Pointer)
	if err != nil {
		return false, err
	}
	for _, v := range vs {
		switch {
		case v.DeleteMarker:
		case v.Pointer == nil:
			return true, nil
		case v.Pointer.MigrationID == m.MigrationID || v.Pointer.Catalog == m.Target:
			return true, nil
		}
	}
	return false, nil
}

// sourceUnchanged refuses (ErrSourceChanged) a source that took writes
// since Freeze: RockLake's marks, and the engine's state for any other
// SlateDB writer.
func sourceUnchanged(ctx context.Context, env runstate.Env, m runstate.Migration, p runstate.Plan) error {
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.From, Store: env.SlateDB})
	if err != nil {
		return fmt.Errorf("workflow: flip: reopen source: %w", err)
	}
	epoch, nextSnap, err := c.Marks(ctx)
	c.Close()
	if err != nil {
		return err
	}
	if epoch != p.WriterEpoch || nextSnap != p.NextSnapshotID {
		return fmt.Errorf("%w: writer-epoch %d → %d, next_snapshot_id %d → %d since Freeze",
			ErrSourceChanged, p.WriterEpoch, epoch, p.NextSnapshotID, nextSnap)
	}
	state, err := runstate.EngineState(ctx, env, m.Source)
	if err != nil {
		return err
	}
	if state != p.EngineState {
		return fmt.Errorf("%w: the source's SlateDB state moved since Freeze (%s → %s): another writer opened it",
			ErrSourceChanged, p.EngineState, state)
	}
	return nil
}

// flipIntent is the pointer Flip writes, fixed in staging on the first
// attempt (with the target's marks): a retried Flip (its response lost, say)
// sends the very same bytes, which pointer.Flip recognises as already
// current instead of a conflict.
func flipIntent(ctx context.Context, env runstate.Env, m runstate.Migration, marks pointer.Marks) (pointer.Pointer, error) {
	url := env.StagingOf(m.MigrationID).FlipIntent()
	var next pointer.Pointer
	err := env.Store.GetJSON(ctx, url, &next)
	if err == nil {
		return next, nil
	}
	if !errors.Is(err, blob.ErrNotFound) {
		return next, err
	}
	if m.RollbackOf != "" {
		if next, err = rollbackIntent(ctx, env, m, carriedKeys(ctx, env, m)); err != nil {
			return next, err
		}
		return next, env.Store.PutJSON(ctx, url, next)
	}
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return next, err
	}
	next = cur.Next(m.Target, m.To, m.MigrationID)
	next.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	next.Marks = marks
	// Pinned before the pointer names the target, so before any server
	// writes to it: a rollback carries back what changed since.
	if next.FlipPoint, err = runstate.PinFlip(ctx, env, m.MigrationID, m.Source, m.Target); err != nil {
		return next, err
	}
	return next, env.Store.PutJSON(ctx, url, next)
}
