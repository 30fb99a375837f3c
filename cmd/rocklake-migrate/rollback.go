package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func init() {
	register("rollback", "make the pointer's previous version current again, and check the restored catalog", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "rollback", "--pointer s3://… [--dry-run] [--discard-newer-commits]")
		ptr := pointerFlag(fs)
		asJSON := fs.Bool("json", false, "print the result as JSON")
		dryRun := fs.Bool("dry-run", false, "check and say what would happen; write nothing")
		discard := fs.Bool("discard-newer-commits", false, "roll back even though the current catalog took commits after the flip (they are left behind)")
		if err := parse(fs, args); err != nil {
			return err
		}
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
			fmt.Fprintf(e.stdout, "rolled back: the pointer names %s (format %s) again, pointer version %s; startup check ok\n",
				out.Catalog, out.FormatVersion, out.PointerVersionID)
		}
		if out.HistoryError != "" {
			fmt.Fprintf(e.stdout, "WARNING: the rollback's record was not written (the rollback stands): %s\n", out.HistoryError)
		}
		if ip := out.InPlace; ip != nil {
			fmt.Fprintf(e.stdout, "in place: %s went back from format %s to the format-%s catalog its checkpoint %s held (%d keys, %d bytes, one batch; %d keys deleted)\n",
				ip.Catalog, ip.From, ip.To, ip.Checkpoint, ip.Records, ip.Bytes, ip.Deleted)
			if ip.CheckpointError != "" {
				fmt.Fprintf(e.stdout, "warning: the used checkpoint was not deleted: %s\n", ip.CheckpointError)
			}
		}
		if out.Newer != "" {
			fmt.Fprintf(e.stdout, "left behind in %s: %s\n", out.From, out.Newer)
		}
		return nil
	})
}
