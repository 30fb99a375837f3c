package operator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// RestoreInput names the in-place migration whose way back to restore the
// catalog from.
type RestoreInput struct {
	Pointer     string `json:"pointer"`
	MigrationID string `json:"migration_id"`
	// DiscardNewerCommits restores even though the catalog took commits
	// since the migration's batch (they are lost).
	DiscardNewerCommits bool `json:"discard_newer_commits,omitempty"`
	// DryRun checks and reports, and writes nothing but the run's record.
	DryRun  bool   `json:"dry_run,omitempty"`
	Trigger string `json:"trigger,omitempty"`
}

// RestoreOutput says what Restore did, or in a dry run would do.
type RestoreOutput struct {
	RunID   string `json:"run_id"`
	Pointer string `json:"pointer"`
	Catalog string `json:"catalog"`
	WayBack string `json:"way_back"`
	// From is the catalog's format before the restore, To the way back's.
	From   format.Version `json:"from"`
	To     format.Version `json:"to"`
	DryRun bool           `json:"dry_run,omitempty"`
	// NothingToDo: the catalog already holds what the way back holds (the
	// batch never landed).
	NothingToDo bool `json:"nothing_to_do,omitempty"`
	// Digest is the catalog's after the restore: the way back's.
	Digest  string `json:"digest,omitempty"`
	Records uint64 `json:"records,omitempty"`
	Newer   string `json:"newer_commits,omitempty"`
	// Carried: the keys the catalog changed since the batch, carried into
	// the restore (taken down to the way back's format) rather than
	// dropped, when the run pinned the catalog after its batch.
	Carried      int    `json:"carried_keys,omitempty"`
	HistoryError string `json:"history_error,omitempty"`
}

// Restore brings back the catalog an in-place migration left in its new
// format when the run died between the batch and the pointer write (the
// pointer still names the catalog in its old format, so RockLake cannot
// open it): the catalog is restored where it lies from the way back
// (inplace.Restore: one batch, digest checked), holding the pointer's lock
// so that no migration or cleanup runs meanwhile. It refuses, having
// written nothing, unless a claim of this pointer names the way back as
// the migration's, the pointer names the catalog it was copied from in the
// way back's format, and no pointer version ever named the migrated catalog
// (then `rollback` is the way). Commits made to the catalog since the batch
// are refused as rollback refuses them (RollbackLosesCommits) unless
// DiscardNewerCommits. The way back and its claim stay, marked restored:
// cleanup never deletes a way back until a pointer version named the
// migrated catalog and a later run recorded it unneeded.
func Restore(ctx context.Context, env runstate.Env, in RestoreInput) (RestoreOutput, error) {
	start := time.Now()
	out := RestoreOutput{RunID: runstate.NewRunID("s-"), Pointer: in.Pointer, DryRun: in.DryRun}
	if in.Pointer == "" || in.MigrationID == "" {
		return out, fmt.Errorf("%w: a pointer and a migration id are needed", ErrRestoreRefused)
	}
	rec := history.Record{ID: out.RunID, Kind: history.KindRestore, Trigger: runstate.Trigger(in.Trigger), Pointer: in.Pointer, Start: start, State: "Restore"}
	out, err := restore(ctx, env, in, out)
	rec.Source, rec.Target, rec.From, rec.To, rec.Rows = out.WayBack, out.Catalog, out.From, out.To, out.Records
	rec.Notes = []string{"way back of migration " + in.MigrationID}
	outcome := history.Succeeded
	switch {
	case in.DryRun:
		outcome = history.DryRunOK
	case out.NothingToDo:
		outcome = history.NothingToDo
	}
	if out.Newer != "" {
		rec.Notes = append(rec.Notes, "left behind: "+out.Newer)
	}
	out.HistoryError = runstate.RecordOneStateRun(ctx, env, rec, err, outcome)
	return out, err
}

func restore(ctx context.Context, env runstate.Env, in RestoreInput, out RestoreOutput) (_ RestoreOutput, err error) {
	cl, err := claim.Read(ctx, env.Store, in.Pointer, in.MigrationID)
	if err != nil {
		return out, fmt.Errorf("%w: no way back of migration %s is claimed for %s: %w", ErrRestoreRefused, in.MigrationID, in.Pointer, err)
	}
	if cl.Kind != claim.KindWayBack || cl.Pointer != in.Pointer || cl.Source == "" {
		return out, fmt.Errorf("%w: the claim of migration %s is of a %s, not of an in-place migration's way back", ErrRestoreRefused, in.MigrationID, cl.Kind)
	}
	out.WayBack, out.Catalog = cl.Catalog, strings.TrimSuffix(cl.Source, "/")
	if !in.DryRun {
		held, herr := runstate.HoldLock(ctx, env, in.Pointer, out.RunID, history.KindRestore)
		if herr != nil {
			return out, herr
		}
		defer func() {
			rctx, cancel := workflow.Afterwards(ctx, time.Minute)
			defer cancel()
			err = errors.Join(err, lock.Release(rctx, env.Store, held.Pointer, held.MigrationID))
		}()
	} else if active, unknown, _ := lock.Holder(ctx, env.Store, in.Pointer, time.Now()); unknown != "" || active != "" {
		return out, fmt.Errorf("%w: the lock %s is held by %q or cannot be read (%s): a restore waits for the run to end (or `unlock` of a dead one)", lock.ErrInProgress, layout.Lock(in.Pointer), active, unknown)
	}
	cur, err := pointerStillOld(ctx, env, in, cl)
	if err != nil {
		return out, err
	}
	old, err := readState(ctx, env, cl.Catalog, false)
	if err != nil {
		return out, fmt.Errorf("%w: the way back %s: %w", ErrRestoreRefused, cl.Catalog, err)
	}
	out.To = old.version
	if cur.FormatVersion != old.version {
		return out, fmt.Errorf("%w: the pointer says %s is in format %s, the way back %s holds format %s: the pointer was moved since", ErrRestoreRefused, cur.Catalog, cur.FormatVersion, cl.Catalog, old.version)
	}
	now, err := readState(ctx, env, out.Catalog, false)
	if err != nil {
		return out, fmt.Errorf("workflow: restore: read %s: %w", out.Catalog, err)
	}
	out.From = now.version
	if now.version == old.version {
		// Restored already, or written in the old format since: only the
		// keys tell (the two scans a restore in progress does not need).
		if old, err = readState(ctx, env, cl.Catalog, true); err == nil {
			now, err = readState(ctx, env, out.Catalog, true)
		}
		if err != nil {
			return out, fmt.Errorf("workflow: restore: compare %s with its way back: %w", out.Catalog, err)
		}
		if shard.Compare(now.digest, old.digest).Match {
			out.NothingToDo, out.Digest = true, now.digest.Sum()
			return out, nil
		}
		return out, fmt.Errorf("%w: %s is in the way back's format %s already but holds other keys (RockLake wrote to it since): nothing to restore", ErrRestoreRefused, out.Catalog, old.version)
	}
	if now.version != old.version+1 {
		return out, fmt.Errorf("%w: %s is in format %s, not the migration's target %s", ErrRestoreRefused, out.Catalog, now.version, old.version+1)
	}
	// The batch carries writer-epoch and next_snapshot_id over: if they
	// moved, something committed to the migrated catalog since.
	// A run that pinned the catalog after its batch lets the restore carry
	// what it took since (inplace.Marks.Pin).
	carries := cl.Landed != nil && cl.Landed.PinCheckpoint != "" && !in.DiscardNewerCommits
	if now.marks != old.marks {
		out.Newer = fmt.Sprintf("%s moved from writer-epoch %d, next_snapshot_id %d (the way back) to %d, %d since the migration",
			out.Catalog, old.marks.WriterEpoch, old.marks.NextSnapshotID, now.marks.WriterEpoch, now.marks.NextSnapshotID)
		if !in.DiscardNewerCommits && !carries {
			return out, fmt.Errorf("%w: %s; restoring would drop those commits (pass --discard-newer-commits to restore anyway)", workflow.ErrRollbackLosesCommits, out.Newer)
		}
	}
	if in.DryRun {
		return out, nil
	}
	var landed *inplace.Marks
	if l := cl.Landed; l != nil {
		landed = &inplace.Marks{WriterEpoch: l.WriterEpoch, NextSnapshotID: l.NextSnapshotID, Engine: l.Engine}
		if carries {
			landed.Pin = &slatedb.View{Checkpoint: l.PinCheckpoint, WALEnd: l.PinWALEnd}
		}
	} else if !in.DiscardNewerCommits {
		return out, fmt.Errorf("%w: the claim of migration %s has no record of what its batch left (the run died before recording it), so commits made to %s since cannot be ruled out; check the catalog, then pass --discard-newer-commits to restore anyway", ErrRestoreRefused, in.MigrationID, out.Catalog)
	}
	res, err := inplace.Restore(ctx, out.Catalog, cl.Catalog, inplace.RestoreOptions{Current: now.version, Landed: landed, DiscardNewer: in.DiscardNewerCommits, Blob: env.Store, Store: env.SlateDB})
	if err != nil {
		return out, fmt.Errorf("workflow: restore: %w", err)
	}
	out.Digest, out.Records, out.Carried = res.Digest.Sum(), res.Records, res.Carried
	if _, err := claim.Update(ctx, env.Store, in.Pointer, in.MigrationID, func(c *claim.Claim) {
		c.Restored = &claim.Event{By: out.RunID, At: time.Now().UTC(), Note: "digest " + out.Digest}
	}); err != nil {
		return out, fmt.Errorf("workflow: restore: the catalog was restored; recording it on the way back's claim failed: %w", err)
	}
	return out, nil
}

// pointerStillOld refuses a restore once any pointer version named the
// migration's catalog: RockLake may have served it, and `rollback` moves
// the pointer to the way back instead. It returns the current pointer, which
// must name the catalog the way back was copied from.
func pointerStillOld(ctx context.Context, env runstate.Env, in RestoreInput, cl claim.Claim) (pointer.Pointer, error) {
	if cl.Named != nil {
		return pointer.Pointer{}, fmt.Errorf("%w: pointer version %s named the catalog migration %s made: use rollback", ErrRestoreRefused, cl.Named.PointerVersionID, in.MigrationID)
	}
	hist, err := pointer.History(ctx, env.Store, in.Pointer)
	if err != nil {
		return pointer.Pointer{}, fmt.Errorf("%w: the pointer's history cannot be read, so whether it ever named the migrated catalog is unknown: %w", ErrRestoreRefused, err)
	}
	for _, v := range hist {
		switch {
		case v.DeleteMarker:
		case v.Pointer == nil:
			return pointer.Pointer{}, fmt.Errorf("%w: version %s of the pointer is not a valid pointer (%s)", ErrRestoreRefused, v.VersionID, v.Problem)
		case v.Pointer.MigrationID == in.MigrationID:
			return pointer.Pointer{}, fmt.Errorf("%w: pointer version %s was written by migration %s: use rollback", ErrRestoreRefused, v.VersionID, in.MigrationID)
		}
	}
	cur, _, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return cur, err
	}
	if strings.TrimSuffix(cur.Catalog, "/") != strings.TrimSuffix(cl.Source, "/") {
		return cur, fmt.Errorf("%w: the pointer names %s, not %s, whose way back %s is", ErrRestoreRefused, cur.Catalog, cl.Source, cl.Catalog)
	}
	return cur, nil
}

// catalogState is a catalog's format, digest and marks.
type catalogState struct {
	version format.Version
	digest  ndjson.Digest
	marks   pointer.Marks
}

// readState reads the catalog at url, in whatever format it is: its
// version and marks, and with digest its keys' digest (a full scan).
func readState(ctx context.Context, env runstate.Env, url string, digest bool) (catalogState, error) {
	c, err := catalog.Open(ctx, url, catalog.Options{Store: env.SlateDB})
	if err != nil {
		return catalogState{}, err
	}
	defer c.Close()
	st := catalogState{version: c.Version()}
	if st.marks, err = runstate.CatalogMarks(ctx, c); err != nil {
		return st, err
	}
	if digest {
		st.digest, err = shard.DigestCatalog(ctx, c, nil)
	}
	return st, err
}
