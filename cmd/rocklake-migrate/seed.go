package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

func init() {
	register("seed", "write a deterministic test catalog of N rows into an empty location", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "seed", "--catalog URL --rows N [--seed S] [--format v1|v2]")
		url := catalogFlag(fs)
		rows := fs.Int("rows", -1, "number of table rows (counter and system keys come on top); required")
		s := fs.Int64("seed", 1, "seed: the same seed gives the same catalog")
		f := fs.String("format", format.V1.String(), "catalog format to write")
		if err := parse(fs, args); err != nil {
			return err
		}
		if err := needCatalog(*url); err != nil {
			return err
		}
		if *rows < 0 {
			return usagef("--rows N (N >= 0) is required")
		}
		v, err := format.ParseVersion(*f)
		if err != nil {
			return usagef("--format: %v", err)
		}
		start := time.Now()
		res, err := seed.Seed(ctx, *url, seed.Options{Rows: *rows, Seed: *s, Version: v})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "seeded %s (format %s, seed %d): %d rows in %.1fs\n", *url, v, *s, *rows, time.Since(start).Seconds())
		names := make([]string, 0, len(res.Rows))
		for n := range res.Rows {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(e.stdout, "  %-40s %10d\n", n, res.Rows[n])
		}
		return nil
	})
}
