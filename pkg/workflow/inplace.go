package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
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
	defer func() {
		fresh, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
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
	policy, err := migration.ParseUnknownTags(m.UnknownTags)
	if err != nil {
		return out, err
	}
	// Strategy A fences the source too: the servers' supervisors switch to
	// reader mode first.
	if err := awaitGrace(ctx, m); err != nil {
		return out, err
	}
	wayBack, err := targetURL(m.Source, m.From, m.MigrationID)
	if err != nil {
		return out, err
	}
	res, err := inplace.Migrate(ctx, m.Source, inplace.Options{
		To: m.To, UnknownTags: policy, MaxBytes: m.InPlaceMaxBytes, DryRun: m.DryRun,
		MigrationID: m.MigrationID, WayBack: wayBack, Blob: env.Store, Store: env.SlateDB,
	})
	out.InPlace = res
	if m.DryRun {
		return out, err
	}
	if err == nil {
		var ref pointer.Ref
		if ref, err = flipInPlace(ctx, env, m); err == nil {
			out.PointerVersionID = ref.VersionID
			return out, nil
		}
		err = fmt.Errorf("the pointer was not moved: %w", err)
	}
	return out, undo(ctx, env, m, err)
}

// undo puts back a catalog that a failed in-place migration left in the new
// format (its batch landed, then the read-back, the pointer or the caller's
// context failed), on a fresh context, so that a failed run leaves the
// catalog as the pointer says: restored where it lies from its way back
// (the pointer still names it there), then the way back deleted. cause is
// returned with what undo did.
func undo(ctx context.Context, env Env, m Migration, cause error) error {
	fresh, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Minute)
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
	if _, err := inplace.Restore(fresh, m.Source, wayBack, inplace.RestoreOptions{Current: m.To, Store: env.SlateDB}); err != nil {
		return fmt.Errorf("workflow: in place: %w; the catalog %s is format %s, and restoring it from its way back %s failed too: %w", cause, m.Source, m.To, wayBack, err)
	}
	if _, err := env.Store.DeletePrefix(fresh, wayBack+"/"); err != nil {
		return fmt.Errorf("workflow: in place: %w; the catalog %s was restored to format %s; its way back %s is left (cleanup deletes it): %w", cause, m.Source, m.From, wayBack, err)
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
