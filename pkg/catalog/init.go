package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Initializer is the single writer of a catalog being made. Rows go in
// first; Finalize then writes the system and counter keys, the format version
// among them, in one atomic batch. Until Finalize the location has no version
// key, so no binary opens it: a load that dies midway leaves nothing that
// passes for a catalog. Use it from one goroutine.
type Initializer struct {
	url       string
	version   format.Version
	w         *slatedb.Writer
	finalized bool
}

// errFinalized: rows written after Finalize would be in a catalog that
// readers may already be using.
var errFinalized = errors.New("catalog: initializer already finalized")

// NewInitializer opens the writer of a new format-v catalog at url. A
// location holding any key is refused with ErrTargetNotEmpty (or, if it holds
// a catalog of a format this binary does not know, with the startup check's
// *format.FormatVersionMismatch), and that is decided through a reader first:
// opening the writer would fence the writer of whatever lives there.
func NewInitializer(ctx context.Context, url string, v format.Version, store slatedb.Options) (*Initializer, error) {
	if !format.Supported(v) {
		return nil, fmt.Errorf("catalog: create %s: %w %d", url, format.ErrUnsupportedVersion, uint64(v))
	}
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: store})
	switch {
	case errors.Is(err, slatedb.ErrNoDatabase): // nothing there yet
	case err != nil:
		return nil, fmt.Errorf("catalog: create %s: %w", url, err)
	default:
		err = refuseNonEmpty(ctx, r, url, v)
		r.Close()
		if err != nil {
			return nil, err
		}
	}
	// A catalog being made is a bulk load: memory bounded whatever its size.
	store.BulkLoad = true
	w, err := slatedb.OpenWriter(ctx, url, store)
	if err != nil {
		return nil, fmt.Errorf("catalog: create %s: %w", url, err)
	}
	// Another client may have written between the two opens. The writer has
	// fenced it, so this second look is final.
	if err := refuseNonEmpty(ctx, w, url, v); err != nil {
		w.Close()
		return nil, err
	}
	return &Initializer{url: url, version: v, w: w}, nil
}

func refuseNonEmpty(ctx context.Context, kv slatedb.KV, url string, v format.Version) error {
	found, err := kv.Get(ctx, format.FormatVersionKey())
	switch {
	case err == nil:
		n, err := format.DecodeFormatVersion(found)
		if err != nil {
			return fmt.Errorf("%w: %s: %w", ErrTargetNotEmpty, url, err)
		}
		if !format.Supported(format.Version(n)) {
			// The startup check's refusal, as any other open would give.
			return &format.FormatVersionMismatch{Found: uint64(n), Expected: uint64(v)}
		}
		return fmt.Errorf("%w: %s holds a format-%d catalog", ErrTargetNotEmpty, url, n)
	case !errors.Is(err, slatedb.ErrNotFound):
		return fmt.Errorf("catalog: create %s: %w", url, err)
	}
	it, err := kv.Scan(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("catalog: create %s: %w", url, err)
	}
	defer it.Close()
	if it.Next() {
		return fmt.Errorf("%w: %s holds keys (the first is %x) but no catalog-format-version: an interrupted seed or import? Delete it first",
			ErrTargetNotEmpty, url, it.Key())
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("catalog: create %s: %w", url, err)
	}
	return nil
}

// Version is the format of the catalog being made.
func (in *Initializer) Version() format.Version { return in.version }

// WriteAsync applies a batch of keys without waiting for durability;
// Finalize makes them durable. The batch must not hold the
// catalog-format-version key: Finalize writes it, last.
func (in *Initializer) WriteAsync(ctx context.Context, b *slatedb.Batch) error {
	if in.finalized {
		return errFinalized
	}
	if err := in.w.WriteAsync(ctx, b); err != nil {
		return fmt.Errorf("catalog: create %s: %w", in.url, err)
	}
	return nil
}

// Counters are the values of RockLake's global counters in a new catalog;
// a zero field means 1, the value RockLake initializes it with.
type Counters struct {
	NextSnapshotID uint64
	NextCatalogID  uint64
	NextFileID     uint64
}

// Finalize makes every key durable, then writes RockLake's initialization
// batch (rocklake-catalog/src/init.rs) atomically: catalog-format-version,
// the next_snapshot_id, next_catalog_id and next_file_id counters and
// retain-from = 0. RockLake's first writer adds writer-epoch and
// writer-nonce when it opens the catalog.
func (in *Initializer) Finalize(ctx context.Context, c Counters) error {
	if in.finalized {
		return errFinalized
	}
	// The version key must never be durable before the rows it vouches for.
	if err := in.w.Flush(ctx); err != nil {
		return fmt.Errorf("catalog: create %s: flush rows: %w", in.url, err)
	}
	one := func(x uint64) uint64 { return max(x, 1) }
	var b slatedb.Batch
	b.Put(format.CounterKey(in.version, format.NameNextSnapshotID), format.EncodeCounter(in.version, one(c.NextSnapshotID)))
	b.Put(format.CounterKey(in.version, format.NameNextCatalogID), format.EncodeCounter(in.version, one(c.NextCatalogID)))
	b.Put(format.CounterKey(in.version, format.NameNextFileID), format.EncodeCounter(in.version, one(c.NextFileID)))
	b.Put(format.SystemKey(format.SystemRetainFrom), format.EncodeCounter(in.version, 0))
	b.Put(format.FormatVersionKey(), format.EncodeFormatVersion(uint32(in.version)))
	if err := in.w.Write(ctx, &b); err != nil {
		return fmt.Errorf("catalog: create %s: initialisation batch: %w", in.url, err)
	}
	in.finalized = true
	return nil
}

// Close closes the writer. Closed before Finalize, the location keeps the
// rows written so far and no version key: no binary opens it, and a new
// Initializer refuses it until it is deleted.
func (in *Initializer) Close() error { return in.w.Close() }

// Create makes a new, empty format-v catalog at url: the initialisation
// batch alone, as RockLake makes it. The location must hold no key.
func Create(ctx context.Context, url string, v format.Version, store slatedb.Options) error {
	in, err := NewInitializer(ctx, url, v, store)
	if err != nil {
		return err
	}
	if err := in.Finalize(ctx, Counters{}); err != nil {
		in.Close()
		return err
	}
	return in.Close()
}
