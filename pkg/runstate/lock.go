package runstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/history"
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
		return 0, fmt.Errorf("runstate: execution timeout %v: want a positive duration", t)
	}
	return t + leaseMargin, nil
}

// DefinitionTimeout is the migration definition's top-level TimeoutSeconds:
// the execution timeout of a local run (pkg/asl holds a run to it across the
// gate) and of a Lambda not told another (ExecutionTimeoutEnv).
func DefinitionTimeout() (time.Duration, error) {
	var def struct{ TimeoutSeconds int64 }
	if err := json.Unmarshal(statemachine.Migration, &def); err != nil {
		return 0, fmt.Errorf("runstate: the migration definition: %w", err)
	}
	if def.TimeoutSeconds <= 0 {
		return 0, errors.New("runstate: the migration definition has no top-level TimeoutSeconds")
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

// HoldLock takes the pointer's lock for an operator's run of kind k (id
// names it), as AcquireLock takes it for a migration.
func HoldLock(ctx context.Context, env Env, pointerURL, id string, k history.Kind) (Migration, error) {
	held := Migration{Run: Run{Pointer: pointerURL, MigrationID: id}, OperatorKind: k}
	_, err := AcquireLock(ctx, env, held, time.Now())
	return held, err
}

// AcquireLock takes the pointer's lock for migration m (lock.Acquire), with
// its kind's lease, and ends the record of a dead run it took over. It
// returns the lock m holds: when m took it (the migration's start, which
// names its record) and when it may fence the source, m's freeze grace
// after the lock is written.
func AcquireLock(ctx context.Context, env Env, m Migration, now time.Time) (lock.Lock, error) {
	now = now.UTC().Truncate(time.Millisecond)
	lease, err := env.leaseOf(m.Kind())
	if err != nil {
		return lock.Lock{}, err
	}
	l := lock.Lock{MigrationID: m.MigrationID, Owner: env.CreatedBy, AcquiredAt: now, ExpiresAt: now.Add(lease), DryRun: m.DryRun, Online: m.CopiesOnline(), Kind: m.Kind()}
	if !m.DryRun && !l.Online && m.OperatorKind == "" {
		// From the write, not from Check's start: the preflight before it
		// may take seconds.
		l.FenceAt = fenceTime(m)
	}
	held, dead, err := lock.Acquire(ctx, env.Store, m.Pointer, l, now)
	if err != nil {
		return lock.Lock{}, err
	}
	if dead.MigrationID != "" {
		// A run whose every step died: its record ends here, not "in
		// progress" forever.
		endRecord(ctx, env, m.Pointer, dead.MigrationID, func(r *history.Record) {
			r.Outcome, r.ErrorName = history.Failed, NameLockExpired
			r.Error = fmt.Sprintf("the run's lock expired at %s and migration %s took it over", dead.ExpiresAt.Format(time.RFC3339), m.MigrationID)
		})
	}
	return held, nil
}

// fenceTime is when m may fence its source: its freeze grace from now.
func fenceTime(m Migration) time.Time {
	return time.Now().UTC().Add(time.Duration(m.FreezeGrace * float64(time.Second))).Truncate(time.Millisecond)
}

// AnnounceFence names the fence time in the lock online migration m
// holds: its freeze grace from now, for the supervisors to switch the
// servers to reader mode first. A retry finds it named and keeps it.
func AnnounceFence(ctx context.Context, env Env, m Migration) (time.Time, error) {
	return lock.NameFence(ctx, env.Store, m.Pointer, m.MigrationID, fenceTime(m))
}

// Unlock breaks the lock of the pointer at pointerURL, which migration id
// must hold ("" for whichever): for an operator whose migration died with its
// lock held. It returns the lock it freed and ends that run's record.
func Unlock(ctx context.Context, env Env, pointerURL, id string) (lock.Lock, error) {
	held, err := lock.Break(ctx, env.Store, pointerURL, id, "unlock by "+env.CreatedBy)
	if err != nil {
		return held, err
	}
	endRecord(ctx, env, pointerURL, held.MigrationID, func(r *history.Record) {
		r.Outcome, r.ErrorName = history.Failed, NameUnlocked
		r.Error = fmt.Sprintf("the run's lock was broken by %s: the run had died, or was given up", env.CreatedBy)
	})
	return held, nil
}
