package shard

import (
	"context"
	"fmt"
	"runtime"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
)

// partsPerCPU is how many key ranges per CPU a whole-catalog scan is cut
// into: more parts than CPUs, so that the counters' estimate, which can be
// off by a large factor for one range, evens out over several.
const partsPerCPU = 4

// scanParts runs scan on every part of the catalog's key space, as many at
// once as there are CPUs, and returns the results in key order. The parts
// are cut by the counters' estimate (Plan, no scan) and partition the key
// space, so every key is in exactly one. The first failing part cancels the
// others, and its error is returned.
func scanParts[T any](ctx context.Context, c *catalog.Catalog, scan func(ctx context.Context, r Range) (T, error)) ([]T, error) {
	k := runtime.GOMAXPROCS(0)
	parts := []Range{{}}
	if k > 1 {
		var err error
		if parts, err = Plan(ctx, c, partsPerCPU*k); err != nil {
			return nil, fmt.Errorf("shard: scan %s in parts: %w", c.URL(), err)
		}
	}
	out := make([]T, len(parts))
	err := ForEach(ctx, len(parts), k, func(ctx context.Context, i int) error {
		var err error
		out[i], err = scan(ctx, parts[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
