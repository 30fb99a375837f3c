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
