package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

func newImportCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "import --format vM --input FILE|DIR|s3://… --catalog URL",
		Short:   "import shard files into a new, empty catalog (resumable)",
		Example: `  rocklake-migrate import --format v2 --input s3://staging/m1/v2 --catalog s3://b/catalogs/prod-v2`,
	}
	fs := c.Flags()
	url := catalogFlag(fs)
	fv := fs.String("format", "", "format of the shards and of the new catalog (v1, v2)")
	input := fs.String("input", "", "a shard file, or a directory or s3:// prefix of shard files")
	asJSON := jsonFlag(fs, "print the report as JSON on stdout, and progress as JSON events on stderr")
	return setup(e, c, 4*time.Hour, 0, func(ctx context.Context, args []string) error {
		v, store, err := shardStart(ctx, *url, *input, "--input", *fv)
		if err != nil {
			return err
		}
		var p shard.Progress
		stop := e.stage("import", *asJSON, &p)
		start := time.Now()
		res, err := shard.Import(ctx, store, *input, *url, shard.ImportOptions{Format: v, Progress: &p})
		stop(err)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, res)
		}
		how := "imported"
		if res.Resumed {
			how = "resumed and finished importing"
		}
		fmt.Fprintf(e.stdout, "%s %d records from %d shard(s) into %s (format %s) in %s\n",
			how, res.Records, res.ShardsTotal, res.Target, res.Format, time.Since(start).Round(time.Millisecond))
		printCounts(e, res.Digest.Counts())
		fmt.Fprintf(e.stdout, "digest %s\n", res.Digest.Sum())
		return nil
	})
}
