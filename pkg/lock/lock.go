// Package lock owns the object beside a pointer that lets one run at a time
// change it (<pointer>.lock, layout.Lock): what it records (Lock: the
// holder, its kind, its lease, when it may fence the source) and its reads
// (Read for a watcher, with a conditional GET; Get) and its conditional
// writes (Free). A lock is released by writing it free, never deleted: the
// object stays, so every later take is a conditional put on its ETag.
//
// Who may take it and for how long (a lease per kind of run), and what a
// takeover records, are the workflow's (pkg/workflow/lock.go); the servers'
// supervisors only read it (pkg/supervise).
package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// Lock is the lock object. Times are UTC.
type Lock struct {
	MigrationID string    `json:"migration_id,omitempty"` // "" when free
	Owner       string    `json:"owner,omitempty"`
	AcquiredAt  time.Time `json:"acquired_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// ReleasedBy says who freed it last (a migration, or unlock).
	ReleasedBy string `json:"released_by,omitempty"`
	// FenceAt is the latest time the holder fences the source (when it
	// named its fence plus the run's freeze grace; it fences as soon as
	// the live supervisors acknowledged); zero for a dry run, which fences
	// nothing (DryRun), for an online run that has not named it yet, and
	// in locks written before it existed, where readers take AcquiredAt.
	FenceAt time.Time `json:"fence_at,omitzero"`
	DryRun  bool      `json:"dry_run,omitempty"`
	// Online: the holder copies while the source's writer goes on, and
	// names its fence_at only when its Fence is about to fence: until then
	// the supervisors keep RockLake's writer.
	Online bool `json:"online,omitempty"`
	// Kind is what sort of run holds the lock ("migrate", "dry-run",
	// "rollback", "cleanup", "restore": its record's kind); "" in locks
	// written before it.
	Kind history.Kind `json:"kind,omitempty"`
}

// Held reports whether a run holds l at now: taken, and its lease not run
// out (past it, the next run may take it over: its run is dead).
func (l Lock) Held(now time.Time) bool { return l.MigrationID != "" && now.Before(l.ExpiresAt) }

// WritesGoOn reports whether the holder of l lets RockLake's writer go on
// committing: an online migration (or rollback) that has not named its
// fence yet, or a cleanup, which touches only what no server uses.
func (l Lock) WritesGoOn() bool {
	return l.Online && l.FenceAt.IsZero() || l.Kind == history.KindCleanup
}

// Unreadable is the holder Decode reports for an object that is not a
// lock, held until NeverExpires: only unlock clears it. Fail closed.
const Unreadable = "(unreadable lock)"

// NeverExpires is an unreadable lock's lease.
var NeverExpires = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Decode decodes a lock object; one that is not a lock is held for ever.
func Decode(b []byte) Lock {
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return Lock{MigrationID: Unreadable, ExpiresAt: NeverExpires}
	}
	return l
}

// Get reads the lock object at url (layout.Lock of a pointer) and its
// version.
func Get(ctx context.Context, store *blob.Store, url string) (Lock, blob.Info, error) {
	b, info, err := store.Get(ctx, url)
	if err != nil {
		return Lock{}, info, fmt.Errorf("lock: read %s: %w", url, err)
	}
	return Decode(b), info, nil
}

// Read reads the lock of the pointer at pointerURL for a watcher
// (rocklake-migrate serve), with a conditional GET: blob.ErrNotModified
// while it is still at etag ("" always reads). No lock object is a free
// lock. It returns the lock and its ETag.
func Read(ctx context.Context, store *blob.Store, pointerURL, etag string) (Lock, string, error) {
	url := layout.Lock(pointerURL)
	b, info, err := store.GetIfNoneMatch(ctx, url, etag)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return Lock{}, "", nil
	case err != nil:
		return Lock{}, etag, fmt.Errorf("lock: read %s: %w", url, err)
	}
	return Decode(b), info.ETag, nil
}

// Free writes the lock at url free, released by by, if it is still at
// etag.
func Free(ctx context.Context, store *blob.Store, url, etag, by string) error {
	body, err := json.Marshal(Lock{ReleasedBy: by})
	if err != nil {
		return err
	}
	if _, err := store.PutIfMatch(ctx, url, body, etag); err != nil {
		return fmt.Errorf("lock: release %s: %w", url, err)
	}
	return nil
}

// The lock's refusals, by name (errname): Retry and Catch, the records and
// the CLI's JSON match them.
var (
	// ErrInProgress: another run holds the pointer's lock.
	ErrInProgress = errname.New("lock", "MigrationInProgress", "")
	// ErrLost: the lock no longer names the run, or its lease ran out: an
	// operator broke it (unlock), or, past the lease, another run took it
	// over and may be removing this run's target and staging. The step
	// wrote nothing; it is not retried, and Abort removes what is the
	// run's.
	ErrLost = errname.New("lock", "LockLost", "")
)

// InProgress is the refusal of a run of pointerURL while held holds its
// lock.
func InProgress(held Lock, pointerURL string) error {
	return fmt.Errorf("%w: migration %s (%s) holds %s since %s, until %s; nothing was touched. If that run is dead, `rocklake-migrate unlock --pointer %s --migration-id %s` breaks the lock",
		ErrInProgress, held.MigrationID, held.Owner, layout.Lock(pointerURL), held.AcquiredAt.Format(time.RFC3339), held.ExpiresAt.Format(time.RFC3339), pointerURL, held.MigrationID)
}

// Acquire takes the lock of the pointer at pointerURL for want (its
// MigrationID names the run), or takes over one whose lease ran out, with
// a conditional write either way; a retry of the run finds its own lock.
// It returns the lock the run holds (its own earlier write, on a retry)
// and, on a takeover, the dead run's lock, whose record the caller ends.
func Acquire(ctx context.Context, store *blob.Store, pointerURL string, want Lock, now time.Time) (held, tookOver Lock, err error) {
	url := layout.Lock(pointerURL)
	body, err := json.Marshal(want)
	if err != nil {
		return Lock{}, Lock{}, err
	}
	if _, err := store.PutIfAbsent(ctx, url, body); err == nil {
		return want, Lock{}, nil
	} else if !errors.Is(err, blob.ErrPreconditionFailed) {
		return Lock{}, Lock{}, fmt.Errorf("lock: take %s: %w", url, err)
	}
	cur, info, err := Get(ctx, store, url)
	if err != nil {
		return Lock{}, Lock{}, err
	}
	switch {
	case cur.MigrationID == want.MigrationID:
		return cur, Lock{}, nil
	case cur.Held(now):
		return Lock{}, Lock{}, InProgress(cur, pointerURL)
	}
	// Free, or its lease ran out: take it, only if nobody else did first.
	if _, err := store.PutIfMatch(ctx, url, body, info.ETag); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
			return Lock{}, Lock{}, fmt.Errorf("%w: another run took the lock %s first", ErrInProgress, url)
		}
		return Lock{}, Lock{}, fmt.Errorf("lock: take %s: %w", url, err)
	}
	if cur.MigrationID == "" {
		return want, Lock{}, nil
	}
	return want, cur, nil
}

// Holder is the run holding the lock of the pointer at pointerURL at now:
// "" when none does (no lock, a free one, or one whose lease ran out: its
// run is dead), or why the lock cannot be read (unknown), and the read's
// error when the endpoint did not answer (S3Unreachable), for a caller to
// say rather than meet again on its next request.
func Holder(ctx context.Context, store *blob.Store, pointerURL string, now time.Time) (id, unknown string, silent error) {
	held, _, err := Get(ctx, store, layout.Lock(pointerURL))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return "", "", nil
	case errname.Of(err) == errname.Unreachable:
		return "", err.Error(), err
	case err != nil:
		return "", err.Error(), nil
	case held.MigrationID == Unreadable:
		return "", layout.Lock(pointerURL) + " is not a lock object", nil
	case held.Held(now):
		return held.MigrationID, "", nil
	}
	return "", "", nil
}

// Confirm is what a run does before each write: run id must still hold
// the lock of the pointer at pointerURL, within its lease (ErrLost).
func Confirm(ctx context.Context, store *blob.Store, pointerURL, id string) error {
	url := layout.Lock(pointerURL)
	held, _, err := Get(ctx, store, url)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return fmt.Errorf("%w: migration %s: there is no lock %s", ErrLost, id, url)
	case err != nil:
		return err
	case held.MigrationID != id:
		return fmt.Errorf("%w: migration %s no longer holds %s (held by %q, released by %q); the step writes nothing more", ErrLost, id, url, held.MigrationID, held.ReleasedBy)
	case !time.Now().Before(held.ExpiresAt):
		return fmt.Errorf("%w: the lease of migration %s on %s ran out at %s; the step writes nothing more", ErrLost, id, url, held.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// NameFence writes fenceAt into the lock run id holds on the pointer at
// pointerURL, for the supervisors to switch the servers away before it. A
// retry finds one named and keeps it: it returns the fence the lock names.
func NameFence(ctx context.Context, store *blob.Store, pointerURL, id string, fenceAt time.Time) (time.Time, error) {
	url := layout.Lock(pointerURL)
	held, info, err := Get(ctx, store, url)
	if err != nil {
		return time.Time{}, err
	}
	if held.MigrationID != id {
		return time.Time{}, fmt.Errorf("%w: migration %s no longer holds %s (held by %q); the source was not fenced", ErrLost, id, url, held.MigrationID)
	}
	if !held.FenceAt.IsZero() {
		return held.FenceAt, nil
	}
	held.FenceAt = fenceAt
	body, err := json.Marshal(held)
	if err != nil {
		return time.Time{}, err
	}
	if _, err := store.PutIfMatch(ctx, url, body, info.ETag); err != nil {
		return time.Time{}, fmt.Errorf("lock: name the fence in %s: %w", url, err)
	}
	return held.FenceAt, nil
}

// Release frees the lock of the pointer at pointerURL if run id holds it;
// no lock, or another's, is left as it is.
func Release(ctx context.Context, store *blob.Store, pointerURL, id string) error {
	url := layout.Lock(pointerURL)
	held, info, err := Get(ctx, store, url)
	if errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if held.MigrationID != id {
		return nil
	}
	return Free(ctx, store, url, info.ETag, "migration "+id)
}

// Break frees the lock of the pointer at pointerURL, which run id must
// hold ("" for whichever), for an operator whose run died with it held
// (rocklake-migrate unlock); by names the operator. It returns the lock it
// freed.
func Break(ctx context.Context, store *blob.Store, pointerURL, id, by string) (Lock, error) {
	url := layout.Lock(pointerURL)
	held, info, err := Get(ctx, store, url)
	if err != nil {
		return Lock{}, err
	}
	if held.MigrationID == "" {
		return held, fmt.Errorf("lock: unlock %s: it is not held", url)
	}
	if id != "" && held.MigrationID != id {
		return held, fmt.Errorf("lock: unlock %s: held by migration %s, not %s; nothing changed", url, held.MigrationID, id)
	}
	if err := Free(ctx, store, url, info.ETag, by); err != nil {
		return held, err
	}
	return held, nil
}
