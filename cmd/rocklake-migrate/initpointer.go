package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

func newInitPointerCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "init-pointer --pointer s3://… --catalog URL",
		Short:   "create the first pointer to a catalog (the bucket must be versioned)",
		Example: `  rocklake-migrate init-pointer --pointer s3://b/rocklake/CURRENT --catalog s3://b/catalogs/prod`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	url := catalogFlag(fs)
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if err := needCatalog(*url); err != nil {
			return err
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		p, ref, err := operator.InitPointer(ctx, runstate.Env{Store: store}, *ptr, *url)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "pointer %s → %s (format %s), version %s\n", *ptr, *url, p.FormatVersion, ref.VersionID)
		return nil
	})
}
