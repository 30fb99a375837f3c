package inplace

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// DefaultMaxBytes bounds the transformed catalog (keys and values) that
// Migrate writes in one batch. The batch is held in memory several times
// over (the Go batch, SlateDB's WriteBatch, its WAL buffer and memtable):
// peak RSS measured about 60 MiB + 33 times the transformed bytes on
// RockLake's key mix (README, Performance), so 32 MiB keeps a migration near
// 1 GiB.
const DefaultMaxBytes = 32 << 20

var (
	// ErrTooLarge: the catalog is too big for one batch; nothing was
	// written. Use Strategy B.
	ErrTooLarge = errors.New("InPlaceTooLarge")
	// ErrNoWayBack: the catalog has no checkpoint of the migration to roll
	// back to.
	ErrNoWayBack = errors.New("InPlaceNoWayBack")
	// ErrOutcomeUnknown: the batch's write failed and whether it landed
	// could not be read back; the checkpoint is kept.
	ErrOutcomeUnknown = errors.New("InPlaceOutcomeUnknown")
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
	// MigrationID names the checkpoint (CheckpointName), so that Rollback
	// finds it.
	MigrationID string
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
	// Checkpoint is the way back: the SlateDB checkpoint of the catalog as
	// it was before the batch (kept until a rollback or a cleanup deletes it).
	Checkpoint string `json:"checkpoint,omitempty"`
	// Carried and Dropped count the records of unknown tags, by tag.
	Carried map[format.Tag]uint64 `json:"carried,omitempty"`
	Dropped map[format.Tag]uint64 `json:"dropped,omitempty"`
}

// CheckpointName is the name of migration id's checkpoint, the way back.
func CheckpointName(migrationID string) string { return "rocklake-migrate-inplace-" + migrationID }

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
	if opts.MigrationID == "" && !opts.DryRun {
		return res, fmt.Errorf("inplace: migrate %s: a migration id is needed to name the way back", url)
	}
	res.From = opts.To - 1
	path, err := migration.Path(res.From, opts.To)
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: %w", url, err)
	}
	// The first pass, through a reader: the refusals, before anything is
	// fenced or written.
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: res.From, Store: opts.Store})
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: %w", url, err)
	}
	t, err := transformAll(ctx, c, path, opts, nil)
	c.Close()
	if err != nil {
		return res, err
	}
	res.fill(t)
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
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: CheckpointName(opts.MigrationID)})
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: the way back: %w", url, err)
	}
	res.Checkpoint = cp.ID
	// The second pass, through the writer, sees everything, RockLake's last
	// WAL writes included; nobody writes now.
	var dels, puts, version slatedb.Batch
	t, err = transformAll(ctx, w.Catalog, path, opts, func(old []byte, recs []ndjson.Record) {
		dels.Delete(old)
		for _, r := range recs {
			k, v := r.Raw()
			if string(k) == string(format.FormatVersionKey()) {
				version.Put(k, v) // last, for whoever reads the batch
				continue
			}
			puts.Put(k, v)
		}
	})
	if err != nil {
		return res, dropCheckpoint(url, cp.ID, so, err)
	}
	res.fill(t)
	dels.Append(&puts)
	puts = slatedb.Batch{}
	dels.Append(&version)
	res.BatchBytes = dels.Size()
	if beforeCommit != nil {
		beforeCommit()
	}
	if err := ctx.Err(); err != nil {
		return res, dropCheckpoint(url, cp.ID, so, fmt.Errorf("inplace: migrate %s: interrupted before the batch: %w", url, err))
	}
	switch o, err := write(ctx, w, &dels, url, res.From, opts.To, so); {
	case o == unchanged && err != nil:
		return res, dropCheckpoint(url, cp.ID, so, err)
	case o == unknown:
		return res, fmt.Errorf("%w (the way back is checkpoint %s)", err, cp.ID)
	case err != nil: // it landed all the same: the read-back decides
		slog.WarnContext(ctx, "the batch landed although its write failed", "catalog", url, "error", err)
	}
	got, err := readBack(ctx, url, opts.To, opts.Store)
	if err != nil {
		return res, fmt.Errorf("inplace: migrate %s: the batch landed; reading it back: %w (the way back is checkpoint %s)", url, err, cp.ID)
	}
	if cmp := shard.Compare(got, t.stats.Digest); !cmp.Match {
		return res, fmt.Errorf("%w: %s after the batch: %v (the way back is checkpoint %s: roll back)", shard.ErrMismatch, url, cmp.Diff, cp.ID)
	}
	res.Digest = got
	slog.InfoContext(ctx, "migrated in place", "catalog", url, "from", res.From, "to", opts.To,
		"records", res.Records, "bytes", res.Bytes, "checkpoint", cp.ID)
	return res, nil
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

// dropCheckpoint deletes the way back of a migration that changed nothing,
// on a fresh context (the caller's may be what failed), and returns cause
// with what became of the checkpoint.
func dropCheckpoint(url, id string, so slatedb.Options, cause error) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	if err := slatedb.DeleteCheckpoint(ctx, url, id, so); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
		return fmt.Errorf("%w; its checkpoint %s is left (delete it with cleanup): %w", cause, id, err)
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
