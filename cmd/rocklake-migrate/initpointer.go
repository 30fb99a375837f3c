package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

func init() {
	register("init-pointer", "create the first pointer to a catalog (the bucket must be versioned)", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "init-pointer", "--pointer s3://… --catalog URL")
		ptr := pointerFlag(fs)
		url := catalogFlag(fs)
		if err := parse(fs, args); err != nil {
			return err
		}
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if err := needCatalog(*url); err != nil {
			return err
		}
		c, err := catalog.Open(ctx, *url, catalog.Options{})
		if err != nil {
			return err
		}
		v := c.Version()
		c.Close()
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		ref, err := pointer.Create(ctx, store, *ptr, pointer.Pointer{Catalog: *url, FormatVersion: v, MigrationID: "initial"})
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "pointer %s → %s (format %s), version %s\n", *ptr, *url, v, ref.VersionID)
		return nil
	})
}
