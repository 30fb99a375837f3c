package inplace

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// RestoreOptions say what Restore does.
type RestoreOptions struct {
	// Current is the format the catalog has now (the migration's target);
	// a catalog in another format is refused, having written nothing.
	Current format.Version
	// Landed is what the migration's batch left (Result.Landed). Restore
	// refuses, having written nothing, a catalog whose marks moved since
	// (ErrCatalogMoved), and without them restores nothing
	// (ErrUndoUndecided): it restores only a catalog it can prove is still
	// the batch's.
	Landed *Marks
	// DiscardNewer: the operator chose to drop whatever the catalog took
	// since the batch (restore --discard-newer-commits); Landed is not
	// compared.
	DiscardNewer bool
	// Blob lists the catalog's SlateDB objects (EngineState).
	Blob  *blob.Store
	Store slatedb.Options
}

// RestoreResult is what Restore did.
type RestoreResult struct {
	Catalog string         `json:"catalog"`
	WayBack string         `json:"way_back"`
	From    format.Version `json:"from"` // the format restored from
	To      format.Version `json:"to"`   // the way back's, restored
	Records uint64         `json:"records"`
	Deleted uint64         `json:"deleted"`
	Bytes   int64          `json:"bytes"`
	Digest  ndjson.Digest  `json:"digest"`
	// Carried is how many keys the catalog changed since the batch that
	// the restore carried (Marks.Pin).
	Carried int `json:"carried,omitempty"`
}

// sinceBatch is what the catalog at url (format current) changed since the
// batch's pin, taken down to format to: per key of the restored catalog,
// its value, or nil where it is deleted. Unknown tags are carried byte for
// byte, as they stood.
func sinceBatch(ctx context.Context, url string, pin slatedb.View, current, to format.Version, so slatedb.Options) (map[string][]byte, int, error) {
	now, err := slatedb.TakeView(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour, Name: layout.RestoreCheckpoint}, so)
	if err != nil {
		return nil, 0, err
	}
	defer slatedb.DeleteCheckpoint(context.WithoutCancel(ctx), url, now.Checkpoint, so)
	return shard.Changed(ctx, url, pin, now, shard.CatchUpOptions{From: current, To: to, UnknownTags: migration.UnknownCarry, Store: so})
}

// Restore makes the catalog at url what the way back at wayBack holds again,
// where it lies, in one atomic batch through a passive writer (which fences
// any writer, RockLake's included): every key the catalog holds deleted,
// every key of the way back put, byte for byte. It then reads the catalog
// back (its digest must equal the way back's). The workflow restores a
// catalog whose batch landed when the pointer could not follow (the
// pointer still names the catalog in its old format); an operator's
// rollback moves the pointer to the way back instead, at once. A catalog
// that took commits since the batch is refused (ErrCatalogMoved): its
// SlateDB state is compared before the writer opens (opening one moves
// it), RockLake's marks through the writer once it fenced everyone else.
func Restore(ctx context.Context, url, wayBack string, opts RestoreOptions) (RestoreResult, error) {
	res := RestoreResult{Catalog: url, WayBack: wayBack, From: opts.Current}
	old, err := catalog.Open(ctx, wayBack, catalog.Options{Store: opts.Store})
	if err != nil {
		return res, fmt.Errorf("%w: restore %s from %s: %w", ErrNoWayBack, url, wayBack, err)
	}
	defer old.Close()
	res.To = old.Version()
	if res.To >= opts.Current {
		return res, fmt.Errorf("inplace: restore %s: the way back %s holds format %s, not one before %s", url, wayBack, res.To, opts.Current)
	}
	var was Marks
	carry := false // commits since the batch, carried into the restore
	if !opts.DiscardNewer {
		if !opts.Landed.known() || opts.Blob == nil {
			return res, fmt.Errorf("%w: restore %s: what the migration's batch left is unknown, so commits made since cannot be ruled out; nothing was restored", ErrUndoUndecided, url)
		}
		was = *opts.Landed
		engine, err := EngineState(ctx, opts.Blob, url)
		if err != nil {
			return res, fmt.Errorf("%w: restore %s: %w; nothing was restored", ErrUndoUndecided, url, err)
		}
		if d := moved(was, was.WriterEpoch, was.NextSnapshotID, engine); d != "" {
			if was.Pin == nil {
				return res, fmt.Errorf("%w: %s after the migration's batch: %s; nothing was restored", ErrCatalogMoved, url, d)
			}
			carry = true
		}
	}
	so := opts.Store
	so.Passive = true
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: opts.Current, Store: so})
	if err != nil {
		return res, fmt.Errorf("inplace: restore %s: %w", url, err)
	}
	defer w.Close()
	// A RockLake writer that opened between the listing and this writer
	// moved writer-epoch; this writer fenced it, so nothing moves now.
	epoch, next, err := w.Catalog.Marks(ctx)
	if err != nil {
		return res, fmt.Errorf("%w: restore %s: %w; nothing was restored", ErrUndoUndecided, url, err)
	}
	if d := moved(was, epoch, next, ""); d != "" && !opts.DiscardNewer {
		if was.Pin == nil {
			return res, fmt.Errorf("%w: %s after the migration's batch: %s; nothing was restored", ErrCatalogMoved, url, d)
		}
		carry = true
	}
	// This writer fenced every other: what the catalog took since the
	// batch's pin is fixed now, and goes into the restore in the way
	// back's format (each key's value since, or its deletion).
	var carried map[string][]byte
	if carry {
		if carried, res.Carried, err = sinceBatch(ctx, url, *was.Pin, opts.Current, res.To, opts.Store); err != nil {
			return res, fmt.Errorf("%w: %s after the migration's batch took commits, which cannot be carried into the restore (%w); nothing was restored", ErrCatalogMoved, url, err)
		}
	}
	var b, puts slatedb.Batch
	for e, err := range w.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return res, fmt.Errorf("inplace: restore %s: %w", url, err)
		}
		b.Delete(e.Key)
		res.Deleted++
	}
	var want ndjson.Digest
	for e, err := range old.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return res, fmt.Errorf("inplace: restore %s: read the way back %s: %w", url, wayBack, err)
		}
		if _, ok := carried[string(e.Key)]; ok {
			continue // carried: its value since the batch, below
		}
		want.AddRaw(e.Key, e.Value)
		res.Records++
		res.Bytes += int64(len(e.Key) + len(e.Value))
		puts.Put(e.Key, e.Value)
	}
	for k, v := range carried {
		if v == nil {
			continue
		}
		want.AddRaw([]byte(k), v)
		res.Records++
		res.Bytes += int64(len(k) + len(v))
		puts.Put([]byte(k), v)
	}
	b.Append(&puts)
	puts = slatedb.Batch{}
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("inplace: restore %s: interrupted before the batch, nothing changed: %w", url, err)
	}
	if _, err := write(ctx, w, &b, url, opts.Current, res.To, so); err != nil {
		return res, fmt.Errorf("inplace: restore %s: %w", url, err)
	}
	got, err := readBack(ctx, url, res.To, opts.Store)
	if err != nil {
		return res, fmt.Errorf("inplace: restore %s: the batch landed; reading it back: %w", url, err)
	}
	if cmp := shard.Compare(got, want); !cmp.Match {
		return res, fmt.Errorf("%w: %s after the restore differs from its way back %s: %v", shard.ErrMismatch, url, wayBack, cmp.Diff)
	}
	res.Digest = got
	slog.InfoContext(ctx, "restored in place", "catalog", url, "from", opts.Current, "to", res.To, "records", res.Records, "way_back", wayBack)
	return res, nil
}
