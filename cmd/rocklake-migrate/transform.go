package main

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

func newTransformCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "transform --input FILE|DIR|s3://… --output FILE|DIR|s3://… --to vM [--unknown-tags fail|carry|drop]",
		Short: "transform shard files to another catalog format (e.g. v1 → v2)",
		Example: `  rocklake-migrate transform --input s3://staging/m1/v1 --output s3://staging/m1/v2 --to v2
  rocklake-migrate transform --input catalog-v1.ndjson --output catalog-v2.ndjson --to v2 --unknown-tags carry`,
	}
	fs := c.Flags()
	input := fs.String("input", "", "a shard file, or a directory or s3:// prefix of shard files")
	output := fs.String("output", "", "where the transformed shards go: a file for a file input, else a directory or s3:// prefix")
	to := fs.String("to", "", "target format (v2)")
	unknown := fs.String("unknown-tags", "fail", "records of tags this binary does not know: fail (list them), carry (byte for byte) or drop")
	concurrency := fs.Int("concurrency", runtime.GOMAXPROCS(0), "shards transformed at once, largest first; the default is one per CPU")
	asJSON := jsonFlag(fs, "print the report as JSON on stdout, and progress as JSON events on stderr")
	return setup(e, c, 4*time.Hour, 0, func(ctx context.Context, args []string) error {
		if *input == "" || *output == "" || *to == "" {
			return usagef("--input, --output and --to are required")
		}
		v, err := format.ParseVersion(*to)
		if err != nil {
			return usagef("--to: %v", err)
		}
		policy, err := migration.ParseUnknownTags(*unknown)
		if err != nil {
			return usagef("%v", err)
		}
		if layout.IsShardFile(*input) != layout.IsShardFile(*output) {
			return usagef("--input and --output must both be files, or both directories or prefixes")
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		var p shard.Progress
		tr, err := shard.NewTransform(ctx, store, *input, shard.TransformOptions{To: v, UnknownTags: policy, Concurrency: *concurrency, CreatedBy: createdBy(), Progress: &p})
		if err != nil {
			return err
		}
		stop := e.stage("transform", *asJSON, &p)
		start := time.Now()
		rep, err := tr.Run(ctx, store, *output)
		stop(err)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, rep)
		}
		fmt.Fprintf(e.stdout, "transformed %d shard(s), %d records, to format %s at %s in %s\n",
			rep.Shards, rep.Records, v, *output, time.Since(start).Round(time.Millisecond))
		for _, st := range rep.Stats {
			for t, n := range st.Carried {
				fmt.Fprintf(e.stdout, "  carried %d records of unknown tag 0x%02X\n", n, byte(t))
			}
			for t, n := range st.Dropped {
				fmt.Fprintf(e.stdout, "  dropped %d records of unknown tag 0x%02X\n", n, byte(t))
			}
		}
		fmt.Fprintf(e.stdout, "digest %s\n", rep.Digest.Sum())
		return nil
	})
}
