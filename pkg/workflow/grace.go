package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// DefaultFreezeGrace is the wait between taking the lock and fencing the
// source when the input names none: a supervisor polling the lock every 1-2
// s sees it and restarts RockLake as a reader (its writer's drain included)
// within it.
const DefaultFreezeGrace = 5 * time.Second

// MaxFreezeGrace bounds the grace: Freeze waits it out inside its Lambda,
// whose 900 s timeout must still hold the fence, the checkpoint and the
// shard plan (whose byte scan alone may take 2 minutes).
const MaxFreezeGrace = 5 * time.Minute

// ErrBadFreezeGrace: the input's freeze_grace is negative or longer than
// MaxFreezeGrace; Check refuses before anything is touched.
var ErrBadFreezeGrace = errname.New("workflow", NameBadFreezeGrace, "")

// freezeGrace is in's grace in seconds, checked.
func freezeGrace(in CheckInput) (float64, error) {
	if in.FreezeGrace == nil {
		return DefaultFreezeGrace.Seconds(), nil
	}
	g := *in.FreezeGrace
	if g < 0 || g > MaxFreezeGrace.Seconds() {
		return 0, fmt.Errorf("%w: freeze_grace %v s: want 0 to %v s", ErrBadFreezeGrace, g, MaxFreezeGrace.Seconds())
	}
	return g, nil
}

// awaitGrace waits until the lock's fence_at (m's grace after the lock was
// written), before a step fences the source; a retried step whose grace is
// over does not wait again.
func awaitGrace(ctx context.Context, m Migration) error {
	if m.DryRun || m.FreezeGrace <= 0 {
		return nil
	}
	wait := time.Duration(m.FreezeGrace * float64(time.Second))
	switch {
	case !m.FenceAt.IsZero():
		wait = time.Until(m.FenceAt)
	case !m.StartedAt.IsZero():
		wait -= time.Since(m.StartedAt)
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("workflow: freeze grace: %w", context.Cause(ctx))
	}
}
