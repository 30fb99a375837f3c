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

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// RollbackInput names the pointer to roll back.
type RollbackInput struct {
	Pointer string `json:"pointer"`
	// DiscardNewerCommits rolls back even though the current catalog took
	// commits after the flip: they are not in the catalog restored.
	DiscardNewerCommits bool `json:"discard_newer_commits,omitempty"`
	// DryRun checks and reports, and writes nothing but the run's record.
	DryRun bool `json:"dry_run,omitempty"`
	// Trigger says who started the rollback, for its record.
	Trigger string `json:"trigger,omitempty"`
	// FreezeGrace is how long after the lock the current catalog is
	// fenced, in seconds, with DiscardNewerCommits (nil:
	// DefaultFreezeGrace): time for the supervisors to see the lock.
	FreezeGrace *float64 `json:"freeze_grace,omitempty"`
}

// RollbackOutput is the restored pointer, checked.
type RollbackOutput struct {
	Catalog          string         `json:"catalog"`
	FormatVersion    format.Version `json:"format_version"`
	PointerVersionID string         `json:"pointer_version_id"`
	// From is the catalog the pointer named before.
	From string `json:"from"`
	// Newer says what the catalog rolled back from took after the flip
	// ("" if nothing): with DiscardNewerCommits, what was left behind.
	Newer  string `json:"newer_commits,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
	// RunID names the rollback's record; HistoryError says it could not
	// be written (the rollback stands).
	RunID        string `json:"run_id"`
	HistoryError string `json:"history_error,omitempty"`
	// InPlace: the rollback undid an in-place migration; Catalog is its
	// way back, the catalog as it was, copied before the migration.
	InPlace bool `json:"in_place,omitempty"`
	// Carries: the current catalog took commits since the flip, which a
	// rollback run carries back (Newer says which). Carry: so nothing was
	// written, and the rollback run is to run (the rollback definition's
	// Choice reads it: always present).
	Carries bool `json:"carries,omitempty"`
	Carry   bool `json:"carry"`
}

// errCarry stops a one-step rollback before it writes: the rollback run
// must carry the commits since the flip (RollbackOutput.Carry).
var errCarry = errors.New("the commits since the flip are to be carried back")

// Rollback makes the previous pointer version current again in one step,
// when nothing needs carrying back: before writing anything it runs the
// startup check on the catalog to be restored (one that is gone or in
// another format leaves the pointer as it is), and it compares the current
// catalog's next_snapshot_id with the one the pointer recorded at the flip:
// if RockLake committed to it since, it writes nothing: when the flip pinned
// both catalogs it says Carry (the rollback run carries them back:
// CheckInput.Rollback; the rollback definition starts it), else it refuses
// naming what would be lost, unless DiscardNewerCommits. That first takes
// the lock as a rollback and fences the current catalog, so that what it
// reports as left behind is exactly what is, and no client is told of a
// commit after it.
func Rollback(ctx context.Context, env runstate.Env, in RollbackInput) (RollbackOutput, error) {
	start := time.Now()
	out := RollbackOutput{RunID: runstate.NewRunID("r-")}
	rec := history.Record{ID: out.RunID, Kind: history.KindRollback, Trigger: runstate.Trigger(in.Trigger), Pointer: in.Pointer, Start: start, State: statemachine.StepRollback}
	out, err := rollback(ctx, env, in, out, &rec)
	if errors.Is(err, errCarry) {
		// Nothing done: the rollback run that carries is the record.
		out.Carry = true
		return out, nil
	}
	outcome := history.Succeeded
	if in.DryRun {
		outcome = history.DryRunOK
	} else {
		rec.PointerVersionID = out.PointerVersionID
	}
	if out.Newer != "" {
		rec.Notes = append(rec.Notes, "left behind: "+out.Newer)
	}
	out.HistoryError = runstate.RecordOneStateRun(ctx, env, rec, err, outcome)
	return out, err
}

func rollback(ctx context.Context, env runstate.Env, in RollbackInput, out RollbackOutput, rec *history.Record) (_ RollbackOutput, err error) {
	if in.DiscardNewerCommits && !in.DryRun {
		release, err := fenceForDiscard(ctx, env, in, out.RunID)
		if err != nil {
			return RollbackOutput{RunID: out.RunID}, err
		}
		defer func() {
			if rerr := release(); rerr != nil {
				err = errors.Join(err, fmt.Errorf("workflow: rollback: free the lock: %w", rerr))
			}
		}()
	}
	var pins *pointer.FlipPoint
	check := func(ctx context.Context, cur, p pointer.Pointer) error {
		out.From, pins = cur.Catalog, cur.FlipPoint
		rec.Source, rec.From, rec.Target, rec.To = cur.Catalog, cur.FormatVersion, p.Catalog, p.FormatVersion
		wb, ok := layout.WayBackOf(cur)
		out.InPlace = ok && p.Catalog == wb
		c, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: p.FormatVersion, Store: env.SlateDB})
		if err != nil {
			return fmt.Errorf("workflow: rollback: check %s: %w", p.Catalog, err)
		}
		if err := c.Close(); err != nil {
			return err
		}
		newer, err := newerCommits(ctx, env, cur)
		if err != nil && !in.DiscardNewerCommits {
			return fmt.Errorf("%w: cannot tell what %s took since the flip (pass --discard-newer-commits to roll back anyway): %w", ErrRollbackLosesCommits, cur.Catalog, err)
		}
		out.Newer = newer
		carries := cur.FlipPoint != nil
		out.Carries = carries && newer != "" && !in.DiscardNewerCommits
		if out.Carries && !in.DryRun {
			return errCarry
		}
		if newer != "" && !in.DiscardNewerCommits && !(in.DryRun && carries) {
			carry := "pass --discard-newer-commits to roll back anyway"
			if carries {
				carry = "roll back with the rollback run, which carries them back (the CLI's rollback; the migration state machine with \"rollback\": true), or pass --discard-newer-commits to drop them"
			}
			return fmt.Errorf("%w: %s; rolling back in one step would drop them (%s)", ErrRollbackLosesCommits, newer, carry)
		}
		return nil
	}
	p, ref, err := pointer.Rollback(ctx, env.Store, in.Pointer, pointer.RollbackOptions{Check: check, Relocate: relocate, DryRun: in.DryRun})
	if errors.Is(err, errCarry) {
		return out, err
	}
	if err != nil {
		return RollbackOutput{RunID: out.RunID}, err
	}
	if !in.DryRun && pins != nil {
		// The flip undone: its pins hold old files for nothing now.
		if err := runstate.DropPins(ctx, env, runstate.Plan{Run: runstate.Run{Source: out.From, Target: p.Catalog}, FlipPoint: pins}); err != nil {
			rec.Notes = append(rec.Notes, "the rolled-back flip's pins were not deleted (cleanup removes them): "+err.Error())
		}
	}
	out.DryRun = in.DryRun
	out.Catalog, out.FormatVersion, out.PointerVersionID = p.Catalog, p.FormatVersion, ref.VersionID
	return out, nil
}

// relocate sends the rollback of an in-place migration to its way back: the
// catalog as it was, copied before the migration changed it where it lies.
func relocate(cur, restore pointer.Pointer) string {
	wb, ok := layout.WayBackOf(cur)
	if !ok || restore.Catalog != cur.Catalog {
		return ""
	}
	return wb
}

// newerCommits says what cur's catalog took since cur was written ("" for
// nothing), from the writer-epoch and next_snapshot_id recorded in cur.
func newerCommits(ctx context.Context, env runstate.Env, cur pointer.Pointer) (string, error) {
	if cur.Marks == (pointer.Marks{}) {
		return "", fmt.Errorf("the pointer recorded no marks of %s at the flip", cur.Catalog)
	}
	c, err := catalog.Open(ctx, cur.Catalog, catalog.Options{Expect: cur.FormatVersion, Store: env.SlateDB})
	if err != nil {
		return "", err
	}
	defer c.Close()
	now, err := runstate.CatalogMarks(ctx, c)
	if err != nil {
		return "", err
	}
	was := cur.Marks
	var parts []string
	if now.NextSnapshotID != was.NextSnapshotID {
		parts = append(parts, fmt.Sprintf("snapshots %d to %d were committed to %s after the flip", was.NextSnapshotID, now.NextSnapshotID-1, cur.Catalog))
	}
	// A writer-epoch move alone is a RockLake that opened the catalog (a
	// supervisor following the flip) and committed nothing: no commit is
	// lost by leaving it.
	return strings.Join(parts, "; "), nil
}

// fenceForDiscard takes the pointer's lock as a rollback (run id) and
// fences the current catalog's writer once the freeze grace has passed
// (the supervisors see the lock and switch their servers to reader mode),
// so that nothing commits to it while the rollback decides what it leaves
// behind. It returns the release of the lock.
func fenceForDiscard(ctx context.Context, env runstate.Env, in RollbackInput, id string) (func() error, error) {
	cur, ref, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return nil, err
	}
	m := runstate.Migration{Run: runstate.Run{MigrationID: id, Pointer: in.Pointer, PointerETag: ref.ETag, Source: cur.Catalog, From: cur.FormatVersion}, RollbackOf: cur.MigrationID}
	if m.FreezeGrace, err = runstate.FreezeGraceOf(in.FreezeGrace); err != nil {
		return nil, err
	}
	held, err := runstate.AcquireLock(ctx, env, m, time.Now())
	if err != nil {
		return nil, err
	}
	release := func() error { return lock.Release(context.WithoutCancel(ctx), env.Store, m.Pointer, m.MigrationID) }
	m.StartedAt, m.FenceAt = held.AcquiredAt, held.FenceAt
	if err := runstate.AwaitFence(ctx, env, m); err != nil {
		// A lock lost meanwhile is another run's: release leaves it.
		return nil, errors.Join(err, release())
	}
	so := env.SlateDB
	so.Passive = true
	w, err := catalog.OpenWriter(ctx, cur.Catalog, catalog.Options{Expect: cur.FormatVersion, Store: so})
	if err != nil {
		return nil, errors.Join(fmt.Errorf("workflow: rollback: fence %s: %w", cur.Catalog, err), release())
	}
	if err := w.CloseContext(ctx); err != nil {
		return nil, errors.Join(fmt.Errorf("workflow: rollback: fence %s: close: %w", cur.Catalog, err), release())
	}
	return release, nil
}
