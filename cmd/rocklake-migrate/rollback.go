package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func newRollbackCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "rollback --pointer s3://… [--dry-run] [--discard-newer-commits]",
		Short: "make the pointer's previous version current again, and check the restored catalog",
		Example: `  rocklake-migrate rollback --pointer s3://b/rocklake/CURRENT --dry-run
  rocklake-migrate rollback --pointer s3://b/rocklake/CURRENT`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	asJSON := jsonFlag(fs, "print the result as JSON")
	dryRun := fs.Bool("dry-run", false, "check and say what would happen; write nothing")
	discard := fs.Bool("discard-newer-commits", false, "roll back even though the current catalog took commits after the flip (they are left behind)")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		out, err := workflow.Rollback(ctx, workflow.Env{Store: store}, workflow.RollbackInput{Pointer: *ptr, DryRun: *dryRun, DiscardNewerCommits: *discard, Trigger: trigger()})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, out)
		}
		if out.DryRun {
			fmt.Fprintf(e.stdout, "dry run: the pointer would go from %s back to %s (format %s); startup check ok; nothing written\n",
				out.From, out.Catalog, out.FormatVersion)
		} else {
			again := " again"
			if out.InPlace {
				again = "" // a way back: a URL the pointer never named
			}
			fmt.Fprintf(e.stdout, "rolled back: the pointer names %s (format %s)%s, pointer version %s; startup check ok\n",
				out.Catalog, out.FormatVersion, again, out.PointerVersionID)
		}
		if out.HistoryError != "" {
			fmt.Fprintf(e.stdout, "WARNING: the rollback's record was not written (the rollback stands): %s\n", out.HistoryError)
		}
		if out.InPlace {
			fmt.Fprintf(e.stdout, "in place: %s is the way back of the in-place migration of %s, the catalog as it was before it; RockLake serves it from there\n",
				out.Catalog, out.From)
		}
		if out.Newer != "" {
			fmt.Fprintf(e.stdout, "left behind in %s: %s\n", out.From, out.Newer)
		}
		return nil
	})
}
