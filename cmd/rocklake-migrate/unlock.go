package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func init() {
	register("unlock", "break the lock of a migration that died holding it (one migration at a time per pointer)", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "unlock", "--pointer s3://… --migration-id ID")
		ptr := pointerFlag(fs)
		id := fs.String("migration-id", "", "the migration that holds the lock (required: check with status first)")
		if err := parse(fs, args); err != nil {
			return err
		}
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
		held, err := workflow.Unlock(ctx, workflow.Env{Store: store, CreatedBy: createdBy()}, *ptr, *id)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "unlocked %s: migration %s (%s) had held it since %s\n", workflow.LockURL(*ptr), held.MigrationID, held.Owner, held.AcquiredAt.Format("2006-01-02 15:04:05Z07:00"))
		return nil
	})
}
