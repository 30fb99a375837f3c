package workflow

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
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// leaseMargin is how long a lock outlives its run's execution timeout: a
// Lambda the execution timed out under goes on for up to 15 minutes, and
// clocks differ.
const leaseMargin = time.Hour

// LockLease is how long the lock of a run holds without its owner: the
// execution's timeout (Env.ExecutionTimeout: the definition's top-level
// TimeoutSeconds, which infra sets from executionTimeoutHours) and
// leaseMargin. One number decides both, so no step of a run can still be at
// work when its lease runs out and the next migration (or cleanup) takes the
// lock over; the gate's wait is inside the execution, so the lease is never
// renewed.
func (e Env) LockLease() (time.Duration, error) {
	t := e.ExecutionTimeout
	if t == 0 {
		var err error
		if t, err = DefinitionTimeout(); err != nil {
			return 0, err
		}
	}
	if t < 0 {
		return 0, fmt.Errorf("workflow: execution timeout %v: want a positive duration", t)
	}
	return t + leaseMargin, nil
}

// DefinitionTimeout is the migration definition's top-level TimeoutSeconds:
// the execution timeout of a local run (pkg/asl holds a run to it across the
// gate) and of a Lambda not told another (ExecutionTimeoutEnv).
func DefinitionTimeout() (time.Duration, error) {
	var def struct{ TimeoutSeconds int64 }
	if err := json.Unmarshal(statemachine.Migration, &def); err != nil {
		return 0, fmt.Errorf("workflow: the migration definition: %w", err)
	}
	if def.TimeoutSeconds <= 0 {
		return 0, errors.New("workflow: the migration definition has no top-level TimeoutSeconds")
	}
	return time.Duration(def.TimeoutSeconds) * time.Second, nil
}

// leaseOf is the lease of a lock of kind k: an operator's cleanup or
// restore holds it for what it needs at most, so that one killed frees the
// pointer within the hour, not after a migration's whole execution
// timeout (LockLease).
func (e Env) leaseOf(k history.Kind) (time.Duration, error) {
	switch k {
	case history.KindCleanup, history.KindRestore:
		return operatorLease, nil
	}
	return e.LockLease()
}

// operatorLease bounds the lock of a cleanup or a restore.
const operatorLease = time.Hour

// holdFor takes the pointer's lock for an operator's run of kind k (id
// names it), as acquireLock takes it for a migration.
func holdFor(ctx context.Context, env Env, pointerURL, id string, k history.Kind) (Migration, error) {
	held := Migration{Pointer: pointerURL, MigrationID: id, operatorKind: k}
	_, err := acquireLock(ctx, env, held, time.Now())
	return held, err
}

// ErrMigrationInProgress: another migration holds the pointer's lock.
var ErrMigrationInProgress = errname.New("workflow", NameMigrationInProgress, "")

// inProgress is the refusal of a run while migration held holds the lock.
func inProgress(held lock.Lock, pointerURL string) error {
	return fmt.Errorf("%w: migration %s (%s) holds %s since %s, until %s; nothing was touched. If that run is dead, `rocklake-migrate unlock --pointer %s --migration-id %s` breaks the lock",
		ErrMigrationInProgress, held.MigrationID, held.Owner, layout.Lock(pointerURL), held.AcquiredAt.Format(time.RFC3339), held.ExpiresAt.Format(time.RFC3339), pointerURL, held.MigrationID)
}

// acquireLock takes the pointer's lock for migration m, or takes over one
// whose lease ran out; a retry of m finds its own lock. It returns the lock
// m holds: when m took it (the migration's start, which names its record)
// and when it may fence the source, m's freeze grace after the lock is
// written.
func acquireLock(ctx context.Context, env Env, m Migration, now time.Time) (lock.Lock, error) {
	url := layout.Lock(m.Pointer)
	now = now.UTC().Truncate(time.Millisecond)
	lease, err := env.leaseOf(m.kind())
	if err != nil {
		return lock.Lock{}, err
	}
	l := lock.Lock{MigrationID: m.MigrationID, Owner: env.CreatedBy, AcquiredAt: now, ExpiresAt: now.Add(lease), DryRun: m.DryRun, Online: m.online(), Kind: m.kind()}
	if !m.DryRun && !l.Online && m.operatorKind == "" {
		// From the write, not from Check's start: the preflight before it
		// may take seconds.
		l.FenceAt = fenceTime(m)
	}
	body, err := json.Marshal(l)
	if err != nil {
		return lock.Lock{}, err
	}
	if _, err := env.Store.PutIfAbsent(ctx, url, body); err == nil {
		return l, nil
	} else if !errors.Is(err, blob.ErrPreconditionFailed) {
		return lock.Lock{}, fmt.Errorf("workflow: take the lock %s: %w", url, err)
	}
	held, info, err := readLock(ctx, env, url)
	if err != nil {
		return lock.Lock{}, err
	}
	switch {
	case held.MigrationID == m.MigrationID:
		return held, nil
	case held.MigrationID != "" && now.Before(held.ExpiresAt):
		return lock.Lock{}, inProgress(held, m.Pointer)
	}
	// Free, or its lease ran out: take it, only if nobody else did first.
	if _, err := env.Store.PutIfMatch(ctx, url, body, info.ETag); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) || errors.Is(err, blob.ErrNotFound) {
			return lock.Lock{}, fmt.Errorf("%w: another migration took the lock %s first", ErrMigrationInProgress, url)
		}
		return lock.Lock{}, fmt.Errorf("workflow: take the lock %s: %w", url, err)
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

func readLock(ctx context.Context, env Env, url string) (lock.Lock, blob.Info, error) {
	return lock.Get(ctx, env.Store, url)
}

// activeMigration is the migration holding the pointer's lock, for the drift
// check: "" when none does (no lock, a free one, or one whose lease ran out:
// its run is dead), or why the lock cannot be read.
func activeMigration(ctx context.Context, env Env, pointerURL string, now time.Time) (id, unknown string) {
	id, unknown, _ = lockHolder(ctx, env, pointerURL, now)
	return id, unknown
}

// lockHolder is activeMigration, and the read's error when the endpoint
// did not answer (S3Unreachable): a caller says it rather than meet it
// again on its next request.
func lockHolder(ctx context.Context, env Env, pointerURL string, now time.Time) (id, unknown string, silent error) {
	held, _, err := readLock(ctx, env, layout.Lock(pointerURL))
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return "", "", nil
	case errname.Of(err) == errname.Unreachable:
		return "", err.Error(), err
	case err != nil:
		return "", err.Error(), nil
	case held.MigrationID == lock.Unreadable:
		return "", layout.Lock(pointerURL) + " is not a lock object", nil
	case held.MigrationID != "" && now.Before(held.ExpiresAt):
		return held.MigrationID, "", nil
	}
	return "", "", nil
}

// ErrLockLost: the pointer's lock no longer names the migration, or its
// lease ran out: an operator broke it (unlock), or, past the lease, another
// migration or a cleanup took it over and may be removing this run's
// target and staging. The step wrote nothing; it is not retried, and
// Abort removes what is this run's.
var ErrLockLost = errname.New("workflow", NameLockLost, "")

// confirmLock is what every step from Freeze on does before it writes:
// migration id of pointerURL must still hold the lock, within its lease.
// The lease covers the execution's timeout, so a run of the definition
// meets this unless its lock was broken or taken with a shorter lease.
func confirmLock(ctx context.Context, env Env, pointerURL, id string) error {
	url := layout.Lock(pointerURL)
	held, _, err := readLock(ctx, env, url)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return fmt.Errorf("%w: migration %s: there is no lock %s", ErrLockLost, id, url)
	case err != nil:
		return err
	case held.MigrationID != id:
		return fmt.Errorf("%w: migration %s no longer holds %s (held by %q, released by %q); the step writes nothing more", ErrLockLost, id, url, held.MigrationID, held.ReleasedBy)
	case !time.Now().Before(held.ExpiresAt):
		return fmt.Errorf("%w: the lease of migration %s on %s ran out at %s; the step writes nothing more", ErrLockLost, id, url, held.ExpiresAt.Format(time.RFC3339))
	}
	return nil
}

// fenceTime is when m may fence its source: its freeze grace from now.
func fenceTime(m Migration) time.Time {
	return time.Now().UTC().Add(time.Duration(m.FreezeGrace * float64(time.Second))).Truncate(time.Millisecond)
}

// announceFence names the fence time in the lock online migration m
// holds: its freeze grace from now, for the supervisors to switch the
// servers to reader mode first. A retry finds it named and keeps it.
func announceFence(ctx context.Context, env Env, m Migration) (time.Time, error) {
	url := layout.Lock(m.Pointer)
	held, info, err := readLock(ctx, env, url)
	if err != nil {
		return time.Time{}, err
	}
	if held.MigrationID != m.MigrationID {
		return time.Time{}, fmt.Errorf("%w: migration %s no longer holds %s (held by %q); the source was not fenced", ErrLockLost, m.MigrationID, url, held.MigrationID)
	}
	if !held.FenceAt.IsZero() {
		return held.FenceAt, nil
	}
	held.FenceAt = fenceTime(m)
	body, err := json.Marshal(held)
	if err != nil {
		return time.Time{}, err
	}
	if _, err := env.Store.PutIfMatch(ctx, url, body, info.ETag); err != nil {
		return time.Time{}, fmt.Errorf("workflow: name the fence in the lock %s: %w", url, err)
	}
	return held.FenceAt, nil
}

// releaseLock frees the pointer's lock if migration m holds it.
func releaseLock(ctx context.Context, env Env, m Migration) error {
	url := layout.Lock(m.Pointer)
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
	return lock.Free(ctx, env.Store, url, etag, by)
}

// Unlock breaks the lock of the pointer at pointerURL, which migration id
// must hold ("" for whichever): for an operator whose migration died with its
// lock held. It returns the lock it freed.
func Unlock(ctx context.Context, env Env, pointerURL, id string) (lock.Lock, error) {
	url := layout.Lock(pointerURL)
	held, info, err := readLock(ctx, env, url)
	if err != nil {
		return lock.Lock{}, err
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
