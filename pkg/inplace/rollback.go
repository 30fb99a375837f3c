package inplace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// RollbackOptions say what Rollback does.
type RollbackOptions struct {
	// MigrationID is the in-place migration to undo: its checkpoint
	// (CheckpointName) holds the catalog as it was before.
	MigrationID string
	// Current is the format the catalog has now (the migration's target);
	// a catalog in another format is refused, having written nothing.
	Current format.Version
	// MaxBytes bounds the restored catalog; 0: no bound, since the way back
	// must not be refused for a size the migration itself was allowed.
	MaxBytes int64
	// DryRun checks and measures, and writes nothing.
	DryRun bool
	Store  slatedb.Options
}

// RollbackResult is what Rollback did, or in a dry run would do.
type RollbackResult struct {
	Catalog string         `json:"catalog"`
	From    format.Version `json:"from"` // the format rolled back from
	To      format.Version `json:"to"`   // the checkpoint's, restored
	DryRun  bool           `json:"dry_run,omitempty"`
	// Checkpoint is the one restored; deleted after a rollback that
	// verified (CheckpointError says why it was not).
	Checkpoint      string        `json:"checkpoint"`
	Records         uint64        `json:"records"` // keys restored
	Deleted         uint64        `json:"deleted"` // keys the batch deleted
	Bytes           int64         `json:"bytes"`
	Digest          ndjson.Digest `json:"digest"`
	CheckpointError string        `json:"checkpoint_error,omitempty"`
}

// FindCheckpoint returns the checkpoint of in-place migration id on the
// catalog at url, or ErrNoWayBack.
func FindCheckpoint(ctx context.Context, url, migrationID string, so slatedb.Options) (slatedb.Checkpoint, error) {
	cps, err := slatedb.ListCheckpoints(ctx, url, so)
	if err != nil {
		return slatedb.Checkpoint{}, fmt.Errorf("inplace: checkpoints of %s: %w", url, err)
	}
	for _, cp := range cps {
		if cp.Name == CheckpointName(migrationID) {
			return cp, nil
		}
	}
	return slatedb.Checkpoint{}, fmt.Errorf("%w: %s holds no checkpoint %q of migration %s (deleted by a cleanup, or the migration was not in place)", ErrNoWayBack, url, CheckpointName(migrationID), migrationID)
}

// Rollback makes the catalog at url what the checkpoint of migration
// opts.MigrationID holds again, in one atomic batch through a passive writer
// (which fences any writer, RockLake's included): every key the catalog holds
// now deleted, every key of the checkpoint put back, byte for byte. It then
// reads the catalog back (its digest must equal the checkpoint's) and
// deletes the checkpoint. Commits made to the catalog since the migration
// are lost: the caller checks for them first.
func Rollback(ctx context.Context, url string, opts RollbackOptions) (RollbackResult, error) {
	res := RollbackResult{Catalog: url, From: opts.Current, DryRun: opts.DryRun}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = math.MaxInt64
	}
	cp, err := FindCheckpoint(ctx, url, opts.MigrationID, opts.Store)
	if err != nil {
		return res, err
	}
	res.Checkpoint = cp.ID
	// The catalog as the checkpoint holds it, with the startup check: it
	// must be a catalog this binary knows, in the format before Current.
	old, err := catalog.Open(ctx, url, catalog.Options{Checkpoint: cp.ID, Store: opts.Store})
	if err != nil {
		return res, fmt.Errorf("inplace: rollback %s: the checkpoint %s: %w", url, cp.ID, err)
	}
	defer old.Close()
	res.To = old.Version()
	if res.To >= opts.Current {
		return res, fmt.Errorf("inplace: rollback %s: the checkpoint %s holds format %s, not one before %s", url, cp.ID, res.To, opts.Current)
	}
	var want ndjson.Digest
	if err := restore(ctx, old, opts.MaxBytes, func(k, v []byte) {
		want.AddRaw(k, v)
		res.Records++
		res.Bytes += int64(len(k) + len(v))
	}); err != nil {
		return res, err
	}
	res.Digest = want
	if opts.DryRun {
		// The current catalog, checked as the real run would open it.
		c, err := catalog.Open(ctx, url, catalog.Options{Expect: opts.Current, Store: opts.Store})
		if err != nil {
			return res, fmt.Errorf("inplace: rollback %s: %w", url, err)
		}
		return res, c.Close()
	}

	so := opts.Store
	so.Passive = true
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: opts.Current, Store: so})
	if err != nil {
		return res, fmt.Errorf("inplace: rollback %s: %w", url, err)
	}
	defer w.Close()
	var b, puts slatedb.Batch
	for e, err := range w.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return res, fmt.Errorf("inplace: rollback %s: %w", url, err)
		}
		b.Delete(e.Key)
		res.Deleted++
	}
	if err := restore(ctx, old, opts.MaxBytes, puts.Put); err != nil {
		return res, err
	}
	b.Append(&puts)
	puts = slatedb.Batch{}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("inplace: rollback %s: interrupted before the batch, nothing changed: %w", url, err)
	}
	if _, err := write(ctx, w, &b, url, opts.Current, res.To, so); err != nil {
		return res, fmt.Errorf("inplace: rollback %s: %w (the checkpoint %s is kept)", url, err, cp.ID)
	}
	got, err := readBack(ctx, url, res.To, opts.Store)
	if err != nil {
		return res, fmt.Errorf("inplace: rollback %s: the batch landed; reading it back: %w (the checkpoint %s is kept)", url, err, cp.ID)
	}
	if cmp := shard.Compare(got, want); !cmp.Match {
		return res, fmt.Errorf("%w: %s after the rollback differs from its checkpoint %s: %v", shard.ErrMismatch, url, cp.ID, cmp.Diff)
	}
	if err := slatedb.DeleteCheckpoint(ctx, url, cp.ID, opts.Store); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
		res.CheckpointError = err.Error()
	}
	slog.InfoContext(ctx, "rolled back in place", "catalog", url, "from", opts.Current, "to", res.To, "records", res.Records, "checkpoint", cp.ID)
	return res, nil
}

// restore hands every key and value of the checkpoint's catalog to put, past
// max bytes refusing with ErrTooLarge.
func restore(ctx context.Context, old *catalog.Catalog, max int64, put func(k, v []byte)) error {
	var n int64
	for e, err := range old.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return fmt.Errorf("inplace: rollback %s: read the checkpoint: %w", old.URL(), err)
		}
		if n += int64(len(e.Key) + len(e.Value)); n > max {
			return fmt.Errorf("%w: %s: its checkpoint holds more than %d bytes (--in-place-max-bytes); nothing was written", ErrTooLarge, old.URL(), max)
		}
		put(e.Key, e.Value)
	}
	return nil
}
