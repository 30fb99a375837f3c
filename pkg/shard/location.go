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
	for dir := parentURL(root, loc.IsS3()); dir != ""; dir = parentURL(dir, loc.IsS3()) {
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

// slateDBDirs are the top-level directories of a SlateDB database.
var slateDBDirs = map[string]bool{"manifest": true, "wal": true, "compacted": true, "compactions": true}

// parentURL is the URL of the prefix or directory above u, "" above a bucket
// root or "/".
func parentURL(u string, s3 bool) string {
	i := strings.LastIndex(u, "/")
	if i < 0 {
		return ""
	}
	p := u[:i]
	switch {
	case s3 && strings.Count(p, "/") < 3: // "s3://bucket" and above
		if strings.Count(p, "/") == 2 && len(p) > len("s3://") {
			return p // the bucket root itself
		}
		return ""
	case !s3 && (p == "file://" || p == "file:" || p == ""):
		return ""
	}
	return p
}
