package runstate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The target's removal waits for what an abandoned writer still had in
// flight: after a fence, fenceNotice for the old writer's manifest poller
// (every 100 ms for an import's, 1 s by default) to see it; after a
// delete, targetSettle, and the prefix must then be empty; all within
// targetSettleMax.
const (
	fenceNotice     = time.Second
	targetSettle    = 2 * time.Second
	targetSettleMax = time.Minute
)

// DeleteTarget removes the target this migration claimed, and reports how
// many objects it deleted. Its writer may still be at work: an Import
// abandoned mid-write (the CLI interrupted, whose writer's flushes and
// compactions go on in the engine; a Lambda that gave up at its deadline,
// frozen and thawed later). A writer opened on the target fences that one:
// SlateDB moves the writer and compactor epochs in the manifest, so the old
// writer and compactor fail at their next look at it and stop. What they
// had in flight may still land after the delete, so the prefix is deleted
// again (and fenced again if a manifest came back) until it stays empty for
// targetSettle.
func DeleteTarget(ctx context.Context, env Env, target string) (int, error) {
	prefix := strings.TrimSuffix(target, "/") + "/"
	deadline := time.Now().Add(targetSettleMax)
	n := 0
	for {
		// A fence that fails (a manifest half deleted by an earlier
		// attempt) is not needed if the target settles all the same.
		fenced, fenceErr := fenceTarget(ctx, env, prefix)
		if fenced {
			if err := sleepCtx(ctx, fenceNotice); err != nil {
				return n, fmt.Errorf("delete %s: %w", target, err)
			}
		}
		k, err := env.Store.DeletePrefix(ctx, prefix)
		n += k
		if err != nil {
			return n, fmt.Errorf("delete %s: %w", target, err)
		}
		if err := sleepCtx(ctx, targetSettle); err != nil {
			return n, fmt.Errorf("delete %s: %w", target, err)
		}
		left, err := env.Store.List(ctx, prefix)
		if err != nil {
			return n, fmt.Errorf("delete %s: %w", target, err)
		}
		if len(left) == 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("%w: %d objects appeared under %s after it was deleted, for %s", ErrTargetStillWritten, len(left), target, targetSettleMax)
			if fenceErr != nil {
				err = fmt.Errorf("%w (fencing its writer failed: %w)", err, fenceErr)
			}
			return n, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// fenceTarget opens and closes a writer of the catalog at prefix, if it has
// a manifest (else opening would create one): a writer with a compactor, so
// that both the old writer's and the old compactor's epochs move. Whatever
// this writer starts (a compaction) ends with its close.
func fenceTarget(ctx context.Context, env Env, prefix string) (bool, error) {
	manifests, err := env.Store.List(ctx, prefix+"manifest/")
	if err != nil || len(manifests) == 0 {
		return false, err
	}
	so := env.SlateDB
	so.Passive, so.BulkLoad = false, false
	w, err := slatedb.OpenWriter(ctx, strings.TrimSuffix(prefix, "/"), so)
	if err != nil {
		return false, fmt.Errorf("fence the writer of %s: %w", prefix, err)
	}
	return true, w.CloseContext(ctx)
}
