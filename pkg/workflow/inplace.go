package workflow

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// InPlaceOutput is what MigrateInPlace did.
type InPlaceOutput struct {
	Migration
	InPlace          inplace.Result `json:"in_place"`
	PointerVersionID string         `json:"pointer_version_id,omitempty"`
	// CleanupError: the lock could not be released; the migration's
	// outcome stands (unlock frees it).
	CleanupError string `json:"cleanup_error,omitempty"`
}

// MigrateInPlace is Strategy A, the step after Check (which took the
// pointer's lock, refused unknown tags under the fail policy and probed
// staging): the catalog the pointer names is migrated where it lies
// (pkg/inplace), then the pointer names it again, in its new format, with
// the migration's id; the way back is the copy of the catalog as it was that
// inplace.Migrate makes beside it (drift.WayBack names it), to which
// Rollback moves the pointer. If anything fails once the batch has landed (the
// read-back, the pointer that someone else moved, S3, the caller's context),
// the catalog is rolled back at once, so that the pointer and the catalog
// agree. A dry run writes nothing but the lock. The lock is released in every
// case.
func MigrateInPlace(ctx context.Context, env Env, m Migration) (out InPlaceOutput, err error) {
	out.Migration = m
	if !m.NeedsMigration {
		return out, nil
	}
	start := time.Now()
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
	defer func() {
		fresh, cancel := afterwards(ctx, time.Minute)
		defer cancel()
		// The run's record (started by Check) ends with the outcome, before
		// the lock is freed, as Flip and Abort end theirs.
		stats := runStats{seconds: map[string]float64{"InPlace": time.Since(start).Seconds()}, lastState: "InPlace",
			rows: out.InPlace.Records, bytes: out.InPlace.Bytes}
		herr := finishRecord(fresh, env, m, stats, nil, func(r *history.Record) {
			switch {
			case err != nil:
				r.Outcome, r.ErrorName, r.Error = history.Failed, ErrorName(err), err.Error()
			case m.DryRun:
				r.Outcome = history.DryRunOK
			default:
				r.Outcome, r.PointerVersionID = history.Succeeded, out.PointerVersionID
			}
		})
		if herr != "" {
			out.CleanupError = "the run's record: " + herr
		}
		if lerr := releaseLock(fresh, env, m); lerr != nil {
			out.CleanupError = strings.TrimPrefix(out.CleanupError+"; ", "; ") + lerr.Error()
		}
	}()
	if err != nil {
		return out, err
	}
	policy, err := migration.ParseUnknownTags(m.UnknownTags)
	if err != nil {
		return out, err
	}
	wayBack, err := targetURL(m.Source, m.From, m.MigrationID)
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
	if err == nil && afterInPlaceBatch != nil {
		afterInPlaceBatch()
	}
	if err == nil {
		var ref pointer.Ref
		if ref, err = flipInPlace(work, env, m); err == nil {
			out.PointerVersionID = ref.VersionID
			// The claim keeps that a pointer version named the migrated
			// catalog, after the version itself expired.
			if _, cerr := claim.Update(work, env.Store, m.Pointer, m.MigrationID, func(c *claim.Claim) {
				c.Named = &claim.Event{By: m.MigrationID, At: time.Now().UTC(), PointerVersionID: ref.VersionID}
			}); cerr != nil {
				out.CleanupError = "the way back's claim: " + cerr.Error()
			}
			return out, nil
		}
		err = fmt.Errorf("the pointer was not moved: %w", err)
	}
	return out, undo(ctx, env, m, err)
}

// withdraw deletes the claim this run made on its way back's place when
// the run failed leaving nothing there, or found the place taken (what is
// there is someone else's): a claim must not stay on what this run did not
// make. A way back that holds anything keeps its claim.
func withdraw(ctx context.Context, env Env, m Migration, wayBack string, taken bool) {
	fresh, cancel := afterwards(ctx, time.Minute)
	defer cancel()
	if !taken {
		objs, err := env.Store.List(fresh, wayBack+"/")
		if err != nil || len(objs) > 0 {
			return
		}
	}
	if err := claim.Delete(fresh, env.Store, m.Pointer, m.MigrationID); err != nil {
		slog.WarnContext(ctx, "the way back's claim was not withdrawn", "claim", claim.URL(m.Pointer, m.MigrationID), "error", err.Error())
	}
}

// DefaultInPlaceMargin bounds Env.InPlaceMargin's default, which is the
// smaller of it and a quarter of the time the step has: the time before its
// deadline at which the in-place step stops, kept for the undo (a restore
// reads and writes the catalog once, less than the migration did), its
// record and the lock.
const DefaultInPlaceMargin = 2 * time.Minute

// ErrInPlaceNoTime: the in-place step was given less time than its
// margin; it refused before touching anything.
var ErrInPlaceNoTime = errors.New(NameInPlaceNoTime)

// afterInPlaceBatch, when set (by tests), runs once the batch landed and
// was read back, before the pointer is written: where a crash leaves the
// catalog in its new format behind a pointer that says the old one.
var afterInPlaceBatch func()

// afterwards is a context for the work after a failure: not cancelled with
// ctx, but within ctx's deadline if it has one (nothing outlives a Lambda's
// deadline), else d.
func afterwards(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	fresh := context.WithoutCancel(ctx)
	if dl, ok := ctx.Deadline(); ok {
		return context.WithDeadline(fresh, dl)
	}
	return context.WithTimeout(fresh, d)
}

// undo puts back a catalog that a failed in-place migration left in the new
// format (its batch landed, then the read-back, the pointer or the caller's
// context failed), on a fresh context, so that a failed run leaves the
// catalog as the pointer says: restored where it lies from its way back
// (the pointer still names it there), then the way back deleted. cause is
// returned with what undo did.
func undo(ctx context.Context, env Env, m Migration, cause error) error {
	fresh, cancel := afterwards(ctx, 10*time.Minute)
	defer cancel()
	wayBack, err := targetURL(m.Source, m.From, m.MigrationID)
	if err != nil {
		return fmt.Errorf("workflow: in place: %w; %w", cause, err)
	}
	v, err := catalogVersion(fresh, env, m.Source)
	switch {
	case err != nil:
		return fmt.Errorf("workflow: in place: %w; the catalog %s could not be read after it (%w): check it; if it is format %s, its way back is %s", cause, m.Source, err, m.To, wayBack)
	case v != m.To:
		return cause // the batch did not land: Migrate dropped the way back
	}
	// A pointer write that failed may have landed all the same (its answer
	// lost): restoring then would put the old format behind a pointer that
	// says the new one, and drop the way back its rollback needs.
	cur, _, err := pointer.Read(fresh, env.Store, m.Pointer)
	switch {
	case err != nil:
		return fmt.Errorf("workflow: in place: %w; the pointer cannot be read (%w), so whether it names the migrated catalog is unknown: nothing was restored, and the way back %s is kept (`rocklake-migrate restore --migration-id %s` once the pointer is known to say format %s)", cause, err, wayBack, m.MigrationID, m.From)
	case cur.MigrationID == m.MigrationID:
		return fmt.Errorf("workflow: in place: %w; yet the pointer names the migrated catalog (format %s, written by this migration): nothing was restored, and the way back %s is kept for rollback", cause, cur.FormatVersion, wayBack)
	}
	if _, err := inplace.Restore(fresh, m.Source, wayBack, inplace.RestoreOptions{Current: m.To, Store: env.SlateDB}); err != nil {
		return fmt.Errorf("workflow: in place: %w; the catalog %s is format %s, and restoring it from its way back %s failed too: %w", cause, m.Source, m.To, wayBack, err)
	}
	if _, err := env.Store.DeletePrefix(fresh, wayBack+"/"); err != nil {
		return fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s; its way back %s is left: %w", cause, m.Source, m.From, wayBack, err)
	}
	if err := claim.Delete(fresh, env.Store, m.Pointer, m.MigrationID); err != nil {
		return fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s; the claim of its deleted way back is left: %w", cause, m.Source, m.From, err)
	}
	return fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s", cause, m.Source, m.From)
}

// flipInPlace moves the pointer from the catalog in its old format to the
// same catalog in its new one, with the catalog's marks for Rollback.
func flipInPlace(ctx context.Context, env Env, m Migration) (pointer.Ref, error) {
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return pointer.Ref{}, err
	}
	next := cur.Next(m.Source, m.To, m.MigrationID)
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.To, Store: env.SlateDB})
	if err != nil {
		return pointer.Ref{}, fmt.Errorf("workflow: in place: read %s: %w", m.Source, err)
	}
	next.Marks, err = catalogMarks(ctx, c)
	c.Close()
	if err != nil {
		return pointer.Ref{}, err
	}
	return pointer.Flip(ctx, env.Store, m.Pointer, next, pointer.Ref{ETag: m.PointerETag})
}

// catalogVersion is the format of the catalog at url, whichever it is.
func catalogVersion(ctx context.Context, env Env, url string) (format.Version, error) {
	c, err := catalog.Open(ctx, url, catalog.Options{Store: env.SlateDB})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Version(), nil
}
