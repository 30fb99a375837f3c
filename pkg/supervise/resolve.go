package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// The package's named errors (errname); a missing or malformed pointer
// keeps pkg/pointer's: PointerMissing, BadPointer.
var (
	// ErrPointerUnreadable: the pointer object could not be read (no
	// credentials, access denied, S3 unreachable).
	ErrPointerUnreadable = errname.New("supervise", "PointerUnreadable", "")
	// ErrPointerDangling: the pointer names a catalog that is not there (no
	// SlateDB manifest), where RockLake would create an empty one.
	ErrPointerDangling = errname.New("supervise", "PointerDangling", "")
	// ErrNoBinary: the pointer names a format this supervisor has no
	// RockLake binary for; the last good server went on in reader mode.
	ErrNoBinary = errname.New("supervise", "NoBinaryForFormat", "")
	// ErrServerFailing: RockLake kept exiting by itself, past the restarts
	// allowed.
	ErrServerFailing = errname.New("supervise", "ServerFailing", "")
)

// Resolved is the catalog the pointer names now.
type Resolved struct {
	Pointer string `json:"pointer"`
	// Catalog is the pointer's URL; ServeCatalog is it as `rocklake serve
	// --catalog` takes it (RockLake reads file:///x as a relative path, so
	// a local catalog is given as its path).
	Catalog       string         `json:"catalog"`
	ServeCatalog  string         `json:"serve_catalog"`
	FormatVersion format.Version `json:"format_version"`
	Generation    uint64         `json:"generation"`
	MigrationID   string         `json:"migration_id,omitempty"`
	ETag          string         `json:"etag"`
	VersionID     string         `json:"version_id,omitempty"`
}

// Resolve reads the pointer and checks that the catalog it names is there:
// pointer.ErrPointerMissing, pointer.ErrBadPointer, ErrPointerUnreadable or
// ErrPointerDangling otherwise.
func Resolve(ctx context.Context, store *blob.Store, pointerURL string) (Resolved, error) {
	p, ref, err := pointer.Read(ctx, store, pointerURL)
	if err != nil {
		return Resolved{}, readError(err)
	}
	r := Resolved{Pointer: pointerURL, Catalog: p.Catalog, ServeCatalog: ServeCatalog(p.Catalog), FormatVersion: p.FormatVersion,
		Generation: p.Generation, MigrationID: p.MigrationID, ETag: ref.ETag, VersionID: ref.VersionID}
	if err := catalogThere(ctx, store, p.Catalog); err != nil {
		return r, err
	}
	return r, nil
}

// readError names a failed read of the pointer.
func readError(err error) error {
	if errors.Is(err, pointer.ErrPointerMissing) || errors.Is(err, pointer.ErrBadPointer) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrPointerUnreadable, err)
}

// catalogThere checks that url holds a SlateDB database (its manifest/):
// ErrPointerDangling if not.
func catalogThere(ctx context.Context, store *blob.Store, url string) error {
	dirs, err := store.ListDirs(ctx, strings.TrimSuffix(url, "/")+"/")
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("supervise: look for the catalog %s: %w", url, err)
	}
	for _, d := range dirs {
		if strings.HasSuffix(d, "/manifest/") {
			return nil
		}
	}
	return fmt.Errorf("%w: the pointer names %s, which holds no catalog (no SlateDB manifest); RockLake would create an empty catalog there", ErrPointerDangling, url)
}

// ServeCatalog is the catalog URL as `rocklake serve --catalog` takes it: a
// file:// URL as its path, anything else as it is.
func ServeCatalog(url string) string {
	if l, err := blob.Parse(url); err == nil && !l.IsS3() {
		return l.Path
	}
	return url
}
