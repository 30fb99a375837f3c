package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

func newUnlockCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "unlock --pointer s3://… --migration-id ID",
		Short:   "break the lock of a migration that died holding it (one migration at a time per pointer)",
		Example: `  rocklake-migrate unlock --pointer s3://b/rocklake/CURRENT --migration-id m-20261202T130000Z-3f2a9c01`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	id := fs.String("migration-id", "", "the migration that holds the lock (required: check with status first)")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if *id == "" {
			return usagef("--migration-id is required: unlock breaks only the lock of the migration named")
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		held, err := runstate.Unlock(ctx, runstate.Env{Store: store, CreatedBy: createdBy()}, *ptr, *id)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "unlocked %s: migration %s (%s) had held it since %s\n", layout.Lock(*ptr), held.MigrationID, held.Owner, held.AcquiredAt.Format("2006-01-02 15:04:05Z07:00"))
		return nil
	})
}
