package runstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The flip's pins: a view of each catalog a flip went between, named for
// the run (layout.FlipCheckpoint), which a rollback carries commits from
// and proves the previous catalog unchanged by.

func ViewOf(p pointer.Pin) slatedb.View {
	return slatedb.View{Checkpoint: p.Checkpoint, WALEnd: p.WALEnd}
}

func PinOf(v slatedb.View) pointer.Pin {
	return pointer.Pin{Checkpoint: v.Checkpoint, WALEnd: v.WALEnd}
}

// PinFlip takes migration id's flip's pins, a view of each catalog, named
// for it (layout.FlipCheckpoint), before the pointer names the current one:
// nothing but the run has written either since its fence. previous is the
// catalog a rollback goes back to (the source, or an in-place run's way
// back), current the one the pointer is about to name.
func PinFlip(ctx context.Context, env Env, id, previous, current string) (*pointer.FlipPoint, error) {
	var fp pointer.FlipPoint
	for _, c := range []struct {
		url string
		pin *pointer.Pin
	}{{previous, &fp.Previous}, {current, &fp.Current}} {
		v, err := slatedb.TakeView(ctx, c.url, slatedb.CheckpointOptions{Name: layout.FlipCheckpoint(id)}, env.SlateDB)
		if err != nil {
			return nil, fmt.Errorf("runstate: flip: pin %s: %w", c.url, err)
		}
		*c.pin = PinOf(v)
	}
	return &fp, nil
}

// DropPins deletes a flip's pins once the pointer moved past that flip
// (the rollback of it succeeded).
func DropPins(ctx context.Context, env Env, p Plan) error {
	if p.FlipPoint == nil {
		return nil
	}
	var errs []error
	for url, pin := range map[string]pointer.Pin{p.Source: p.FlipPoint.Current, p.Target: p.FlipPoint.Previous} {
		if err := slatedb.DeleteCheckpoint(ctx, url, pin.Checkpoint, env.SlateDB); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
			errs = append(errs, fmt.Errorf("runstate: delete the flip's pin %s of %s: %w", pin.Checkpoint, url, err))
		}
	}
	return errors.Join(errs...)
}

// DropFlipPin deletes the pin a migration's Flip took of the catalog at url
// (a Flip that pinned, then refused), if there is one.
func DropFlipPin(ctx context.Context, env Env, url, id string) error {
	if url == "" {
		return nil
	}
	cps, err := slatedb.ListCheckpoints(ctx, url, env.SlateDB)
	if errors.Is(err, slatedb.ErrNoDatabase) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list the checkpoints of %s: %w", url, err)
	}
	for _, cp := range cps {
		if cp.Name != layout.FlipCheckpoint(id) {
			continue
		}
		if err := slatedb.DeleteCheckpoint(ctx, url, cp.ID, env.SlateDB); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
			return fmt.Errorf("delete the flip's pin %s of %s: %w", cp.ID, url, err)
		}
	}
	return nil
}
