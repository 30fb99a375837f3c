package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func newRollbackCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "rollback --pointer s3://… [--dry-run] [--discard-newer-commits]",
		Short: "go back to the pointer's previous catalog, carrying back every commit made since the flip",
		Long: `rollback undoes the pointer's latest flip. When the flip pinned both catalogs (every flip
does), it runs the migration definition in reverse, online: the current catalog's
changes since the flip are carried into the previous catalog in rounds while RockLake
keeps its writer, the current catalog is fenced only for the last round, the previous
catalog is verified to equal the current one converted, and the pointer is flipped back
with a conditional write. Nothing a client was told had committed is lost.

A previous catalog that took writes since the flip, or whose pin is gone, is never
written: rollback refuses (PreviousCatalogChanged); migrate the current catalog into a
fresh one instead (migrate --to vN, or --rebuild).

--discard-newer-commits goes back in one step and drops the commits made since the flip:
it takes the lock as a rollback and fences the current catalog first, so that what it
reports as left behind is exactly what is. An in-place migration's rollback names its way
back (the catalog as it was) in one step.`,
		Example: `  rocklake-migrate rollback --pointer s3://b/rocklake/CURRENT --dry-run
  rocklake-migrate rollback --pointer s3://b/rocklake/CURRENT`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	asJSON := jsonFlag(fs, "print the result as JSON")
	dryRun := fs.Bool("dry-run", false, "check and say what would happen; write nothing")
	discard := fs.Bool("discard-newer-commits", false, "go back in one step, leaving behind the commits the current catalog took after the flip (fenced first, then reported)")
	staging := fs.String("staging", "", "staging prefix of the rollback run (default: beside the pointer, …/migrations)")
	graceFlag := freezeGraceFlag(fs)
	return setup(e, c, 12*time.Hour, 0, func(ctx context.Context, args []string) error {
		grace, err := needPointerAndGrace(*ptr, *graceFlag)
		if err != nil {
			return err
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		if *staging == "" {
			*staging = layout.DefaultStaging(*ptr)
		}
		env := runstate.Env{Store: store, Staging: *staging, CreatedBy: createdBy()}
		res, err := operator.Rollback(ctx, env, workflow.RollbackInput{Pointer: *ptr, DryRun: *dryRun, DiscardNewerCommits: *discard, Trigger: trigger(), FreezeGrace: grace},
			localrun.Options{Log: e.stderr, Display: func() localrun.Display { return e.progress(*asJSON) }})
		if res.Carried != nil {
			return printCarryBack(e, *res.Carried, *asJSON, err)
		}
		if err != nil {
			return err
		}
		out := *res.OneStep
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
		switch {
		case out.Newer != "" && out.Carries:
			fmt.Fprintf(e.stdout, "carried back by rollback (without --dry-run): %s\n", out.Newer)
		case out.Newer != "" && out.DryRun:
			fmt.Fprintf(e.stdout, "would be left behind in %s: %s\n", out.From, out.Newer)
		case out.Newer != "":
			fmt.Fprintf(e.stdout, "left behind in %s: %s\n", out.From, out.Newer)
		}
		return nil
	})
}

// carryBack runs the rollback run (the migration definition with
// "rollback": true) and prints its report as migrate does.
// printCarryBack prints the report of a rollback run that carried commits
// back; err is the run's.
func printCarryBack(e *env, rep localrun.Report, asJSON bool, err error) error {
	if asJSON {
		if perr := printJSON(e.stdout, rep); perr != nil {
			return perr
		}
		return err
	}
	printMigrateReport(e, rep)
	if rep.RollbackOf != "" && rep.PointerVersionID != "" {
		fmt.Fprintf(e.stdout, "rolled back migration %s: the pointer names %s (format %s), %d keys carried back from %s\n",
			rep.RollbackOf, rep.Target, rep.To, rep.CarriedKeys, rep.Source)
		// An in-place migration's way back: the catalog as it was, beside
		// the one it changed where it lies.
		if wb, ok := layout.WayBackOf(pointer.Pointer{Catalog: rep.Source, PreviousCatalog: rep.Source, FormatVersion: rep.From, MigrationID: rep.RollbackOf}); ok && wb == rep.Target {
			fmt.Fprintf(e.stdout, "in place: %s is the way back of the in-place migration of %s, the catalog as it was before it, with the commits since carried into it; RockLake serves it from there\n",
				rep.Target, rep.Source)
		}
	}
	return err
}
