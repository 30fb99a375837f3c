package pointer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

// Ref identifies the pointer version a caller read or wrote: Flip and
// Rollback write only if the pointer is still at ETag.
type Ref struct {
	ETag      string `json:"etag"`
	VersionID string `json:"version_id,omitempty"` // empty outside versioned buckets
}

// Version is one entry of the pointer's history.
type Version struct {
	Ref
	LastModified time.Time `json:"last_modified"`
	Current      bool      `json:"current"`
	// DeleteMarker: the pointer was deleted at this point; there is no
	// content.
	DeleteMarker bool `json:"delete_marker,omitempty"`
	// Pointer is the version's content; nil for a delete marker or content
	// that is not a valid pointer (Problem says why).
	Pointer *Pointer `json:"pointer,omitempty"`
	Problem string   `json:"problem,omitempty"`
	// RestoredFrom is the id of the older version whose content (all but
	// its generation and time) this one repeats: it was written by a
	// rollback.
	RestoredFrom string `json:"restored_from,omitempty"`
}

// Read reads and strictly decodes the pointer at url. No object is
// ErrPointerMissing, a malformed one ErrBadPointer.
func Read(ctx context.Context, store *blob.Store, url string) (Pointer, Ref, error) {
	p, ref, _, err := read(ctx, store, "read", url)
	return p, ref, err
}

// ErrNotModified: ReadIfChanged found the pointer still at the ETag given.
var ErrNotModified = blob.ErrNotModified

// ReadIfChanged reads the pointer at url unless it is still at etag, which
// is ErrNotModified (a conditional GET: S3 sends no body): for a watcher that
// polls the pointer. An empty etag always reads. Errors are Read's.
func ReadIfChanged(ctx context.Context, store *blob.Store, url, etag string) (Pointer, Ref, error) {
	body, info, err := store.GetIfNoneMatch(ctx, url, etag)
	if errors.Is(err, blob.ErrNotModified) {
		return Pointer{}, Ref{ETag: etag}, ErrNotModified
	}
	p, ref, _, err := decodeRead(body, info, err, "read", url)
	return p, ref, err
}

// read is Read for operation op; it also returns the raw bytes.
func read(ctx context.Context, store *blob.Store, op, url string) (Pointer, Ref, []byte, error) {
	body, info, err := store.Get(ctx, url)
	return decodeRead(body, info, err, op, url)
}

// decodeRead names what a read of the pointer object found.
func decodeRead(body []byte, info blob.Info, err error, op, url string) (Pointer, Ref, []byte, error) {
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return Pointer{}, Ref{}, nil, &Error{Kind: ErrPointerMissing, Op: op, URL: url, Detail: "there is no pointer object", Err: err}
	case errors.Is(err, blob.ErrNoSuchBucket):
		return Pointer{}, Ref{}, nil, &Error{Kind: ErrPointerMissing, Op: op, URL: url, Detail: "the pointer's bucket does not exist", Err: err}
	case err != nil:
		return Pointer{}, Ref{}, nil, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	ref := Ref{ETag: info.ETag, VersionID: info.VersionID}
	p, err := Decode(body)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return Pointer{}, ref, body, fmt.Errorf("pointer: %s %s: %w", op, url, err)
		}
		e.Op, e.URL = op, url
		if ref.VersionID != "" {
			e.Detail = "version " + ref.VersionID + ": " + e.Detail
		}
		return Pointer{}, ref, body, e
	}
	return p, ref, body, nil
}

// RequireVersioning refuses (PointerUnversioned) a pointer outside a bucket
// with versioning enabled, which Flip and Rollback need; it writes nothing.
func RequireVersioning(ctx context.Context, store *blob.Store, url string) error {
	return requireVersioning(ctx, store, "check", url)
}

// requireVersioning refuses a pointer outside a versioned bucket.
func requireVersioning(ctx context.Context, store *blob.Store, op, url string) error {
	l, err := blob.Parse(url)
	if err != nil {
		return fmt.Errorf("pointer: %s: %w", op, err)
	}
	if !l.IsS3() {
		return &Error{Kind: ErrUnversioned, Op: op, URL: url,
			Detail: "a local file keeps no versions, and rollback relies on the previous versions of the pointer: keep the pointer in an S3 bucket with versioning enabled"}
	}
	on, err := store.BucketVersioning(ctx, url)
	if errors.Is(err, blob.ErrNoSuchBucket) {
		return &Error{Kind: ErrPointerMissing, Op: op, URL: url, Detail: "the pointer's bucket does not exist", Err: err}
	}
	if err != nil {
		return fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	if !on {
		return &Error{Kind: ErrUnversioned, Op: op, URL: url,
			Detail: fmt.Sprintf("bucket %q does not have versioning enabled, and rollback relies on S3 keeping the previous versions of the pointer; nothing was written (enable it: aws s3api put-bucket-versioning --bucket %s --versioning-configuration Status=Enabled)", l.Bucket, l.Bucket)}
	}
	return nil
}

// encodeNew stamps UpdatedAt if unset and encodes p for writing.
func encodeNew(op, url string, p Pointer) ([]byte, error) {
	if p.UpdatedAt.IsZero() {
		p.UpdatedAt = time.Now().UTC()
	}
	body, err := p.Encode()
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			return nil, fmt.Errorf("pointer: %s %s: %w", op, url, err)
		}
		e.Op, e.URL, e.Detail = op, url, "refusing to write an invalid pointer: "+e.Detail
		return nil, e
	}
	return body, nil
}

// landed tells whether a conditional write that reported a failed
// precondition had in fact been applied (a retry whose first attempt landed
// but whose answer was lost): the current object holds exactly body. It
// returns the current object's ref, or an empty one if there is none.
func landed(ctx context.Context, store *blob.Store, url string, body []byte) (bool, Ref, error) {
	cur, info, err := store.Get(ctx, url)
	if errors.Is(err, blob.ErrNotFound) {
		return false, Ref{}, nil
	}
	if err != nil {
		return false, Ref{}, err
	}
	return bytes.Equal(cur, body), Ref{ETag: info.ETag, VersionID: info.VersionID}, nil
}

func conflict(op, url, expected, current string, cause error) *Error {
	found := "no pointer (it was deleted)"
	if current != "" {
		found = "ETag " + current
	}
	return &Error{Kind: ErrPointerConflict, Op: op, URL: url, ExpectedETag: expected, CurrentETag: current, Err: cause,
		Detail: fmt.Sprintf("the pointer was moved by someone else since it was read: expected ETag %s, found %s; nothing was written", expected, found)}
}

// Create writes the first pointer at url, only if there is none
// (If-None-Match: *). It refuses a bucket without versioning
// (ErrUnversioned); a pointer already there is ErrPointerExists.
func Create(ctx context.Context, store *blob.Store, url string, p Pointer) (Ref, error) {
	const op = "create"
	if err := requireVersioning(ctx, store, op, url); err != nil {
		return Ref{}, err
	}
	if p.Generation == 0 {
		p.Generation = 1
	}
	body, err := encodeNew(op, url, p)
	if err != nil {
		return Ref{}, err
	}
	info, err := store.PutIfAbsent(ctx, url, body)
	if errors.Is(err, blob.ErrPreconditionFailed) {
		ok, cur, rerr := landed(ctx, store, url, body)
		if rerr != nil {
			return Ref{}, fmt.Errorf("pointer: %s %s: %w (re-reading after: %w)", op, url, err, rerr)
		}
		if ok {
			return cur, nil
		}
		return Ref{}, &Error{Kind: ErrPointerExists, Op: op, URL: url, CurrentETag: cur.ETag, Err: err,
			Detail: fmt.Sprintf("a pointer is already there (ETag %s); change it with a flip", cur.ETag)}
	}
	if err != nil {
		return Ref{}, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	return Ref{ETag: info.ETag, VersionID: info.VersionID}, nil
}

// Flip replaces the pointer with next, only if it is still the version
// expected (If-Match on expected.ETag, as read at Check). Someone else
// having moved or deleted it is ErrPointerConflict, with nothing written; a
// bucket without versioning is ErrUnversioned. It returns the new version.
// UpdatedAt is set to now when zero; see Pointer.Next for the previous_*
// fields.
//
// Flip is idempotent for a caller that retries with the very same next
// pointer, UpdatedAt included: if that pointer is already current (the
// first attempt landed), Flip returns its version rather than a conflict.
func Flip(ctx context.Context, store *blob.Store, url string, next Pointer, expected Ref) (Ref, error) {
	const op = "flip"
	if expected.ETag == "" {
		return Ref{}, fmt.Errorf("pointer: %s %s: no expected ETag (read the pointer first)", op, url)
	}
	if err := requireVersioning(ctx, store, op, url); err != nil {
		return Ref{}, err
	}
	body, err := encodeNew(op, url, next)
	if err != nil {
		return Ref{}, err
	}
	// The conditional PUT below is what guards the flip. Looking first
	// refuses a moved pointer without sending a write at all, and a deleted
	// one on versitygw too, which (unlike S3) lets If-Match pass against the
	// version behind a delete marker.
	cur, info, err := store.Get(ctx, url)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return Ref{}, conflict(op, url, expected.ETag, "", err)
	case err != nil:
		return Ref{}, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	case bytes.Equal(cur, body):
		// Already flipped: a retry of a Flip that landed.
		return Ref{ETag: info.ETag, VersionID: info.VersionID}, nil
	case info.ETag != expected.ETag:
		return Ref{}, conflict(op, url, expected.ETag, info.ETag, nil)
	}
	if now, derr := Decode(cur); derr == nil && next.Generation <= now.Generation {
		// The ETag matched, yet next is not newer than the pointer: it was
		// built from an older read (generations never repeat; see Pointer).
		return Ref{}, &Error{Kind: ErrPointerConflict, Op: op, URL: url, ExpectedETag: expected.ETag, CurrentETag: info.ETag,
			Detail: fmt.Sprintf("the new pointer has generation %d, the current one %d: it was built from an older pointer; nothing was written", next.Generation, now.Generation)}
	}
	info, err = store.PutIfMatch(ctx, url, body, expected.ETag)
	// If-Match on a missing object is 404: it was deleted since.
	if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
		ok, cur, rerr := landed(ctx, store, url, body)
		if rerr != nil {
			return Ref{}, fmt.Errorf("pointer: %s %s: %w (re-reading after: %w)", op, url, err, rerr)
		}
		if ok {
			return cur, nil
		}
		return Ref{}, conflict(op, url, expected.ETag, cur.ETag, err)
	}
	if err != nil {
		return Ref{}, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	return Ref{ETag: info.ETag, VersionID: info.VersionID}, nil
}

// RollbackOptions guard a rollback.
type RollbackOptions struct {
	// Check, when not nil, is given the current pointer and the one to be
	// restored before anything is written (the caller's startup check of
	// the restored catalog, and its look at what the current catalog took
	// since the flip): an error leaves the pointer as it is, so that a
	// rollback never points RockLake at a catalog that is gone, and never
	// drops commits unasked.
	Check func(ctx context.Context, current, restore Pointer) error
	// Relocate, when not nil, is given the current pointer and the one to
	// be restored, before Check, and names where the restored pointer's
	// catalog lives now ("": where it did). An in-place migration changed
	// its catalog where it lies and kept the catalog as it was elsewhere
	// (its way back): the restored pointer names that.
	Relocate func(current, restore Pointer) string
	// DryRun stops before writing: Rollback returns what it would restore.
	DryRun bool
}

// Rollback undoes the latest flip: it makes the kept version holding the
// current pointer's previous pointer (the newest version whose catalog and
// migration id are the current previous_catalog and previous_migration_id)
// current again, written as a new version with the next generation,
// conditional on the current ETag (a concurrent flip is ErrPointerConflict,
// and is kept).
// The catalogs themselves are not touched.
//
// A pointer that names no previous one (the first pointer, or one that was
// already rolled back to it), or whose previous one is no longer among the
// kept versions, is ErrNoPreviousVersion. A current version that is not a
// valid pointer is rolled back to the newest older version that is. A
// bucket without versioning is ErrUnversioned.
//
// opts.Check runs before anything is written; opts.DryRun writes nothing.
//
// It returns the restored pointer and the new version (with DryRun, the
// pointer that would be restored and the current version).
func Rollback(ctx context.Context, store *blob.Store, url string, opts RollbackOptions) (Pointer, Ref, error) {
	const op = "rollback"
	if err := requireVersioning(ctx, store, op, url); err != nil {
		return Pointer{}, Ref{}, err
	}
	cur, curRef, _, err := read(ctx, store, op, url)
	corrupt := errors.Is(err, ErrBadPointer)
	if err != nil && !corrupt {
		return Pointer{}, Ref{}, err
	}
	if !corrupt && !cur.HasPrevious() {
		return Pointer{}, Ref{}, &Error{Kind: ErrNoPreviousVersion, Op: op, URL: url,
			Detail: fmt.Sprintf("the current pointer (version %s, catalog %s) names no previous catalog: it is the first pointer, or earlier rollbacks already went back to it", curRef.VersionID, cur.Catalog)}
	}
	versions, err := store.ListVersions(ctx, url)
	if err != nil {
		return Pointer{}, Ref{}, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	if len(versions) == 0 || versions[0].DeleteMarker || versions[0].VersionID != curRef.VersionID {
		latest := ""
		if len(versions) > 0 {
			latest = versions[0].ETag
		}
		return Pointer{}, Ref{}, conflict(op, url, curRef.ETag, latest, nil)
	}

	var (
		target   Pointer
		targetID string
	)
	for _, v := range versions[1:] {
		if v.DeleteMarker {
			continue
		}
		body, _, err := store.GetVersion(ctx, url, v.VersionID)
		if err != nil {
			return Pointer{}, Ref{}, fmt.Errorf("pointer: %s %s: read version %s: %w", op, url, v.VersionID, err)
		}
		p, err := Decode(body)
		if err != nil {
			continue // not a pointer: never restored
		}
		if corrupt || p.Catalog == cur.PreviousCatalog && p.MigrationID == cur.PreviousMigrationID {
			target, targetID = p, v.VersionID
			break
		}
	}
	if targetID == "" {
		detail := fmt.Sprintf("no kept version of the pointer names catalog %s (migration %q), the previous one of the current pointer: the history ends before it, or a lifecycle rule expired it", cur.PreviousCatalog, cur.PreviousMigrationID)
		if corrupt {
			detail = "the current version is not a valid pointer and no older version is one"
		}
		return Pointer{}, Ref{}, &Error{Kind: ErrNoPreviousVersion, Op: op, URL: url, Detail: detail}
	}

	if opts.Relocate != nil {
		if u := opts.Relocate(cur, target); u != "" {
			target.Catalog = u
		}
	}
	if opts.Check != nil {
		if err := opts.Check(ctx, cur, target); err != nil {
			return Pointer{}, Ref{}, fmt.Errorf("pointer: %s %s to version %s (%s): the pointer was left as it is: %w", op, url, targetID, target.Catalog, err)
		}
	}
	if opts.DryRun {
		return target, curRef, nil
	}
	// The restored pointer is written anew, one generation past the
	// current one, rather than its old bytes copied back: an ETag read
	// before the flip must not become valid again (ABA).
	restored := target
	restored.Generation = max(cur.Generation, target.Generation) + 1
	restored.UpdatedAt = time.Time{}
	body, err := encodeNew(op, url, restored)
	if err != nil {
		return Pointer{}, Ref{}, err
	}
	restored, _ = Decode(body)
	info, err := store.PutIfMatch(ctx, url, body, curRef.ETag)
	if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
		ok, now, rerr := landed(ctx, store, url, body)
		if rerr != nil {
			return Pointer{}, Ref{}, fmt.Errorf("pointer: %s %s: %w (re-reading after: %w)", op, url, err, rerr)
		}
		if ok {
			return restored, now, nil
		}
		return Pointer{}, Ref{}, conflict(op, url, curRef.ETag, now.ETag, err)
	}
	if err != nil {
		return Pointer{}, Ref{}, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	return restored, Ref{ETag: info.ETag, VersionID: info.VersionID}, nil
}

// History lists the pointer's versions, newest first, delete markers
// included, each with its content (one GET per version). A bucket without
// versioning is ErrUnversioned; no version at all is ErrPointerMissing.
func History(ctx context.Context, store *blob.Store, url string) ([]Version, error) {
	const op = "history"
	if err := requireVersioning(ctx, store, op, url); err != nil {
		return nil, err
	}
	vs, err := store.ListVersions(ctx, url)
	if err != nil {
		return nil, fmt.Errorf("pointer: %s %s: %w", op, url, err)
	}
	if len(vs) == 0 {
		return nil, &Error{Kind: ErrPointerMissing, Op: op, URL: url, Detail: "the pointer has no versions"}
	}
	out := make([]Version, len(vs))
	bodies := make([][]byte, len(vs))
	for i, v := range vs {
		out[i] = Version{
			Ref:          Ref{ETag: v.ETag, VersionID: v.VersionID},
			LastModified: v.LastModified,
			Current:      v.IsLatest,
			DeleteMarker: v.DeleteMarker,
		}
		if v.DeleteMarker {
			continue
		}
		body, _, err := store.GetVersion(ctx, url, v.VersionID)
		if err != nil {
			return nil, fmt.Errorf("pointer: %s %s: read version %s: %w", op, url, v.VersionID, err)
		}
		bodies[i] = body
		p, err := Decode(body)
		if err != nil {
			out[i].Problem = err.Error()
			var e *Error
			if errors.As(err, &e) {
				out[i].Problem = e.Detail
			}
			continue
		}
		out[i].Pointer = &p
	}
	// Oldest first, so that a version repeating earlier content names the
	// first version that had it.
	first := map[string]string{}
	for i := len(out) - 1; i >= 0; i-- {
		if out[i].DeleteMarker {
			continue
		}
		k := string(bodies[i])
		if p := out[i].Pointer; p != nil {
			k = fmt.Sprintf("%q %d %q %q %q", p.Catalog, p.FormatVersion, p.MigrationID, p.PreviousCatalog, p.PreviousMigrationID)
		}
		if id, ok := first[k]; ok {
			out[i].RestoredFrom = id
		} else {
			first[k] = out[i].VersionID
		}
	}
	return out, nil
}
