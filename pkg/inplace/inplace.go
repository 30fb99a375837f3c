package inplace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// DefaultMaxBytes bounds the transformed catalog (keys and values) that
// Migrate writes in one batch: PeakBytes(DefaultMaxBytes) is about 1.3 GiB.
const DefaultMaxBytes = 32 << 20

// The memory a process needs to migrate in place, at worst: Migrate (the
// batch is held several times over: the Go batch, SlateDB's WriteBatch, its
// WAL buffer and memtable), then Restore (the undo after a failed pointer
// write, a second batch), in one process, is about PeakBaseBytes +
// PeakPerByte times the transformed bytes. Measured with BenchmarkPeakRSS
// on 2026-12-03 (peak RSS after Restore: 167 MiB at 3.3 MiB transformed,
// 391 MiB at 9.8 MiB, 754 MiB at 20.0 MiB: 35 bytes per byte over 55 MiB)
// and by scripts/bench-inplace.sh (2646 MiB at 68.7 MiB: 38 per byte):
// the larger slope, and room above the base.
const (
	PeakBaseBytes = 64 << 20
	PeakPerByte   = 38
)

// PeakBytes is the memory an in-place migration with limit maxBytes (0:
// DefaultMaxBytes) may need.
func PeakBytes(maxBytes int64) int64 {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	return PeakBaseBytes + PeakPerByte*maxBytes
}

// MaxBytesFor is the largest limit whose peak fits in memory bytes with a
// tenth of them to spare (a Lambda's memory holds its runtime too); 0 if
// none does.
func MaxBytesFor(memory int64) int64 {
	usable := memory - memory/10
	if usable <= PeakBaseBytes {
		return 0
	}
	return (usable - PeakBaseBytes) / PeakPerByte
}

// The package's named errors (errname).
var (
	// ErrTooLarge: the catalog is too big for one batch; nothing was
	// written. Use Strategy B.
	ErrTooLarge = errname.New("inplace", "InPlaceTooLarge", "")
	// ErrNoWayBack: the migration has no way back (its copy is gone).
	ErrNoWayBack = errname.New("inplace", "InPlaceNoWayBack", "")
	// ErrWayBackTaken: the place where the way back is copied holds
	// something already.
	ErrWayBackTaken = errname.New("inplace", "InPlaceWayBackTaken", "")
	// ErrOutcomeUnknown: the batch's write failed and whether it landed
	// could not be read back; the checkpoint is kept.
	ErrOutcomeUnknown = errname.New("inplace", "InPlaceOutcomeUnknown", "")
	// ErrCatalogMoved: the catalog took commits after the migration's batch
	// (a new RockLake binary opens it by URL as soon as it is in the new
	// format), so restoring it from its way back would wipe them; nothing
	// was restored, and the catalog and its way back are both kept.
	ErrCatalogMoved = errname.New("inplace", "InPlaceCatalogMoved", "")
	// ErrUndoUndecided: whether the catalog may be restored cannot be
	// proven (what the batch left is unknown, the pointer cannot be read,
	// or it names the catalog in a format nobody restores to); nothing was
	// restored, and the catalog and its way back are both kept.
	ErrUndoUndecided = errname.New("inplace", "InPlaceUndoUndecided", "")
)

// Options say what Migrate does.
type Options struct {
	// To is the format to reach.
	To format.Version
	// UnknownTags is the policy for records of tags this binary does not
	// know (DESIGN 2.3): fail (the default) refuses before anything is
	// written, listing each tag and its count.
	UnknownTags migration.UnknownTags
	// MaxBytes bounds the transformed catalog (0: DefaultMaxBytes).
	MaxBytes int64
	// DryRun transforms and measures the catalog through a reader and
	// writes nothing anywhere: no fence, no checkpoint, no batch.
	DryRun bool
	// MigrationID names the checkpoint the way back is copied from
	// (layout.InPlaceCheckpoint).
	MigrationID string
	// WayBack is where the catalog as it was is copied before the batch:
	// an empty place in the same bucket or file system (the workflow puts
	// it beside the catalog, layout.WayBack). Required unless DryRun.
	WayBack string
	// Blob deletes a way back that could not be completed.
	Blob *blob.Store
	// Store tunes SlateDB's object-store access.
	Store slatedb.Options
}

// Result is what Migrate did, or in a dry run would do.
type Result struct {
	Catalog string         `json:"catalog"`
	From    format.Version `json:"from"`
	To      format.Version `json:"to"`
	DryRun  bool           `json:"dry_run,omitempty"`
	// Records is the number of keys the migrated catalog holds; Deleted the
	// number of old-format keys the batch deleted.
	Records uint64 `json:"records"`
	Deleted uint64 `json:"deleted"`
	// Bytes is the size of the transformed catalog (keys and values): what
	// MaxBytes bounds. BatchBytes is the encoded batch, deletes included.
	Bytes      int64 `json:"bytes"`
	BatchBytes int   `json:"batch_bytes,omitempty"`
	// Digest is the migrated catalog's, read back after the batch (in a
	// dry run, that of the records a real run would write); it equals the
	// digest of a Strategy B migration of the same source.
	Digest ndjson.Digest `json:"digest"`
	// WayBack is the catalog as it was before the batch, copied: rolling
	// back makes the pointer name it.
	WayBack *WayBack `json:"way_back,omitempty"`
	// Landed is what the batch left, recorded as soon as it landed (nil if
	// it did not, or if that could not be recorded): Restore refuses a
	// catalog whose marks moved since.
	Landed *Marks `json:"landed,omitempty"`
	// Carried and Dropped count the records of unknown tags, by tag.
	Carried map[format.Tag]uint64 `json:"carried,omitempty"`
	Dropped map[format.Tag]uint64 `json:"dropped,omitempty"`
}

// beforeCommit, when set (by tests), runs after the batch is built and
// before it is written: where a crash or an interruption hurts most.
var beforeCommit func()

// Migrate migrates the catalog at url in place to opts.To (see the package
// doc). It refuses, having written nothing, a catalog in another format than
// the one before opts.To (FormatVersionMismatch), one with unknown tags
// under the fail policy, and one larger than opts.MaxBytes (ErrTooLarge).
// After the batch it reads the catalog back: its digest must equal the
// records written (shard.ErrMismatch otherwise; roll back then).
func Migrate(ctx context.Context, url string, opts Options) (Result, error) {
	res := Result{Catalog: url, To: opts.To, DryRun: opts.DryRun}
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	if !format.Supported(opts.To) || opts.To < 2 {
		return res, fmt.Errorf("inplace: migrate %s: target %w %d", url, format.ErrUnsupportedVersion, uint64(opts.To))
	}
	if !opts.DryRun && (opts.MigrationID == "" || opts.WayBack == "" || opts.Blob == nil) {
		return res, fmt.Errorf("inplace: migrate %s: a migration id, a place for the way back and a blob store are needed", url)
	}
	res.From = opts.To - 1
	path, err := migration.Path(res.From, opts.To)
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: %w", url, err)
	}
	// The first pass, through a reader: the refusals, before anything is
	// fenced or written.
	t, err := measure(ctx, url, res.From, path, opts)
	if err != nil {
		return res, err
	}
	res.fill(t)
	if err := wayBackFree(ctx, opts); err != nil {
		return res, fmt.Errorf("inplace: migrate %s: %w", url, err)
	}
	if opts.DryRun {
		return res, nil
	}

	so := opts.Store
	so.Passive = true // fencing, the checkpoint and the batch: nothing else
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: res.From, Store: so})
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: %w", url, err)
	}
	defer w.Close()
	// The second pass, through the writer, sees everything, RockLake's last
	// WAL writes included; nobody writes now.
	var dels, puts, version slatedb.Batch
	var before ndjson.Digest
	// RockLake's marks as the batch writes them, taken from the batch
	// itself: a RockLake writer that opens the catalog the moment the
	// batch lands moves them, whenever Migrate gets to look.
	var marks Marks
	var markErr error
	epochKey, nextKey := string(format.SystemKey(format.SystemWriterEpoch)), string(format.CounterKey(opts.To, format.NameNextSnapshotID))
	t, err = transformAll(ctx, w.Catalog, path, opts, func(oldKey, oldValue []byte, recs []ndjson.Record) {
		before.AddRaw(oldKey, oldValue)
		dels.Delete(oldKey)
		for _, r := range recs {
			k, v := r.Raw()
			switch string(k) {
			case string(format.FormatVersionKey()):
				version.Put(k, v) // last, for whoever reads the batch
				continue
			case epochKey, nextKey:
				n, derr := format.DecodeCounter(opts.To, v)
				markErr = errors.Join(markErr, derr)
				if string(k) == epochKey {
					marks.WriterEpoch = n
				} else {
					marks.NextSnapshotID = n
				}
			}
			puts.Put(k, v)
		}
	})
	if err == nil && markErr != nil {
		err = fmt.Errorf("inplace: migrate %s: the new catalog's writer-epoch or next_snapshot_id: %w; nothing was written", url, markErr)
	}
	if err != nil {
		return res, err
	}
	res.fill(t)
	wb, err := makeWayBack(ctx, w, url, before, opts)
	res.WayBack = wb
	if err != nil {
		return res, err
	}
	dels.Append(&puts)
	puts = slatedb.Batch{}
	dels.Append(&version)
	res.BatchBytes = dels.Size()
	if beforeCommit != nil {
		beforeCommit()
	}
	if err := ctx.Err(); err != nil {
		return res, dropWayBack(url, opts, "", fmt.Errorf("inplace: migrate %s: interrupted before the batch: %w", url, err))
	}
	switch o, err := write(ctx, w, &dels, url, res.From, opts.To, so); {
	case o == unchanged && err != nil:
		return res, dropWayBack(url, opts, "", err)
	case o == unknown:
		return res, fmt.Errorf("%w (the way back is %s)", err, opts.WayBack)
	case err != nil: // it landed all the same: the read-back decides
		slog.WarnContext(ctx, "the batch landed although its write failed", "catalog", url, "error", err)
	}
	res.Landed = landedMarks(ctx, url, marks, opts.Blob)
	got, err := readBack(ctx, url, opts.To, opts.Store)
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: the batch landed; reading it back: %w (the way back is %s)", url, err, opts.WayBack)
	}
	if cmp := shard.Compare(got, t.stats.Digest); !cmp.Match {
		return res, fmt.Errorf("%w: %s after the batch: %v (the way back is %s: roll back)", shard.ErrMismatch, url, cmp.Diff, opts.WayBack)
	}
	res.Digest = got
	slog.InfoContext(ctx, "migrated in place", "catalog", url, "from", res.From, "to", opts.To,
		"records", res.Records, "bytes", res.Bytes, "way_back", opts.WayBack)
	return res, nil
}

// landedMarks completes the batch's marks with the catalog's SlateDB state,
// listed at once (on a fresh context: the undo needs them most when the
// caller's context is what failed). A writer that opens between the batch's
// close and this listing is taken for the batch's own state unless it moves
// RockLake's marks, which come from the batch. Without them (nil) the undo
// restores nothing.
func landedMarks(ctx context.Context, url string, m Marks, store *blob.Store) *Marks {
	fresh, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	var err error
	if m.Engine, err = EngineState(fresh, store, url); err != nil {
		slog.WarnContext(ctx, "what the batch left could not be recorded: an undo will restore nothing", "catalog", url, "error", err)
		return nil
	}
	return &m
}

// WayBack is the catalog as it was before the migration, copied.
type WayBack struct {
	// Catalog is the copy's URL (Options.WayBack).
	Catalog string `json:"catalog"`
	// Objects and Bytes: what was copied (SSTs, WAL files, the manifest).
	Objects int   `json:"objects"`
	Bytes   int64 `json:"bytes"`
	// Digest is the copy's, read back; it equals the source's before the
	// batch.
	Digest ndjson.Digest `json:"digest"`
}

// makeWayBack copies the catalog, as w (which fenced every other writer)
// sees it, to opts.WayBack: a checkpoint of it, the checkpoint copied to a
// database of its own (slatedb.CopyCheckpoint, server side), the copy read
// back (its digest must be want, the source's), and the checkpoint deleted
// (the copy holds all it held). On failure nothing of it is left: the copy's
// objects are deleted, and so is the checkpoint.
func makeWayBack(ctx context.Context, w *catalog.Writer, url string, want ndjson.Digest, opts Options) (*WayBack, error) {
	made := false // whether the copy wrote anything: only then is it deleted
	var checkpoint string
	fail := func(err error) (*WayBack, error) {
		if !made {
			opts.WayBack = ""
		}
		return nil, dropWayBack(url, opts, checkpoint, fmt.Errorf("inplace: migrate %s: the way back %s: %w; nothing was migrated", url, opts.WayBack, err))
	}
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: layout.InPlaceCheckpoint(opts.MigrationID)})
	if err != nil {
		return fail(err)
	}
	checkpoint = cp.ID
	copied, err := slatedb.CopyCheckpoint(ctx, url, cp.ID, opts.WayBack, opts.Store)
	// Its refusals (a destination that is not empty, say) write nothing.
	made = !errors.Is(err, slatedb.ErrInvalid)
	if err != nil {
		return fail(err)
	}
	wb := &WayBack{Catalog: opts.WayBack, Objects: copied.Objects, Bytes: copied.Bytes}
	c, err := catalog.Open(ctx, opts.WayBack, catalog.Options{Expect: opts.To - 1, Store: opts.Store})
	if err != nil {
		return fail(err)
	}
	wb.Digest, err = shard.DigestCatalog(ctx, c, nil)
	c.Close()
	if err != nil {
		return fail(err)
	}
	if cmp := shard.Compare(wb.Digest, want); !cmp.Match {
		return fail(fmt.Errorf("%w: the copy differs from the catalog: %v", shard.ErrMismatch, cmp.Diff))
	}
	if err := slatedb.DeleteCheckpoint(ctx, url, cp.ID, opts.Store); err != nil {
		return fail(fmt.Errorf("delete the checkpoint it was copied from: %w", err))
	}
	return wb, nil
}

// measure is the first pass: the catalog at url (format from) transformed
// along path through a reader, measured, nothing written; past
// opts.MaxBytes, ErrTooLarge.
func measure(ctx context.Context, url string, from format.Version, path []migration.Conversion, opts Options) (tally, error) {
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: from, Store: opts.Store})
	if err != nil {
		return tally{}, fmt.Errorf("inplace: migrate %s: %w", url, err)
	}
	defer c.Close()
	return transformAll(ctx, c, path, opts, nil)
}

// Fits says whether the catalog at url, migrated to opts.To, stays within
// opts.MaxBytes (0: DefaultMaxBytes), and how many bytes it measured (at
// most a key's worth past the limit: the pass stops there). It reads
// through a reader and writes nothing: the workflow's choice of strategy.
func Fits(ctx context.Context, url string, opts Options) (fits bool, bytes int64, err error) {
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = DefaultMaxBytes
	}
	path, err := migration.Path(opts.To-1, opts.To)
	if err != nil {
		return false, 0, fmt.Errorf("inplace: %s: %w", url, err)
	}
	t, err := measure(ctx, url, opts.To-1, path, opts)
	switch {
	case errors.Is(err, ErrTooLarge):
		return false, t.bytes, nil
	case err != nil:
		return false, t.bytes, err
	}
	return true, t.bytes, nil
}

func (r *Result) fill(t tally) {
	r.Records, r.Deleted, r.Bytes, r.Digest = t.stats.RecordsOut, t.keys, t.bytes, t.stats.Digest
	r.Carried, r.Dropped = t.stats.Carried, t.stats.Dropped
}

// outcome is what became of a batch.
type outcome int

const (
	unchanged outcome = iota // it did not land: the catalog is as it was
	landed                   // it landed, whole
	unknown                  // nobody can tell now
)

// write writes b through w, durably, and closes w. If the write fails, the
// batch may still have landed (a write interrupted while it waits for the
// upload is uploaded when the writer closes), so the catalog's format
// version, which the batch changes from before to after, says what
// happened.
func write(ctx context.Context, w *catalog.Writer, b *slatedb.Batch, url string, before, after format.Version, so slatedb.Options) (outcome, error) {
	werr := w.Write(ctx, b)
	if werr == nil {
		if err := w.CloseContext(ctx); err != nil {
			return landed, fmt.Errorf("inplace: %s: close after the batch: %w (the batch is durable)", url, err)
		}
		return landed, nil
	}
	fresh, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = w.CloseContext(fresh) // flushes whatever of the batch the engine took
	v, err := versionOf(fresh, url, so)
	switch {
	case err != nil:
		return unknown, fmt.Errorf("%w: %s: the batch's write failed (%w) and the catalog's version cannot be read (%w)", ErrOutcomeUnknown, url, werr, err)
	case v == before:
		return unchanged, fmt.Errorf("inplace: %s: the batch's write failed and nothing changed: %w", url, werr)
	case v == after:
		return landed, fmt.Errorf("inplace: %s: the batch landed although its write reported %w; the catalog is format %s", url, werr, after)
	default:
		return unknown, fmt.Errorf("%w: %s: the batch's write failed (%w) and the catalog is now format %s", ErrOutcomeUnknown, url, werr, v)
	}
}

// cleanupTimeout bounds the work after a failure, on a fresh context.
const cleanupTimeout = 2 * time.Minute

// versionOf reads the catalog's format version, whatever it is.
func versionOf(ctx context.Context, url string, so slatedb.Options) (format.Version, error) {
	c, err := catalog.Open(ctx, url, catalog.Options{Store: so})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return c.Version(), nil
}

// wayBackFree refuses a way back whose place holds anything (ErrWayBackTaken):
// it is never written over, nor deleted after a failure.
func wayBackFree(ctx context.Context, opts Options) error {
	if opts.WayBack == "" || opts.Blob == nil {
		return nil // a dry run told no place
	}
	objs, err := opts.Blob.List(ctx, strings.TrimSuffix(opts.WayBack, "/")+"/")
	if err != nil {
		return fmt.Errorf("the way back's place %s: %w", opts.WayBack, err)
	}
	if len(objs) > 0 {
		return fmt.Errorf("%w: %s holds %d objects (%s first); nothing was written", ErrWayBackTaken, opts.WayBack, len(objs), objs[0].URL)
	}
	return nil
}

// dropWayBack deletes what a migration that changed nothing made of its way
// back (the copy's objects, unless opts.WayBack is empty; the checkpoint it
// was copied from, unless checkpoint is empty: after the copy it is gone
// already), on a fresh context (the caller's may be what failed), and
// returns cause with what it could not delete.
func dropWayBack(url string, opts Options, checkpoint string, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var left []string
	if opts.WayBack != "" {
		if _, err := opts.Blob.DeletePrefix(ctx, strings.TrimSuffix(opts.WayBack, "/")+"/"); err != nil {
			left = append(left, fmt.Sprintf("the copy %s (%v)", opts.WayBack, err))
		}
	}
	if checkpoint != "" {
		if err := slatedb.DeleteCheckpoint(ctx, url, checkpoint, opts.Store); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
			left = append(left, fmt.Sprintf("checkpoint %s (%v)", checkpoint, err))
		}
	}
	if len(left) > 0 {
		return fmt.Errorf("%w; left (the drift check reports them): %s", cause, strings.Join(left, "; "))
	}
	return cause
}

// readBack is the digest of the catalog at url, opened expecting format v
// (shard.DigestCatalog: raw keys and values, hashed on every CPU).
func readBack(ctx context.Context, url string, v format.Version, so slatedb.Options) (ndjson.Digest, error) {
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: v, Store: so})
	if err != nil {
		return ndjson.Digest{}, err
	}
	defer c.Close()
	return shard.DigestCatalog(ctx, c, nil)
}
