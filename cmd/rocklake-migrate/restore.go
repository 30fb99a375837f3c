package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

func newRestoreCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "restore --pointer s3://… --migration-id ID [--dry-run] [--discard-newer-commits]",
		Short: "bring back a catalog an in-place migration left in its new format (the run died before moving the pointer) from its way back",
		Example: `  rocklake-migrate restore --pointer s3://b/rocklake/CURRENT --migration-id m-20261202T130000Z-3f2a9c01 --dry-run
  rocklake-migrate restore --pointer s3://b/rocklake/CURRENT --migration-id m-20261202T130000Z-3f2a9c01`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	id := fs.String("migration-id", "", "the in-place migration whose way back to restore from (drift's WayBackKept names it)")
	asJSON := jsonFlag(fs, "print the result as JSON")
	dryRun := fs.Bool("dry-run", false, "check and say what would happen; write nothing but the run's record")
	discard := fs.Bool("discard-newer-commits", false, "restore even though the catalog took commits since the migration (they are lost)")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if *id == "" {
			return usagef("--migration-id is required: restore uses only the way back of the migration named")
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		out, err := operator.Restore(ctx, runstate.Env{Store: store, CreatedBy: createdBy()},
			operator.RestoreInput{Pointer: *ptr, MigrationID: *id, DryRun: *dryRun, DiscardNewerCommits: *discard, Trigger: trigger()})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, out)
		}
		switch {
		case out.NothingToDo:
			fmt.Fprintf(e.stdout, "nothing to restore: %s already holds what its way back %s holds (format %s, digest %s)\n", out.Catalog, out.WayBack, out.To, out.Digest)
		case out.DryRun:
			fmt.Fprintf(e.stdout, "dry run: %s (format %s) would be restored from its way back %s (format %s); nothing written\n", out.Catalog, out.From, out.WayBack, out.To)
		default:
			fmt.Fprintf(e.stdout, "restored: %s is format %s again, from its way back %s (%d records, digest %s); the pointer names it as before; the way back is kept\n",
				out.Catalog, out.To, out.WayBack, out.Records, out.Digest)
		}
		if out.Newer != "" {
			fmt.Fprintf(e.stdout, "left behind: %s\n", out.Newer)
		}
		if out.HistoryError != "" {
			fmt.Fprintf(e.stdout, "WARNING: the restore's record was not written (the restore stands): %s\n", out.HistoryError)
		}
		return nil
	})
}
