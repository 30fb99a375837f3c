package runstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// DecisionOf reads the migration's decision, "" if none was taken (or a
// decision to flip was withdrawn).
func DecisionOf(ctx context.Context, env Env, m Migration) (string, error) {
	got, _, err := env.Store.Get(ctx, env.StagingOf(m.MigrationID).Decision())
	if errors.Is(err, blob.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("runstate: read the decision of %s: %w", m.MigrationID, err)
	}
	if string(got) == layout.DecisionWithdrawn {
		return "", nil
	}
	return string(got), nil
}

// Decide takes the migration's decision with a conditional write that only
// one of Flip and Abort can win, even if a state timeout lets both run at
// once; a retry of the winner finds its own decision and goes on. The
// marker is never deleted (a withdrawn decision is overwritten, on its
// ETag): a delete marker would defeat If-None-Match on some S3 servers.
func Decide(ctx context.Context, env Env, m Migration, want string) error {
	url := env.StagingOf(m.MigrationID).Decision()
	_, err := env.Store.PutIfAbsent(ctx, url, []byte(want))
	for range 3 {
		if err == nil {
			return nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) {
			return fmt.Errorf("runstate: decide %s: %w", want, err)
		}
		got, info, gerr := env.Store.Get(ctx, url)
		if gerr != nil {
			return fmt.Errorf("runstate: decide %s: read the decision: %w", want, gerr)
		}
		switch string(got) {
		case want:
			return nil
		case layout.DecisionWithdrawn:
			_, err = env.Store.PutIfMatch(ctx, url, []byte(want), info.ETag)
			continue
		case layout.DecisionAbort:
			return fmt.Errorf("%w: migration %s decided to abort first: the pointer is left as it is", ErrDecided, m.MigrationID)
		case layout.DecisionFlip:
			return fmt.Errorf("%w: migration %s decided to flip first: the target %s is kept, it may be live (%w)", ErrAbortAfterFlip, m.MigrationID, m.Target, ErrDecided)
		}
		return fmt.Errorf("%w: migration %s holds an unknown decision %q in %s; nothing was changed", ErrDecided, m.MigrationID, got, url)
	}
	return fmt.Errorf("runstate: decide %s: the decision of %s kept changing: %w", want, m.MigrationID, err)
}
