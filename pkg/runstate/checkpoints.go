package runstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/layout"
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
