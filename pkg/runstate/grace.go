package runstate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
)

// DefaultFreezeGrace bounds the wait between naming the fence and fencing
// the source when the input names none: the fence comes as soon as every
// live supervisor of the pointer has acknowledged it (pkg/presence), at
// once when none follows the pointer; a live one that has not within the
// grace fails the step (presence.ErrNotAcknowledged) rather than be
// fenced unawares. It holds a writer's drain (RockLake's 10 s for a client
// that keeps its connection) and a reader's start.
const DefaultFreezeGrace = 30 * time.Second

// MaxFreezeGrace bounds the grace: Freeze waits it out inside its Lambda,
// whose 900 s timeout must still hold the fence, the checkpoint and the
// shard plan (whose byte scan alone may take 2 minutes).
const MaxFreezeGrace = 5 * time.Minute

// FreezeGraceOf is an input's freeze_grace in seconds (nil: the
// default), checked.
func FreezeGraceOf(given *float64) (float64, error) {
	if given == nil {
		return DefaultFreezeGrace.Seconds(), nil
	}
	g := *given
	if g < 0 || g > MaxFreezeGrace.Seconds() {
		return 0, fmt.Errorf("%w: freeze_grace %v s: want 0 to %v s", ErrBadFreezeGrace, g, MaxFreezeGrace.Seconds())
	}
	return g, nil
}

// AwaitFence is what a step does before it fences m's source: it waits
// until every live supervisor of the pointer has acknowledged m's fence
// (its server no writer on the source, nothing opened there until the lock
// frees), at most until the lock's fence_at (m's grace after the fence was
// named): past it, presence.ErrNotAcknowledged and nothing fenced. A run
// with a grace of 0 (no supervisor, says its operator) and a dry run do
// not wait. Then it reads the lock again (lock.Confirm): a run aborted and
// replaced during the wait must not fence the source the next run is using.
func AwaitFence(ctx context.Context, env Env, m Migration) error {
	if err := awaitAcknowledgements(ctx, env, m); err != nil {
		return err
	}
	return lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID)
}

func awaitAcknowledgements(ctx context.Context, env Env, m Migration) error {
	if m.DryRun || m.FreezeGrace <= 0 {
		return nil
	}
	bound := time.Duration(m.FreezeGrace * float64(time.Second))
	switch {
	case !m.FenceAt.IsZero():
		bound = time.Until(m.FenceAt)
	case !m.StartedAt.IsZero():
		bound -= time.Since(m.StartedAt)
	}
	waited, err := presence.Await(ctx, env.Store, m.Pointer, max(bound, 0), "acknowledge the fence of "+m.MigrationID,
		func(r presence.Record) bool { return r.Acked != m.MigrationID })
	if err != nil {
		return fmt.Errorf("runstate: %s: %w", m.Source, err)
	}
	slog.InfoContext(ctx, "runstate: the servers acknowledged the fence", "migration_id", m.MigrationID, "seconds", waited.Seconds())
	return nil
}
