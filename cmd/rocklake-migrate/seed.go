package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

func newSeedCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "seed --catalog URL --rows N [--seed S]",
		Short: "write a deterministic test catalog of N rows into an empty location",
		// A rig of the tests, the benchmarks and `make demo`, not an
		// operator's command: it runs, but help and the man pages leave it
		// out.
		Hidden:  true,
		Example: `  rocklake-migrate seed --catalog file:///tmp/test-catalog --rows 100000 --seed 7`,
	}
	fs := c.Flags()
	url := catalogFlag(fs)
	rows := fs.Int("rows", -1, "number of keys, at least (the last commit is written whole); required")
	s := fs.Int64("seed", 1, "seed: the same seed gives the same catalog")
	return setup(e, c, 4*time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := needCatalog(*url); err != nil {
			return err
		}
		if *rows < 0 {
			return usagef("--rows N (N >= 0) is required")
		}
		start := time.Now()
		res, err := seed.Seed(ctx, *url, seed.Options{Rows: *rows, Seed: *s})
		if err != nil {
			return err
		}
		var total uint64
		for _, n := range res.Keys {
			total += n
		}
		fmt.Fprintf(e.stdout, "seeded %s (format %s, RockLake v0.47.11 layout, seed %d): %d keys in %.1fs\n", *url, format.V1, *s, total, time.Since(start).Seconds())
		names := make([]string, 0, len(res.Keys))
		for n := range res.Keys {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if res.Keys[n] > 0 {
				fmt.Fprintf(e.stdout, "  %-40s %10d\n", n, res.Keys[n])
			}
		}
		return nil
	})
}
