package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

func newVerifyCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "verify --catalog URL --input FILE|DIR|s3://…",
		Short:   "compare a catalog with shard files: per-table counts and an order-independent digest",
		Example: `  rocklake-migrate verify --catalog s3://b/catalogs/prod-v2 --input s3://staging/m1/v2`,
	}
	fs := c.Flags()
	url := catalogFlag(fs)
	input := fs.String("input", "", "the shard files the catalog should hold")
	asJSON := jsonFlag(fs, "print the report as JSON on stdout, and progress as JSON events on stderr")
	return setup(e, c, 4*time.Hour, 0, func(ctx context.Context, args []string) error {
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
		var p shard.Progress
		stop := e.stage("verify", *asJSON, &p)
		res, err := shard.Verify(ctx, store, *url, *input, shard.VerifyOptions{Progress: &p})
		stop(err)
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
	printSorted(e.stdout, "  %-32s %d\n", counts)
}

// printSorted prints a line for each key of m and its value, in the order
// of the keys; layout formats the two.
func printSorted[V any](w io.Writer, layout string, m map[string]V) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(w, layout, k, m[k])
	}
}
