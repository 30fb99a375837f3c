package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// catalogFlag adds the --catalog flag every catalog command takes.
func catalogFlag(fs *pflag.FlagSet) *string {
	return fs.String("catalog", "", "catalog URL: file:///absolute/path or s3://bucket/prefix (the SlateDB root)")
}

// needCatalog rejects a missing --catalog before anything is opened.
func needCatalog(url string) error {
	if url == "" {
		return usagef("--catalog is required")
	}
	return nil
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
