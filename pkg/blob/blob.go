// Package blob owns reading and writing whole objects by URL: s3://bucket/key,
// file:///path and plain paths, with one API for both so that every step runs
// the same against S3 and a local directory.
//
// S3 is configured by pkg/awsconfig (the standard AWS chain, shared with the
// engine in pkg/slatedb); an overridden endpoint implies path-style requests.
//
// Local files behave like objects: a write becomes visible whole or not at all
// (temporary file, fsync, rename), and conditional writes are atomic between
// writers that use this package (an flock on the parent directory). A file's
// ETag is the quoted hex MD5 of its content, as S3's is for single-part
// objects. Local files have no versions.
package blob

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// Errors, matched with errors.Is; the error returned also wraps the
// underlying one (an S3 API error, an *fs.PathError).
var (
	// ErrNotFound: no such object or version.
	ErrNotFound = errors.New("blob: not found")
	// ErrPreconditionFailed: a conditional write found the object changed
	// (PutIfMatch) or present (PutIfAbsent).
	ErrPreconditionFailed = errors.New("blob: precondition failed")
	// ErrNoSuchBucket: the S3 bucket does not exist.
	ErrNoSuchBucket = errname.New("blob", "NoSuchBucket", "no such bucket")
	// ErrAccessDenied: S3 refused the credentials (unknown key, wrong
	// secret, expired token) or they lack a permission.
	ErrAccessDenied = errname.New("blob", "AccessDenied", "access denied")
	// ErrVersioningDisabled: a version operation on a local file or on a
	// bucket without versioning enabled.
	ErrVersioningDisabled = errors.New("blob: versioning not enabled")
	// ErrUnreachable: S3 did not answer (no connection, no response or a
	// stalled one within awsconfig.Limits, timed out, refused,
	// unresolvable); the error names the cause and the endpoint. The
	// workflow retries it (Transient).
	ErrUnreachable = errname.NewRetryable("blob", errname.Transient, "S3 endpoint unreachable")
	// ErrSilent is ErrUnreachable for an endpoint that did not answer or
	// read within awsconfig.Limits, after their attempts (errors.Is(err,
	// ErrUnreachable) holds): named S3Unreachable, which the workflow does
	// not retry again (the attempts were the retries).
	ErrSilent = errname.Kind(ErrUnreachable, "blob", errname.Unreachable, "S3 endpoint did not answer")
)

// Info describes one object (one version of it, for a versioned bucket).
type Info struct {
	URL          string // s3://bucket/key, or the path of a local file
	Size         int64
	ETag         string // quoted, as S3 sends it; none for files from Open and List
	VersionID    string // empty unless the bucket is versioned
	LastModified time.Time
}

// Version is one entry in an object's version history.
type Version struct {
	Info
	IsLatest     bool
	DeleteMarker bool // the object was deleted at this point; there is no content
}

// Store reads and writes objects. It is safe for concurrent use.
type Store struct {
	s3 *s3Store
}

// New makes a Store with the process's AWS configuration (awsconfig.Load; no
// network access: a wrong configuration shows on first S3 use).
func New(ctx context.Context) (*Store, error) {
	s, err := newS3Store(ctx)
	if err != nil {
		return nil, fmt.Errorf("blob: %w", err)
	}
	return &Store{s3: s}, nil
}

// backend is what S3 and local files each implement; Store dispatches on the
// URL and adds the operation and URL to errors.
type backend interface {
	// open streams the object, or one version of it if versionID is set.
	open(ctx context.Context, l Location, versionID string) (io.ReadCloser, Info, error)
	create(ctx context.Context, l Location) (*Writer, error)
	get(ctx context.Context, l Location, versionID string) ([]byte, Info, error)
	// getIfNoneMatch is get of the current version unless its ETag is etag.
	getIfNoneMatch(ctx context.Context, l Location, etag string) ([]byte, Info, error)
	put(ctx context.Context, l Location, body []byte, cond condition) (Info, error)
	list(ctx context.Context, prefix Location) ([]Info, error)
	listDirs(ctx context.Context, prefix Location) ([]string, error)
	delete(ctx context.Context, l Location) error
	deletePrefix(ctx context.Context, prefix Location) (int, error)
	versioning(ctx context.Context, l Location) (bool, error)
	listVersions(ctx context.Context, l Location) ([]Version, error)
}

// condition is a put's precondition.
type condition struct {
	ifMatch  string // write only if the current ETag is this
	ifAbsent bool   // write only if there is no object
}

func (s *Store) resolve(raw string) (backend, Location, error) {
	l, err := Parse(raw)
	if err != nil {
		return nil, Location{}, err
	}
	if l.IsS3() {
		return s.s3, l, nil
	}
	return fileStore{}, l, nil
}

func wrap(op, raw string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("blob: %s %s: %w", op, raw, err)
}

// Open streams an object. The caller must close the reader.
// For a local file, Info has no ETag (it would take a second read).
func (s *Store) Open(ctx context.Context, url string) (io.ReadCloser, Info, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return nil, Info{}, err
	}
	r, info, err := b.open(ctx, l, "")
	return r, info, wrap("open", url, err)
}

// Create starts writing an object; nothing is visible at url until Close
// returns nil. S3 objects are uploaded in parts as they are written (a
// multipart upload once past 16 MiB), so memory stays bounded whatever the
// size. The caller must Close or Abort the Writer (or cancel ctx, which
// abandons the write): until then it holds an upload in progress.
func (s *Store) Create(ctx context.Context, url string) (*Writer, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return nil, err
	}
	w, err := b.create(ctx, l)
	if err != nil {
		return nil, wrap("create", url, err)
	}
	w.url = url
	return w, nil
}

// MaxGetSize bounds what Get and GetVersion read into memory: they are for
// control objects (pointer, lock, plan, step results), never for shards,
// which stream through Open.
const MaxGetSize = 16 << 20

// ErrNoCredentials: no AWS credentials were found by any of the standard
// sources; the error names what was tried. It is awsconfig.ErrNoCredentials,
// which pkg/slatedb returns too.
var ErrNoCredentials = awsconfig.ErrNoCredentials

// ErrTooLarge: an object Get was asked for is larger than MaxGetSize.
var ErrTooLarge = errors.New("blob: object larger than a whole-object read allows")

// readSmall reads r whole, refusing more than MaxGetSize bytes.
func readSmall(r io.Reader) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r, MaxGetSize+1))
	if err == nil && len(body) > MaxGetSize {
		return nil, fmt.Errorf("%w (%d bytes)", ErrTooLarge, MaxGetSize)
	}
	return body, err
}

// Get reads a whole (small) object into memory; one of more than
// MaxGetSize bytes is ErrTooLarge.
func (s *Store) Get(ctx context.Context, url string) ([]byte, Info, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return nil, Info{}, err
	}
	body, info, err := b.get(ctx, l, "")
	return body, info, wrap("get", url, err)
}

// ErrNotModified: GetIfNoneMatch found the object still at the ETag given.
var ErrNotModified = errors.New("blob: not modified")

// GetIfNoneMatch is Get unless the object's current ETag is etag, which is
// ErrNotModified (S3's 304, If-None-Match): a watcher polls a small object
// and is sent its bytes only when they changed. An empty etag is Get.
func (s *Store) GetIfNoneMatch(ctx context.Context, url, etag string) ([]byte, Info, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return nil, Info{}, err
	}
	if etag == "" {
		body, info, err := b.get(ctx, l, "")
		return body, info, wrap("get", url, err)
	}
	body, info, err := b.getIfNoneMatch(ctx, l, etag)
	return body, info, wrap("get-if-none-match", url, err)
}

// Put writes a whole object, replacing any current one.
func (s *Store) Put(ctx context.Context, url string, body []byte) (Info, error) {
	return s.put(ctx, "put", url, body, condition{})
}

// PutIfMatch writes a whole object only if its current ETag is etag
// (If-Match), atomically: otherwise ErrPreconditionFailed, or ErrNotFound if
// there is no object, as S3 answers.
//
// A retried request whose first attempt was applied but whose answer was
// lost reports ErrPreconditionFailed: callers that must tell re-read the
// object and compare.
func (s *Store) PutIfMatch(ctx context.Context, url string, body []byte, etag string) (Info, error) {
	if etag == "" {
		return Info{}, fmt.Errorf("blob: put-if-match %s: empty ETag", url)
	}
	return s.put(ctx, "put-if-match", url, body, condition{ifMatch: etag})
}

// PutIfAbsent writes a whole object only if there is none (If-None-Match: *),
// atomically: otherwise ErrPreconditionFailed (see PutIfMatch on retries).
func (s *Store) PutIfAbsent(ctx context.Context, url string, body []byte) (Info, error) {
	return s.put(ctx, "put-if-absent", url, body, condition{ifAbsent: true})
}

func (s *Store) put(ctx context.Context, op, url string, body []byte, cond condition) (Info, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return Info{}, err
	}
	info, err := b.put(ctx, l, body, cond)
	return info, wrap(op, url, err)
}

// List lists the objects whose URL starts with prefix, recursively, in byte
// order of their URLs. A local prefix is a path prefix like an S3 one:
// "dir/" lists under dir, "dir/ab" lists dir/abc and dir/ab/c.
func (s *Store) List(ctx context.Context, prefix string) ([]Info, error) {
	b, l, err := s.resolve(prefix)
	if err != nil {
		return nil, err
	}
	infos, err := b.list(ctx, l)
	return infos, wrap("list", prefix, err)
}

// ListDirs lists one level of "directories" below prefix, as S3's
// ListObjectsV2 with Delimiter "/" lists common prefixes: every distinct
// <prefix><name>/ that some object's URL starts with, each once, ending in
// "/", in byte order, in the form List gives URLs (s3://bucket/key, or a
// local path). Objects directly at this level are not listed, and neither is
// a local directory that holds no object (S3 has no empty directories). It
// lets a caller find <staging>/<id>/ or a catalog's siblings without
// listing every object below them.
func (s *Store) ListDirs(ctx context.Context, prefix string) ([]string, error) {
	b, l, err := s.resolve(prefix)
	if err != nil {
		return nil, err
	}
	dirs, err := b.listDirs(ctx, l)
	return dirs, wrap("list-dirs", prefix, err)
}

// Delete deletes an object; deleting a missing object is not an error (as in
// S3). In a versioned bucket this adds a delete marker and keeps the versions.
func (s *Store) Delete(ctx context.Context, url string) error {
	b, l, err := s.resolve(url)
	if err != nil {
		return err
	}
	return wrap("delete", url, b.delete(ctx, l))
}

// DeletePrefix deletes every object List(prefix) returns and reports how many
// it deleted. In a versioned bucket the versions stay (behind delete markers)
// until a lifecycle rule expires them.
func (s *Store) DeletePrefix(ctx context.Context, prefix string) (int, error) {
	b, l, err := s.resolve(prefix)
	if err != nil {
		return 0, err
	}
	n, err := b.deletePrefix(ctx, l)
	return n, wrap("delete-prefix", prefix, err)
}

// BucketVersioning reports whether versioning is enabled on the bucket of url
// (any s3://bucket/... URL). It is false for local paths, and for a bucket
// where versioning is suspended, as new writes there keep no history.
func (s *Store) BucketVersioning(ctx context.Context, url string) (bool, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return false, err
	}
	on, err := b.versioning(ctx, l)
	return on, wrap("bucket-versioning", url, err)
}

// ListVersions lists the versions of one object, newest first, delete markers
// included. ErrVersioningDisabled unless the bucket has versioning enabled.
func (s *Store) ListVersions(ctx context.Context, url string) ([]Version, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return nil, err
	}
	vs, err := b.listVersions(ctx, l)
	return vs, wrap("list-versions", url, err)
}

// GetVersion reads one version of an object into memory.
func (s *Store) GetVersion(ctx context.Context, url, versionID string) ([]byte, Info, error) {
	b, l, err := s.resolve(url)
	if err != nil {
		return nil, Info{}, err
	}
	if versionID == "" {
		return nil, Info{}, fmt.Errorf("blob: get-version %s: empty version id", url)
	}
	body, info, err := b.get(ctx, l, versionID)
	return body, info, wrap("get-version", url, err)
}

// Writer is an object being written by Create, by one goroutine.
type Writer struct {
	url    string
	w      io.Writer
	commit func() error
	abort  func()
	done   bool
}

// Write appends to the object.
func (w *Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("blob: write %s: writer closed", w.url)
	}
	n, err := w.w.Write(p)
	return n, wrap("write", w.url, err)
}

// Close finishes the write and makes the object visible. After Close the
// Writer is done, whatever the result.
func (w *Writer) Close() error {
	if w.done {
		return fmt.Errorf("blob: close %s: writer closed", w.url)
	}
	w.done = true
	return wrap("close", w.url, w.commit())
}

// Abort abandons the write, leaving nothing at the URL (nor any S3 upload
// parts). It does nothing after Close, so `defer w.Abort()` is the way to
// clean up on every error path.
func (w *Writer) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.abort()
}

// GetJSON reads the object at url into v.
func (s *Store) GetJSON(ctx context.Context, url string, v any) error {
	b, _, err := s.Get(ctx, url)
	if err != nil {
		return fmt.Errorf("blob: read %s: %w", url, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("blob: decode %s: %w", url, err)
	}
	return nil
}

// PutJSON writes v, as JSON, to the object at url.
func (s *Store) PutJSON(ctx context.Context, url string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("blob: encode %s: %w", url, err)
	}
	if _, err := s.Put(ctx, url, b); err != nil {
		return fmt.Errorf("blob: write %s: %w", url, err)
	}
	return nil
}
