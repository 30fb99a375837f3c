package catalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The package's errors: its named ones (errname) and ErrNotFound.
var (
	// ErrNoCatalog: no SlateDB database at the URL. It wraps
	// slatedb.ErrNoDatabase, so errors.Is matches either.
	ErrNoCatalog = errname.New("catalog", "NoCatalog", "no catalog at that location")
	// ErrTargetNotEmpty: a new catalog was to be made in a location that
	// already holds keys.
	ErrTargetNotEmpty = errname.New("catalog", "TargetNotEmpty", "target location is not empty")
	// ErrInvalidValue: PutRaw refuses a value that is not what the
	// catalog's format stores under that key.
	ErrInvalidValue = errname.New("catalog", "InvalidValue", "")
	// ErrVersionKeyDelete: DeleteRaw refuses to delete the
	// catalog-format-version key, which would leave an uninitialized
	// catalog that nothing opens.
	ErrVersionKeyDelete = errname.New("catalog", "VersionKeyDelete", "the catalog-format-version key is never deleted")
	// ErrNotFound is slatedb.ErrNotFound, so callers need not import slatedb
	// to test for a missing key.
	ErrNotFound = slatedb.ErrNotFound
)

// Options say which catalog state to open and what to expect of it.
type Options struct {
	// Expect is the format the caller operates on; a catalog in another
	// format is refused. 0 accepts any format this binary supports.
	Expect format.Version
	// Checkpoint pins a reader to a SlateDB checkpoint (Open only); empty
	// follows the latest state.
	Checkpoint string
	// Store tunes SlateDB's object-store access.
	Store slatedb.Options
	// SkipVersionCheck opens the catalog without the startup check.
	// DANGEROUS: it exists only so that an expert can repair the version key
	// itself (kv put/delete --skip-version-check). Typed reads of a catalog
	// whose version is not valid for this binary fail; raw reads and writes
	// do not look at the format at all.
	SkipVersionCheck bool
}

// Catalog is an open catalog: typed and raw reads over a SlateDB reader (from
// Open) or writer (a Writer's).
type Catalog struct {
	url     string
	version format.Version
	kv      slatedb.KV
	close   func(context.Context) error
}

// Writer is a catalog opened as its single SlateDB writer: reads see its own
// writes at once.
type Writer struct {
	*Catalog
	w *slatedb.Writer
}

// Warmed is what the writer's open fetched ahead (slatedb.Options.WarmWAL).
func (w *Writer) Warmed() slatedb.Warmed { return w.w.Warmed() }

// Open opens a read-only catalog. It runs the startup check before anything
// else and never writes to the catalog.
func Open(ctx context.Context, url string, opts Options) (*Catalog, error) {
	r, err := openReader(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	v, err := readVersion(ctx, r, opts)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &Catalog{url: url, version: v, kv: r, close: r.CloseContext}, nil
}

// OpenWriter opens the catalog as its writer. Opening a SlateDB writer fences
// every earlier writer, RockLake's included (its next write fails), and writes
// a new manifest; so the startup check runs through a reader first, and a
// catalog that fails it is refused with nothing fenced or written. The check
// is repeated through the writer, which may see writes the reader did not.
func OpenWriter(ctx context.Context, url string, opts Options) (*Writer, error) {
	if opts.Checkpoint != "" {
		return nil, fmt.Errorf("catalog: open writer %s: %w: a writer cannot be pinned to a checkpoint", url, slatedb.ErrInvalid)
	}
	// The reader also proves that a database exists: slatedb.OpenWriter
	// would create one, and writers only ever open existing catalogs here.
	r, err := openReader(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	_, err = readVersion(ctx, r, opts)
	r.Close()
	if err != nil {
		return nil, err
	}
	w, err := slatedb.OpenWriter(ctx, url, opts.Store)
	if err != nil {
		return nil, fmt.Errorf("catalog: open writer %s: %w", url, err)
	}
	v, err := readVersion(ctx, w, opts)
	if err != nil {
		w.Close()
		return nil, err
	}
	return &Writer{Catalog: &Catalog{url: url, version: v, kv: w, close: w.CloseContext}, w: w}, nil
}

func openReader(ctx context.Context, url string, opts Options) (*slatedb.Reader, error) {
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: opts.Store, Checkpoint: opts.Checkpoint})
	if errors.Is(err, slatedb.ErrNoDatabase) {
		return nil, fmt.Errorf("%w: %s (%w)", ErrNoCatalog, url, err)
	}
	if err != nil {
		return nil, fmt.Errorf("catalog: open %s: %w", url, err)
	}
	return r, nil
}

// readVersion reads the version key, runs the startup check on it
// (StartupCheck) and returns the catalog's format. With SkipVersionCheck it
// reads the key too, so that a catalog that would pass still gets typed
// reads, but refuses nothing.
func readVersion(ctx context.Context, kv slatedb.KV, opts Options) (format.Version, error) {
	found, err := kv.Get(ctx, format.FormatVersionKey())
	if errors.Is(err, slatedb.ErrNotFound) {
		found, err = nil, nil
	}
	if err != nil {
		return 0, fmt.Errorf("catalog: read catalog-format-version: %w", err)
	}
	v, err := StartupCheck(found, opts.Expect)
	if opts.SkipVersionCheck {
		return v, nil
	}
	return v, err
}

// StartupCheck is the startup check on the raw value of the catalog-format-version
// key (nil when absent): it returns the catalog's format, or a
// *format.FormatVersionMismatch when the key is missing, names a format this
// binary does not support, or differs from expect (0: any supported format).
func StartupCheck(found []byte, expect format.Version) (format.Version, error) {
	if expect != 0 && !format.Supported(expect) {
		return 0, fmt.Errorf("catalog: expected %w %d", format.ErrUnsupportedVersion, uint64(expect))
	}
	want := expect
	if want == 0 {
		if found == nil {
			return 0, anyVersion(&format.FormatVersionMismatch{Missing: true, Expected: uint64(Newest)})
		}
		n, err := format.DecodeFormatVersion(found)
		if err != nil {
			return 0, err
		}
		if !format.Supported(format.Version(n)) {
			return 0, anyVersion(&format.FormatVersionMismatch{Found: uint64(n), Expected: uint64(Newest)})
		}
		want = format.Version(n)
	}
	if err := format.CheckVersion(found, want); err != nil {
		return 0, err
	}
	return want, nil
}

// Newest is the newest catalog format this binary supports: what a caller
// expecting "any" format is told it expected.
const Newest = format.V2

// anyVersion adds to a mismatch that the caller would have taken any
// supported format, not just the one the error names as expected.
func anyVersion(m *format.FormatVersionMismatch) error {
	return fmt.Errorf("%w (this binary supports %s and %s)", m, format.V1, format.V2)
}

// URL is the catalog's URL.
func (c *Catalog) URL() string { return c.url }

// Version is the catalog's format, as the startup check read it (0 when it
// was skipped and the version is not one this binary supports).
func (c *Catalog) Version() format.Version { return c.version }

// Close closes the catalog (a Writer's flushes its writes first).
func (c *Catalog) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return c.close(ctx)
}

// CloseContext is Close bounded by ctx's deadline (a Writer's flush
// included); the handle is freed either way.
func (c *Catalog) CloseContext(ctx context.Context) error { return c.close(ctx) }

// closeTimeout bounds Close when no context is given.
const closeTimeout = 2 * time.Minute

// Write applies b atomically and returns once it is durable.
func (w *Writer) Write(ctx context.Context, b *slatedb.Batch) error {
	if err := w.w.Write(ctx, b); err != nil {
		return fmt.Errorf("catalog: write %s: %w", w.url, err)
	}
	return nil
}

// Checkpoint creates a SlateDB checkpoint through the writer: unlike a
// detached one it holds every write so far, WAL included (Freeze uses it).
func (w *Writer) Checkpoint(ctx context.Context, cp slatedb.CheckpointOptions) (slatedb.Checkpoint, error) {
	c, err := w.w.Checkpoint(ctx, cp)
	if err != nil {
		return slatedb.Checkpoint{}, fmt.Errorf("catalog: checkpoint %s: %w", w.url, err)
	}
	return c, nil
}
