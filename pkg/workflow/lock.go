package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/history"
)

// LockLease is how long a migration's lock holds without its owner: past
// it, the next migration may take the lock over (a run whose every step
// died). No migration runs this long; Step Functions' own timeout is shorter.
// A migration waiting at the gate renews it on entry (GateTimeout is
// shorter), so the lease outlives the wait and the Flip after it.
const LockLease = 24 * time.Hour

// Lock is the object beside the pointer (<pointer>.lock) that makes one
// migration at a time run on a pointer. Check takes it with a conditional
// put before anything touches the source; Flip and Abort release it by
// writing it free (no MigrationID), never by deleting it: the object stays,
// so every later take is a conditional put on its ETag (a delete marker in
// a versioned bucket would defeat If-None-Match on some S3 servers).
type Lock struct {
	MigrationID string    `json:"migration_id,omitempty"` // "" when free
	Owner       string    `json:"owner,omitempty"`
	AcquiredAt  time.Time `json:"acquired_at"`
	ExpiresAt   time.Time `json:"expires_at"`
	// ReleasedBy says who freed it last (a migration, or unlock).
	ReleasedBy string `json:"released_by,omitempty"`
	// FenceAt is the earliest time the holder fences the source (Check's
	// time plus the run's freeze grace): until then the servers'
	// supervisors may reopen the source as readers; zero for a dry run,
	// which fences nothing (DryRun), and in locks written before it
	// existed, where readers take AcquiredAt.
	FenceAt time.Time `json:"fence_at,omitzero"`
	DryRun  bool      `json:"dry_run,omitempty"`
}

// Held reports whether a migration holds l at now: taken, and its lease
// not run out (past it, the next migration may take it over: its run is
// dead).
func (l Lock) Held(now time.Time) bool { return l.MigrationID != "" && now.Before(l.ExpiresAt) }

// ReadLock reads the lock of the pointer at pointerURL for a watcher
// (rocklake-migrate serve), with a conditional GET: blob.ErrNotModified
// while it is still at etag ("" always reads). No lock object is a free
// lock; one that cannot be decoded is held (fail closed: only unlock
// clears it). It returns the lock and its ETag.
func ReadLock(ctx context.Context, store *blob.Store, pointerURL, etag string) (Lock, string, error) {
	url := LockURL(pointerURL)
	b, info, err := store.GetIfNoneMatch(ctx, url, etag)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return Lock{}, "", nil
	case err != nil:
		return Lock{}, etag, fmt.Errorf("workflow: read the lock %s: %w", url, err)
	}
	return decodeLock(b), info.ETag, nil
}

// decodeLock decodes a lock object; one that is not a lock is held until
// it expires, which it never does: only unlock clears it. Fail closed.
func decodeLock(b []byte) Lock {
	var l Lock
	if err := json.Unmarshal(b, &l); err != nil {
		return Lock{MigrationID: unreadableLock, ExpiresAt: time.Now().Add(LockLease)}
	}
	return l
}

// ErrMigrationInProgress: another migration holds the pointer's lock.
var ErrMigrationInProgress = errors.New("MigrationInProgress")

// LockURL is the lock object of the pointer at url.
func LockURL(pointerURL string) string { return pointerURL + ".lock" }

// inProgress is the refusal of a run while migration held holds the lock.
func inProgress(held Lock, pointerURL string) error {
	return fmt.Errorf("%w: migration %s (%s) holds %s since %s, until %s; nothing was touched. If that run is dead, `rocklake-migrate unlock --pointer %s --migration-id %s` breaks the lock",
		ErrMigrationInProgress, held.MigrationID, held.Owner, LockURL(pointerURL), held.AcquiredAt.Format(time.RFC3339), held.ExpiresAt.Format(time.RFC3339), pointerURL, held.MigrationID)
}

// acquireLock takes the pointer's lock for migration m, or takes over one
// whose lease ran out; a retry of m finds its own lock. It returns the lock
// m holds: when m took it (the migration's start, which names its record)
// and when it may fence the source, m's freeze grace after the lock is
// written.
func acquireLock(ctx context.Context, env Env, m Migration, now time.Time) (Lock, error) {
	url := LockURL(m.Pointer)
	now = now.UTC().Truncate(time.Millisecond)
	l := Lock{MigrationID: m.MigrationID, Owner: env.CreatedBy, AcquiredAt: now, ExpiresAt: now.Add(LockLease), DryRun: m.DryRun}
	if !m.DryRun {
		// From the write, not from Check's start: the preflight before it
		// may take seconds.
		l.FenceAt = time.Now().UTC().Add(time.Duration(m.FreezeGrace * float64(time.Second))).Truncate(time.Millisecond)
	}
	body, err := json.Marshal(l)
	if err != nil {
		return Lock{}, err
	}
	if _, err := env.Store.PutIfAbsent(ctx, url, body); err == nil {
		return l, nil
	} else if !errors.Is(err, blob.ErrPreconditionFailed) {
		return Lock{}, fmt.Errorf("workflow: take the lock %s: %w", url, err)
	}
	held, info, err := readLock(ctx, env, url)
	if err != nil {
		return Lock{}, err
	}
	switch {
	case held.MigrationID == m.MigrationID:
		return held, nil
	case held.MigrationID != "" && now.Before(held.ExpiresAt):
		return Lock{}, inProgress(held, m.Pointer)
	}
	// Free, or its lease ran out: take it, only if nobody else did first.
	if _, err := env.Store.PutIfMatch(ctx, url, body, info.ETag); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
			return Lock{}, fmt.Errorf("%w: another migration took the lock %s first", ErrMigrationInProgress, url)
		}
		return Lock{}, fmt.Errorf("workflow: take the lock %s: %w", url, err)
	}
	if held.MigrationID != "" {
		// A run whose every step died: its record ends here, not "in
		// progress" forever.
		endRecord(ctx, env, m.Pointer, held.MigrationID, func(r *history.Record) {
			r.Outcome, r.ErrorName = history.Failed, NameLockExpired
			r.Error = fmt.Sprintf("the run's lock expired at %s and migration %s took it over", held.ExpiresAt.Format(time.RFC3339), m.MigrationID)
		})
	}
	return l, nil
}

// NameLockExpired: the error name in the record of a run whose lock's
// lease ran out and another migration took over.
const NameLockExpired = "LockExpired"

func readLock(ctx context.Context, env Env, url string) (Lock, blob.Info, error) {
	b, info, err := env.Store.Get(ctx, url)
	if err != nil {
		return Lock{}, info, fmt.Errorf("workflow: read the lock %s: %w", url, err)
	}
	return decodeLock(b), info, nil
}

// unreadableLock is the holder readLock reports for a lock it cannot decode.
const unreadableLock = "(unreadable lock)"

// activeMigration is the migration holding the pointer's lock, for the drift
// check: "" when none does (no lock, a free one, or one whose lease ran out:
// its run is dead), or why the lock cannot be read.
func activeMigration(ctx context.Context, env Env, pointerURL string, now time.Time) (id, unknown string) {
	held, _, err := readLock(ctx, env, LockURL(pointerURL))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return "", ""
	case err != nil:
		return "", err.Error()
	case held.MigrationID == unreadableLock:
		return "", LockURL(pointerURL) + " is not a lock object"
	case held.MigrationID != "" && now.Before(held.ExpiresAt):
		return held.MigrationID, ""
	}
	return "", ""
}

// renewLock extends the lease of the lock migration m holds to LockLease
// from now: the Gate step's, so that the lock outlives the gate's wait. A
// lock m no longer holds (its lease ran out and another migration took it)
// is ErrMigrationInProgress, and nothing is written.
func renewLock(ctx context.Context, env Env, m Migration, now time.Time) (Lock, error) {
	url := LockURL(m.Pointer)
	held, info, err := readLock(ctx, env, url)
	if err != nil {
		return held, err
	}
	if held.MigrationID != m.MigrationID {
		return held, fmt.Errorf("%w: migration %s no longer holds %s (held by %q): its lease ran out", ErrMigrationInProgress, m.MigrationID, url, held.MigrationID)
	}
	held.ExpiresAt = now.Add(LockLease).UTC()
	body, err := json.Marshal(held)
	if err != nil {
		return held, err
	}
	if _, err := env.Store.PutIfMatch(ctx, url, body, info.ETag); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) {
			return held, fmt.Errorf("%w: the lock %s changed while migration %s renewed it", ErrMigrationInProgress, url, m.MigrationID)
		}
		return held, fmt.Errorf("workflow: renew the lock %s: %w", url, err)
	}
	return held, nil
}

// releaseLock frees the pointer's lock if migration m holds it.
func releaseLock(ctx context.Context, env Env, m Migration) error {
	url := LockURL(m.Pointer)
	held, info, err := readLock(ctx, env, url)
	if errors.Is(err, blob.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if held.MigrationID != m.MigrationID {
		return nil
	}
	return free(ctx, env, url, info.ETag, "migration "+m.MigrationID)
}

func free(ctx context.Context, env Env, url, etag, by string) error {
	body, err := json.Marshal(Lock{ReleasedBy: by})
	if err != nil {
		return err
	}
	if _, err := env.Store.PutIfMatch(ctx, url, body, etag); err != nil {
		return fmt.Errorf("workflow: release the lock %s: %w", url, err)
	}
	return nil
}

// Unlock breaks the lock of the pointer at pointerURL, which migration id
// must hold ("" for whichever): for an operator whose migration died with its
// lock held. It returns the lock it freed.
func Unlock(ctx context.Context, env Env, pointerURL, id string) (Lock, error) {
	url := LockURL(pointerURL)
	held, info, err := readLock(ctx, env, url)
	if err != nil {
		return Lock{}, err
	}
	if held.MigrationID == "" {
		return held, fmt.Errorf("workflow: unlock %s: it is not held", url)
	}
	if id != "" && held.MigrationID != id {
		return held, fmt.Errorf("workflow: unlock %s: held by migration %s, not %s; nothing changed", url, held.MigrationID, id)
	}
	if err := free(ctx, env, url, info.ETag, "unlock by "+env.CreatedBy); err != nil {
		return held, err
	}
	endRecord(ctx, env, pointerURL, held.MigrationID, func(r *history.Record) {
		r.Outcome, r.ErrorName = history.Failed, NameUnlocked
		r.Error = fmt.Sprintf("the run's lock was broken by %s: the run had died, or was given up", env.CreatedBy)
	})
	return held, nil
}

// NameUnlocked: the error name in the record of a run whose lock an
// operator broke (Unlock).
const NameUnlocked = "Unlocked"
