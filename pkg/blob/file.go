package blob

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// fileStore keeps objects as local files.
type fileStore struct{}

// tempMarker is in the name of every file being written, so that List skips
// them: "<dir>/.<name>.tmp-<random>".
const tempMarker = ".tmp-"

func isTemp(name string) bool {
	return strings.HasPrefix(name, ".") && strings.Contains(name, tempMarker)
}

// fileError adds ErrNotFound to a missing-file error: a path through a file
// (ENOTDIR) is missing too, as an S3 key would be.
func fileError(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return err
}

func etagOf(body []byte) string {
	sum := md5.Sum(body)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

func objectPath(l Location) (string, error) {
	if strings.HasSuffix(l.Path, "/") {
		return "", fmt.Errorf("%s is a directory, not an object", l.Path)
	}
	return l.Path, nil
}

func (fileStore) open(ctx context.Context, l Location, versionID string) (io.ReadCloser, Info, error) {
	if versionID != "" {
		return nil, Info{}, ErrVersioningDisabled
	}
	if err := ctx.Err(); err != nil {
		return nil, Info{}, err
	}
	f, err := os.Open(l.Path)
	if err != nil {
		return nil, Info{}, fileError(err)
	}
	fi, err := f.Stat()
	if err == nil && fi.IsDir() {
		err = fmt.Errorf("%w: %s is a directory", ErrNotFound, l.Path)
	}
	if err != nil {
		f.Close()
		return nil, Info{}, err
	}
	return f, Info{URL: l.Path, Size: fi.Size(), LastModified: fi.ModTime()}, nil
}

func (f fileStore) get(ctx context.Context, l Location, versionID string) ([]byte, Info, error) {
	r, info, err := f.open(ctx, l, versionID)
	if err != nil {
		return nil, Info{}, err
	}
	defer r.Close()
	body, err := readSmall(r)
	info.Size, info.ETag = int64(len(body)), etagOf(body)
	return body, info, err
}

func (f fileStore) getIfNoneMatch(ctx context.Context, l Location, etag string) ([]byte, Info, error) {
	body, info, err := f.get(ctx, l, "")
	if err == nil && info.ETag == etag {
		return nil, Info{}, ErrNotModified
	}
	return body, info, err
}

func (fileStore) put(ctx context.Context, l Location, body []byte, cond condition) (Info, error) {
	path, err := objectPath(l)
	if err != nil {
		return Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return Info{}, err
	}
	f, err := createTemp(path)
	if err != nil {
		return Info{}, err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a successful rename there is nothing to remove
	_, err = f.Write(body)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Info{}, err
	}
	err = publish(tmp, path, func() error {
		switch {
		case cond.ifAbsent:
			if _, err := os.Lstat(path); err == nil {
				return ErrPreconditionFailed
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		case cond.ifMatch != "":
			cur, err := os.ReadFile(path)
			if err != nil {
				return fileError(err)
			}
			if strings.Trim(etagOf(cur), `"`) != strings.Trim(cond.ifMatch, `"`) {
				return ErrPreconditionFailed
			}
		}
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	return Info{URL: path, Size: int64(len(body)), ETag: etagOf(body)}, nil
}

// createTemp creates the temporary file a write to path goes to, in path's
// directory so that the final rename stays within one filesystem.
func createTemp(path string) (*os.File, error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.CreateTemp(dir, "."+name+tempMarker+"*")
	if err != nil {
		return nil, err
	}
	// CreateTemp makes files private; objects are as readable as any file.
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// publish renames the finished temporary file tmp to path, if check (run
// under the directory lock) allows it, and makes the rename durable.
func publish(tmp, path string, check func() error) error {
	return withDirLock(filepath.Dir(path), func(d *os.File) error {
		if err := check(); err != nil {
			return err
		}
		if err := os.Rename(tmp, path); err != nil {
			return err
		}
		return d.Sync()
	})
}

// withDirLock runs fn holding an exclusive flock on dir, which every write
// to a file in dir takes: this is what makes a conditional write's check and
// rename atomic against other writers (in any process using this package).
func withDirLock(dir string, fn func(d *os.File) error) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close() // also releases the lock
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("lock %s: %w", dir, err)
	}
	return fn(d)
}

func (fileStore) create(ctx context.Context, l Location) (*Writer, error) {
	path, err := objectPath(l)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := createTemp(path)
	if err != nil {
		return nil, err
	}
	discard := func() {
		f.Close()
		os.Remove(f.Name())
	}
	return &Writer{
		w: ctxWriter{ctx, f},
		commit: func() error {
			err := ctx.Err()
			if err == nil {
				err = f.Sync()
			}
			if err == nil {
				err = f.Close()
			}
			if err == nil {
				err = publish(f.Name(), path, func() error { return nil })
			}
			if err != nil {
				discard()
			}
			return err
		},
		abort: discard,
	}, nil
}

// ctxWriter fails writes once ctx is done, as an S3 upload would.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

func (fileStore) list(ctx context.Context, prefix Location) ([]Info, error) {
	root := prefix.Path
	if !strings.HasSuffix(root, "/") {
		root = filepath.Dir(root)
	}
	if _, err := os.Stat(root); errors.Is(err, fs.ErrNotExist) {
		return nil, nil // like an S3 prefix with nothing under it
	}
	var infos []Info
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			// Only descend where matches can be.
			if p != root && !strings.HasPrefix(p+"/", prefix.Path) && !strings.HasPrefix(p, prefix.Path) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || isTemp(d.Name()) || !strings.HasPrefix(p, prefix.Path) {
			return nil
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listing
		}
		if err != nil {
			return err
		}
		infos = append(infos, Info{URL: p, Size: fi.Size(), LastModified: fi.ModTime()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(infos, func(a, b Info) int { return strings.Compare(a.URL, b.URL) })
	return infos, nil
}

func (fileStore) listDirs(ctx context.Context, prefix Location) ([]string, error) {
	// "dir/" lists dir's subdirectories; "dir/ab" those of dir named ab….
	dir, part := prefix.Path, ""
	if !strings.HasSuffix(dir, "/") {
		dir, part = filepath.Dir(dir), filepath.Base(dir)
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // like an S3 prefix with nothing under it
	}
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), part) {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		has, err := holdsObject(ctx, sub)
		if err != nil {
			return nil, err
		}
		if has {
			dirs = append(dirs, sub+"/")
		}
	}
	slices.Sort(dirs)
	return dirs, nil
}

// holdsObject reports whether there is an object (a regular file that is
// not a write in progress) anywhere below dir; it stops at the first.
func holdsObject(ctx context.Context, dir string) (bool, error) {
	found := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // deleted while listing
		}
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type().IsRegular() && !isTemp(d.Name()) {
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found, err
}

func (fileStore) delete(ctx context.Context, l Location) error {
	path, err := objectPath(l)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err = withDirLock(filepath.Dir(path), func(d *os.File) error {
		if err := os.Remove(path); err != nil {
			return err
		}
		return d.Sync()
	})
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	return err
}

func (f fileStore) deletePrefix(ctx context.Context, prefix Location) (int, error) {
	infos, err := f.list(ctx, prefix)
	if err != nil {
		return 0, err
	}
	// Directories left empty under the prefix go too: S3 has none to leave.
	dirs := map[string]bool{}
	for i, info := range infos {
		if err := f.delete(ctx, Location{Path: info.URL}); err != nil {
			return i, err
		}
		for d := filepath.Dir(info.URL); strings.HasPrefix(d+"/", prefix.Path) && !dirs[d]; d = filepath.Dir(d) {
			dirs[d] = true
		}
	}
	// Deepest first, so that a parent is empty by the time it is removed.
	for _, d := range slices.SortedFunc(maps.Keys(dirs), func(a, b string) int { return len(b) - len(a) }) {
		os.Remove(d) // fails, as it should, if something else is in it
	}
	return len(infos), nil
}

func (fileStore) versioning(context.Context, Location) (bool, error) { return false, nil }

func (fileStore) listVersions(context.Context, Location) ([]Version, error) {
	return nil, ErrVersioningDisabled
}
