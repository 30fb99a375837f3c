package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

func newExportCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "export --catalog URL --format vN --output FILE|DIR|s3://… [--shards N] [--checkpoint ID]",
		Short: "export a catalog to NDJSON shard files (a file, a directory or an s3:// prefix)",
		Example: `  rocklake-migrate export --catalog s3://b/catalogs/prod --format v1 --output s3://staging/m1/v1 --shards 16
  rocklake-migrate export --catalog file:///data/catalog --format v1 --output catalog-v1.ndjson`,
	}
	fs := c.Flags()
	url := catalogFlag(fs)
	fv := fs.String("format", "", "format the catalog is in (v1, v2): anything else is refused")
	output := fs.String("output", "", "a .ndjson[.gz|.zst] file, or a directory or s3:// prefix for shard files")
	shards := fs.Int("shards", 1, "number of shard files; their key ranges partition the whole key space")
	cp := fs.String("checkpoint", "", "read this SlateDB checkpoint (default: create one for a consistent view, delete it after)")
	compression := fs.String("compression", "zst", "compression of shard files in a directory: none, gz or zst")
	concurrency := fs.Int("concurrency", 2, "shards exported at once")
	asJSON := jsonFlag(fs, "print the report as JSON on stdout, and progress as JSON events on stderr")
	return setup(e, c, 4*time.Hour, 0, func(ctx context.Context, args []string) error {
		v, store, err := shardStart(ctx, *url, *output, "--output", *fv)
		if err != nil {
			return err
		}
		if *compression == "none" {
			*compression = ""
		}
		var p shard.Progress
		stop := e.stage("export", *asJSON, &p)
		start := time.Now()
		res, err := shard.Export(ctx, store, *url, *output, shard.ExportOptions{
			Format: v, Shards: *shards, Checkpoint: *cp, Compression: *compression,
			Concurrency: *concurrency, CreatedBy: createdBy(), Progress: &p,
		})
		stop(err)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, res)
		}
		fmt.Fprintf(e.stdout, "exported %d records from %s (format %s, checkpoint %s) into %d shard(s) at %s in %s\n",
			res.Records, res.Source, res.Format, res.Checkpoint, len(res.Shards), *output, time.Since(start).Round(time.Millisecond))
		printCounts(e, res.Digest.Counts())
		fmt.Fprintf(e.stdout, "digest %s\n", res.Digest.Sum())
		return nil
	})
}

// shardStart is how export and import start: it checks the flags they
// share, --catalog, the shard files' place (location, given as the flag
// named placeFlag: --output or --input) and --format, which it returns
// parsed, and opens the blob store.
func shardStart(ctx context.Context, url, location, placeFlag, fv string) (format.Version, *blob.Store, error) {
	if err := needCatalog(url); err != nil {
		return 0, nil, err
	}
	if location == "" || fv == "" {
		return 0, nil, usagef("%s and --format are required", placeFlag)
	}
	v, err := format.ParseVersion(fv)
	if err != nil {
		return 0, nil, usagef("--format: %v", err)
	}
	store, err := blob.New(ctx)
	if err != nil {
		return 0, nil, err
	}
	return v, store, nil
}

func createdBy() string { return "rocklake-migrate" }
