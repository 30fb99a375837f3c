package shard

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

// ErrTargetInsideCatalog: the target is inside another catalog's root (its
// wal/ prefix, say), or a catalog lives inside the target: writing there
// would mix two SlateDB databases in one key space.
var ErrTargetInsideCatalog = fmt.Errorf("%w: the target is inside another catalog, or holds one", ErrTargetNotEmpty)

// checkLocation refuses a new catalog's location that holds any object but
// a SlateDB database of its own (hasDB: targetState found it empty, or an
// unfinished import of these shards), that lies inside another catalog, or
// that holds one.
func checkLocation(ctx context.Context, store *blob.Store, url string, hasDB bool) error {
	root := strings.TrimSuffix(url, "/")
	loc, err := blob.Parse(root)
	if err != nil {
		return err
	}
	base := root // what List's URLs start with: s3:// URLs, or file paths
	if !loc.IsS3() {
		base = strings.TrimSuffix(loc.Path, "/")
	}
	objs, err := store.List(ctx, root+"/")
	if err != nil && !errors.Is(err, blob.ErrNotFound) {
		return fmt.Errorf("shard: import: list target %s: %w", url, err)
	}
	for _, o := range objs {
		rel := strings.TrimPrefix(strings.TrimPrefix(o.URL, base), "/")
		if strings.HasSuffix(path.Dir(rel), "/manifest") && strings.HasSuffix(rel, ".manifest") {
			// A manifest below the target's own manifest/: another catalog.
			return fmt.Errorf("%w: %s holds another catalog (%s)", ErrTargetInsideCatalog, url, o.URL)
		}
		top, _, _ := strings.Cut(rel, "/")
		if !hasDB || !slateDBDirs[top] {
			return fmt.Errorf("%w: %s holds objects (%s) and no unfinished import of these shards: choose an empty location",
				ErrTargetNotEmpty, url, o.URL)
		}
	}
	// Every ancestor within the bucket (or file system): a catalog there
	// would have the target inside its root.
	for _, dir := range ancestors(loc) {
		ms, err := store.List(ctx, dir+"/manifest/")
		if err != nil && !errors.Is(err, blob.ErrNotFound) {
			return fmt.Errorf("shard: import: list %s: %w", dir, err)
		}
		for _, m := range ms {
			if strings.HasSuffix(m.URL, ".manifest") {
				return fmt.Errorf("%w: %s is inside the catalog at %s", ErrTargetInsideCatalog, url, dir)
			}
		}
	}
	return nil
}

// CheckNewLocation is Import's check of a new catalog's location before
// anything is written there, for a caller that decides earlier: it must be
// empty, not inside another catalog, and hold none.
func CheckNewLocation(ctx context.Context, store *blob.Store, url string) error {
	return checkLocation(ctx, store, url, false)
}

// slateDBDirs are the top-level directories of a SlateDB database.
var slateDBDirs = map[string]bool{"manifest": true, "wal": true, "compacted": true, "compactions": true}

// ancestors lists the URLs above loc, nearest first: within its bucket
// down to the bucket root, or its file system down to (not including) "/".
func ancestors(loc blob.Location) []string {
	var out []string
	if loc.IsS3() {
		for p := "/" + strings.Trim(loc.Key, "/"); p != "/"; {
			p = path.Dir(p)
			out = append(out, "s3://"+loc.Bucket+strings.TrimSuffix(p, "/"))
		}
		return out
	}
	for p := path.Clean(loc.Path); path.Dir(p) != "/"; {
		p = path.Dir(p)
		out = append(out, "file://"+p)
	}
	return out
}
