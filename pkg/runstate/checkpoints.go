package runstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// DeleteCheckpoints deletes the checkpoints migration m took of its
// source: Freeze's, cp ("" when none); an online run's too, by name
// (layout.OfRun: Snapshot's, the rounds', the Fence's).
func DeleteCheckpoints(ctx context.Context, env Env, m Migration, cp string) error {
	if cp != "" {
		if err := slatedb.DeleteCheckpoint(ctx, m.Source, cp, env.SlateDB); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
			return fmt.Errorf("runstate: delete checkpoint %s: %w", cp, err)
		}
	}
	if !m.CopiesOnline() || m.Source == "" {
		return nil
	}
	cps, err := slatedb.ListCheckpoints(ctx, m.Source, env.SlateDB)
	if err != nil {
		return fmt.Errorf("runstate: list the checkpoints of %s: %w", m.Source, err)
	}
	for _, cp := range cps {
		if !layout.OfRun(cp.Name, m.MigrationID) {
			continue
		}
		if err := slatedb.DeleteCheckpoint(ctx, m.Source, cp.ID, env.SlateDB); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
			return fmt.Errorf("runstate: delete checkpoint %s (%s): %w", cp.ID, cp.Name, err)
		}
	}
	return nil
}

// The flip's pins: a view of each catalog a flip went between, named for
// the run (layout.FlipCheckpoint), which a rollback carries commits from
// and proves the previous catalog unchanged by; the pointer records them
// (pointer.FlipPoint) beside the catalogs' marks.

// ViewOf is the view of the catalog a pin names.
func ViewOf(p pointer.Pin) slatedb.View {
	return slatedb.View{Checkpoint: p.Checkpoint, WALEnd: p.WALEnd}
}

// pinOf is the pin of a view, as the pointer records it.
func pinOf(v slatedb.View) pointer.Pin {
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
		*c.pin = pinOf(v)
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

// CatalogMarks reads what RockLake moves when it writes: writer-epoch (0
// before any RockLake writer opened the catalog) and next_snapshot_id.
func CatalogMarks(ctx context.Context, c *catalog.Catalog) (pointer.Marks, error) {
	epoch, next, err := c.Marks(ctx)
	return pointer.Marks{WriterEpoch: epoch, NextSnapshotID: next}, err
}
