package main

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

func init() {
	register("verify", "compare a catalog with shard files: per-table counts and an order-independent digest", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "verify", "--catalog URL --input FILE|DIR|s3://…")
		url := catalogFlag(fs)
		input := fs.String("input", "", "the shard files the catalog should hold")
		asJSON := fs.Bool("json", false, "print the report as JSON")
		if err := parse(fs, args); err != nil {
			return err
		}
		if err := needCatalog(*url); err != nil {
			return err
		}
		if *input == "" {
			return usagef("--input is required")
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		res, err := shard.Verify(ctx, store, *url, *input, shard.VerifyOptions{})
		if err != nil && !errors.Is(err, shard.ErrMismatch) {
			return err
		}
		if *asJSON {
			if perr := printJSON(e.stdout, res); perr != nil {
				return perr
			}
			return err
		}
		if res.Match {
			fmt.Fprintf(e.stdout, "verified: %s holds exactly the records of %s\n", *url, *input)
			printCounts(e, res.Catalog.Counts())
			fmt.Fprintf(e.stdout, "digest %s\n", res.Catalog.Sum())
		}
		return err
	})
}

// printCounts prints per-table counts, sorted by table.
func printCounts(e *env, counts map[string]uint64) {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(e.stdout, "  %-32s %d\n", n, counts[n])
	}
}
