package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/statemachine"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// InPlaceOutput is what MigrateInPlace did.
type InPlaceOutput struct {
	runstate.Migration
	InPlace          inplace.Result `json:"in_place"`
	PointerVersionID string         `json:"pointer_version_id,omitempty"`
	// Warning: the pointer write reported an error, yet the pointer, read
	// again, names the migrated catalog: the write landed, and so did the
	// migration.
	Warning string `json:"warning,omitempty"`
	// CleanupError: the lock could not be released; the migration's
	// outcome stands (unlock frees it).
	CleanupError string `json:"cleanup_error,omitempty"`
}

// MigrateInPlace is Strategy A, the step after Check (which took the
// pointer's lock, refused unknown tags under the fail policy and probed
// staging): the catalog the pointer names is migrated where it lies
// (pkg/inplace), then the pointer names it again, in its new format, with
// the migration's id; the way back is the copy of the catalog as it was that
// inplace.Migrate makes beside it (layout.WayBack names it), to which
// Rollback moves the pointer. If anything fails once the batch has landed (the
// read-back, the pointer that someone else moved, S3, the caller's context),
// undo decides, from the pointer read again and the catalog's marks, whether
// the catalog is restored from its way back at once (so that the pointer and
// the catalog agree) or kept with its way back for the operator. A dry run
// writes nothing but the lock. The lock is released, except when the undo
// kept both: then nothing else runs on the pointer until an operator
// finishes by hand and unlocks.
func MigrateInPlace(ctx context.Context, env runstate.Env, m runstate.Migration) (out InPlaceOutput, err error) {
	out.Migration = m
	if !m.NeedsMigration {
		return out, nil
	}
	// The migration works until the margin before the deadline; the undo,
	// the record and the lock get the margin (a Lambda dies at its
	// deadline, and with it whatever is still running).
	work, cancelWork := ctx, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		margin := cmp.Or(env.InPlaceMargin, min(DefaultInPlaceMargin, left/4))
		if left <= margin {
			err = fmt.Errorf("%w: %s left before the step's deadline, not more than the %s kept for undoing a failure; nothing was touched", ErrInPlaceNoTime, left.Round(time.Second), margin)
		}
		work, cancelWork = context.WithDeadline(ctx, dl.Add(-margin))
	}
	defer cancelWork()
	start := time.Now()
	defer func() { finishInPlace(ctx, env, m, start, &out, err) }()
	if err != nil {
		return out, err
	}
	if err := runstate.InPlaceMemoryHolds(env, m.InPlaceMaxBytes); err != nil {
		return out, err
	}
	policy, err := migration.ParseUnknownTags(m.UnknownTags)
	if err != nil {
		return out, err
	}
	// Strategy A fences the source too: once the live supervisors have
	// acknowledged (each serves reads from a copy).
	if err := runstate.AwaitFence(ctx, env, m); err != nil {
		return out, err
	}
	wayBack, err := wayBackURL(m.Source, m.From, m.MigrationID)
	if err != nil {
		return out, err
	}
	if !m.DryRun {
		// Claimed before it is made, so that whatever becomes of this run
		// the way back is known to be this pointer's, and kept.
		var created bool
		created, err = claim.Create(work, env.Store, claim.Claim{Pointer: m.Pointer, Catalog: wayBack, Kind: claim.KindWayBack, Source: m.Source,
			MigrationID: m.MigrationID, Created: time.Now(), CreatedBy: env.CreatedBy})
		if err != nil {
			return out, fmt.Errorf("workflow: in place: claim the way back %s: %w", wayBack, err)
		}
		if created {
			defer func() {
				if err != nil {
					withdraw(ctx, env, m, wayBack, errors.Is(err, inplace.ErrWayBackTaken))
				}
			}()
		}
	}
	res, err := inplace.Migrate(work, m.Source, inplace.Options{
		To: m.To, UnknownTags: policy, MaxBytes: m.InPlaceMaxBytes, DryRun: m.DryRun,
		MigrationID: m.MigrationID, WayBack: wayBack, Blob: env.Store, Store: env.SlateDB,
	})
	out.InPlace = res
	if m.DryRun {
		return out, err
	}
	var pins *pointer.FlipPoint
	if err == nil && res.Landed != nil {
		pins, err = keepBatch(work, env, m, wayBack, res.Landed)
	}
	if err == nil && AfterInPlaceBatch != nil {
		AfterInPlaceBatch()
	}
	if err == nil {
		var ref pointer.Ref
		if ref, err = flipInPlace(work, env, m, res.Landed, pins); err == nil {
			out.PointerVersionID = ref.VersionID
			named(work, env, m, ref, &out)
			return out, nil
		}
		err = fmt.Errorf("the pointer write failed: %w", err)
	}
	ref, err := undo(ctx, env, m, res.Landed, err)
	if err == nil {
		out.PointerVersionID = ref.VersionID
		out.Warning = "the pointer write reported an error, but the pointer names the migrated catalog: it landed"
		named(ctx, env, m, ref, &out)
	}
	return out, err
}

// finishInPlace ends an in-place run: its record (started by Check) with
// the outcome, before the lock is freed, as Flip and Abort end theirs; a
// catalog kept in doubt (moved, or an undo undecided) keeps the lock, so
// that cleanup and other runs stay off it.
func finishInPlace(ctx context.Context, env runstate.Env, m runstate.Migration, start time.Time, out *InPlaceOutput, err error) {
	fresh, cancel := Afterwards(ctx, time.Minute)
	defer cancel()
	stats := runstate.RunStats{Seconds: map[string]float64{statemachine.StepInPlace: time.Since(start).Seconds()}, LastState: statemachine.StepInPlace,
		Rows: out.InPlace.Records, Bytes: out.InPlace.Bytes}
	herr := runstate.FinishRecord(fresh, env, m, stats, nil, func(r *history.Record) {
		switch {
		case err != nil:
			r.Outcome, r.ErrorName, r.Error = history.Failed, runstate.ErrorName(err), err.Error()
		case m.DryRun:
			r.Outcome = history.DryRunOK
		default:
			r.Outcome, r.PointerVersionID = history.Succeeded, out.PointerVersionID
		}
	})
	if herr != "" {
		out.CleanupError = "the run's record: " + herr
	}
	if errors.Is(err, inplace.ErrCatalogMoved) || errors.Is(err, inplace.ErrUndoUndecided) {
		return
	}
	if lerr := lock.Release(fresh, env.Store, m.Pointer, m.MigrationID); lerr != nil {
		out.CleanupError = strings.TrimPrefix(out.CleanupError+"; ", "; ") + lerr.Error()
	}
}

// keepBatch pins the catalog after the batch and its way back for a
// rollback (it carries what the catalog takes since into the way back),
// records in l the engine state after the pin (this run's own write, which
// the undo and restore hold the catalog to), and keeps l on the way back's
// claim beside the pointer, so that a restore after this run dies can
// prove the catalog took no commits since the batch.
func keepBatch(ctx context.Context, env runstate.Env, m runstate.Migration, wayBack string, l *inplace.Marks) (*pointer.FlipPoint, error) {
	pins, err := runstate.PinFlip(ctx, env, m.MigrationID, wayBack, m.Source)
	if err != nil {
		return nil, err
	}
	pin := runstate.ViewOf(pins.Current)
	l.Pin = &pin
	if l.Engine, err = runstate.EngineState(ctx, env, m.Source); err != nil {
		return nil, err
	}
	if _, err := claim.Update(ctx, env.Store, m.Pointer, m.MigrationID, func(c *claim.Claim) {
		c.Landed = &claim.Landed{WriterEpoch: l.WriterEpoch, NextSnapshotID: l.NextSnapshotID, Engine: l.Engine}
		if l.Pin != nil {
			c.Landed.PinCheckpoint, c.Landed.PinWALEnd = l.Pin.Checkpoint, l.Pin.WALEnd
		}
	}); err != nil {
		return nil, fmt.Errorf("record what the batch left on the way back's claim: %w", err)
	}
	return pins, nil
}

// named keeps on the way back's claim that a pointer version named the
// migrated catalog, after the version itself expired.
func named(ctx context.Context, env runstate.Env, m runstate.Migration, ref pointer.Ref, out *InPlaceOutput) {
	fresh, cancel := Afterwards(ctx, time.Minute)
	defer cancel()
	if _, err := claim.Update(fresh, env.Store, m.Pointer, m.MigrationID, func(c *claim.Claim) {
		c.Named = &claim.Event{By: m.MigrationID, At: time.Now().UTC(), PointerVersionID: ref.VersionID}
	}); err != nil {
		out.CleanupError = "the way back's claim: " + err.Error()
	}
}

// withdraw deletes the claim this run made on its way back's place when
// the run failed leaving nothing there, or found the place taken (what is
// there is someone else's): a claim must not stay on what this run did not
// make. A way back that holds anything keeps its claim.
func withdraw(ctx context.Context, env runstate.Env, m runstate.Migration, wayBack string, taken bool) {
	fresh, cancel := Afterwards(ctx, time.Minute)
	defer cancel()
	if !taken {
		objs, err := env.Store.List(fresh, wayBack+"/")
		if err != nil || len(objs) > 0 {
			return
		}
	}
	if err := claim.Delete(fresh, env.Store, m.Pointer, m.MigrationID); err != nil {
		slog.WarnContext(ctx, "the way back's claim was not withdrawn", "claim", layout.Claim(m.Pointer, m.MigrationID), "error", err.Error())
	}
}

// DefaultInPlaceMargin bounds Env.InPlaceMargin's default, which is the
// smaller of it and a quarter of the time the step has: the time before its
// deadline at which the in-place step stops, kept for the undo (a restore
// reads and writes the catalog once, less than the migration did), its
// record and the lock.
const DefaultInPlaceMargin = 2 * time.Minute

// AfterInPlaceBatch, when set (by tests), runs once the batch landed and
// was read back, before the pointer is written: where a crash leaves the
// catalog in its new format behind a pointer that says the old one.
var AfterInPlaceBatch func()

// Afterwards is a context for the work after a failure: not cancelled with
// ctx, but within ctx's deadline if it has one (nothing outlives a Lambda's
// deadline), else d.
func Afterwards(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	fresh := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(fresh, dl)
	}
	return context.WithTimeout(fresh, d)
}

// undo decides what becomes of a catalog whose in-place migration failed
// (cause), on a fresh context. Whatever it cannot prove safe it leaves
// alone, keeping the catalog and its way back (ErrUndoUndecided,
// ErrCatalogMoved, with how to finish by hand):
//   - the batch did not land: cause (Migrate dropped the way back);
//   - the pointer, read again, names the migrated catalog as this
//     migration's flip writes it: a write that reported an error (a
//     timeout, a 5xx after S3 applied it) landed, so the migration did:
//     the pointer's version, no error, the way back kept for rollback;
//   - the pointer cannot be read, or names the catalog in another format
//     than the one before the migration: kept;
//   - otherwise the catalog is restored where it lies from its way back
//     (inplace.Restore, which refuses a catalog that took commits since
//     the batch: landed are the marks it left), then the way back deleted.
func undo(ctx context.Context, env runstate.Env, m runstate.Migration, landed *inplace.Marks, cause error) (pointer.Ref, error) {
	fresh, cancel := Afterwards(ctx, 10*time.Minute)
	defer cancel()
	wayBack, err := wayBackURL(m.Source, m.From, m.MigrationID)
	if err != nil {
		return pointer.Ref{}, fmt.Errorf("workflow: in place: %w; %w", cause, err)
	}
	v, err := catalogVersion(fresh, env, m.Source)
	switch {
	case err != nil:
		return pointer.Ref{}, fmt.Errorf("%w: workflow: in place: %w; the catalog %s could not be read after it (%w): nothing was restored; check it: if it is format %s, its way back %s holds it as it was. %s",
			inplace.ErrUndoUndecided, cause, m.Source, err, m.To, wayBack, finishByHand(m, landed, wayBack))
	case v != m.To:
		return pointer.Ref{}, cause // the batch did not land: Migrate dropped the way back
	}
	p, ref, err := pointer.Read(fresh, env.Store, m.Pointer)
	switch {
	case err != nil:
		return pointer.Ref{}, fmt.Errorf("%w: workflow: in place: %w; the catalog %s is format %s and the pointer %s cannot be read again (%w) to tell whether the write landed: nothing was restored, the catalog and its way back %s are both kept. %s",
			inplace.ErrUndoUndecided, cause, m.Source, m.To, m.Pointer, err, wayBack, finishByHand(m, landed, wayBack))
	case p.Catalog == m.Source && p.FormatVersion == m.To && p.MigrationID == m.MigrationID:
		slog.WarnContext(fresh, "the pointer write reported an error, but the pointer names the migrated catalog: it landed",
			"pointer", m.Pointer, "version_id", ref.VersionID, "error", cause.Error())
		return ref, nil
	case p.Catalog == m.Source && p.FormatVersion != m.From:
		return pointer.Ref{}, fmt.Errorf("%w: workflow: in place: %w; the pointer %s names %s in format %s for migration %q, not this one's flip nor the format before it: nothing was restored, the catalog (format %s) and its way back %s are both kept; decide which the pointer should name, then unlock (rocklake-migrate unlock --pointer %s --migration-id %s)",
			inplace.ErrUndoUndecided, cause, m.Pointer, p.Catalog, p.FormatVersion, p.MigrationID, m.To, wayBack, m.Pointer, m.MigrationID)
	}
	if _, err := inplace.Restore(fresh, m.Source, wayBack, inplace.RestoreOptions{Current: m.To, Landed: landed, Blob: env.Store, Store: env.SlateDB}); err != nil {
		if errors.Is(err, inplace.ErrCatalogMoved) || errors.Is(err, inplace.ErrUndoUndecided) {
			// Restore's error first: its name (kept) is the outcome's,
			// whatever the cause was.
			return pointer.Ref{}, fmt.Errorf("%w; workflow: in place: %w; the catalog %s (format %s) and its way back %s (format %s, the catalog as it was) are both kept. %s",
				err, cause, m.Source, m.To, wayBack, m.From, finishByHand(m, landed, wayBack))
		}
		return pointer.Ref{}, fmt.Errorf("workflow: in place: %w; the catalog %s is format %s, and restoring it from its way back %s failed too: %w", cause, m.Source, m.To, wayBack, err)
	}
	if _, err := env.Store.DeletePrefix(fresh, wayBack+"/"); err != nil {
		return pointer.Ref{}, fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s; its way back %s is left: %w", cause, m.Source, m.From, wayBack, err)
	}
	if err := claim.Delete(fresh, env.Store, m.Pointer, m.MigrationID); err != nil {
		return pointer.Ref{}, fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s; the claim of its deleted way back is left: %w", cause, m.Source, m.From, err)
	}
	return pointer.Ref{}, fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s", cause, m.Source, m.From)
}

// finishByHand says how an operator finishes a migration whose undo kept
// the catalog and its way back, whatever the pointer turns out to name: the
// pointer this migration's flip would have written (the batch's marks in
// it, so that a rollback to the way back still sees commits made since), or
// one naming the way back; then the lock freed.
func finishByHand(m runstate.Migration, landed *inplace.Marks, wayBack string) string {
	marks := ""
	if landed != nil {
		marks = fmt.Sprintf(`, "marks": {"writer_epoch": %d, "next_snapshot_id": %d}`, landed.WriterEpoch, landed.NextSnapshotID)
	}
	return fmt.Sprintf(`To finish by hand, read the pointer %s. If it names %s in format %s for migration %s, the flip landed and the migration is done. If it names it in format %s, which RockLake of that format refuses to open now, either keep the catalog as it is: write the pointer as this migration would have, conditional on its current ETag (its next generation, "catalog": %q, "format_version": %d, "migration_id": %q, "previous_catalog": %q, "previous_migration_id": the current one's%s), after which rocklake-migrate rollback --pointer %s moves it to the way back, refusing to drop commits made since the batch unless --discard-newer-commits; or drop those commits: write it naming the way back %s in format %s. Then free the lock: rocklake-migrate unlock --pointer %s --migration-id %s`,
		m.Pointer, m.Source, m.To, m.MigrationID, m.From, m.Source, uint64(m.To), m.MigrationID, m.Source, marks, m.Pointer, wayBack, m.From, m.Pointer, m.MigrationID)
}

// flipInPlace moves the pointer from the catalog in its old format to the
// same catalog in its new one, with the marks the batch left for Rollback
// (commits made since are commits a rollback would drop); if they were not
// recorded, the catalog's marks now.
func flipInPlace(ctx context.Context, env runstate.Env, m runstate.Migration, landed *inplace.Marks, pins *pointer.FlipPoint) (pointer.Ref, error) {
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return pointer.Ref{}, err
	}
	next := cur.Next(m.Source, m.To, m.MigrationID)
	if landed != nil {
		next.Marks = pointer.Marks{WriterEpoch: landed.WriterEpoch, NextSnapshotID: landed.NextSnapshotID}
	} else {
		c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.To, Store: env.SlateDB})
		if err != nil {
			return pointer.Ref{}, fmt.Errorf("workflow: in place: read %s: %w", m.Source, err)
		}
		next.Marks, err = runstate.CatalogMarks(ctx, c)
		c.Close()
		if err != nil {
			return pointer.Ref{}, err
		}
	}
	next.FlipPoint = pins
	return pointer.Flip(ctx, env.Store, m.Pointer, next, pointer.Ref{ETag: m.PointerETag})
}

// catalogVersion is the format of the catalog at url, whichever it is.
func catalogVersion(ctx context.Context, env runstate.Env, url string) (format.Version, error) {
	c, err := catalog.Open(ctx, url, catalog.Options{Store: env.SlateDB})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Version(), nil
}
