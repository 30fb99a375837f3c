package main

import (
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/spf13/cobra"

	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

func newStatusCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "status --pointer s3://… [--staging s3://…]",
		Short:   "show the pointer, the catalog it names, the pointer's versions and the migration in progress",
		Example: `  rocklake-migrate status --pointer s3://b/rocklake/CURRENT`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	asJSON := jsonFlag(fs, "print as JSON")
	staging := fs.String("staging", "", "the migrations' staging prefix (default: beside the pointer, …/migrations)")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		if *staging == "" {
			*staging = layout.DefaultStaging(*ptr)
		}
		st, err := operator.StatusOf(ctx, runstate.Env{Store: store, Staging: *staging}, *ptr)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, st)
		}
		p, ref, hist, check, run := st.Pointer, st.Ref, st.History, st.Check, st.Migration
		fmt.Fprintf(e.stdout, "pointer %s (version %s)\n  catalog %s, format %s, migration %s, updated %s\n  startup check: %s\n",
			*ptr, ref.VersionID, p.Catalog, p.FormatVersion, p.MigrationID, p.UpdatedAt.Format("2006-01-02 15:04:05Z07:00"), check)
		printRun(e, run)
		fmt.Fprintln(e.stdout, "pointer versions (newest first; `history` lists the runs):")
		for _, h := range hist {
			line := fmt.Sprintf("  %s %s", h.LastModified.Format("2006-01-02 15:04:05"), h.VersionID)
			if h.Pointer != nil {
				line += fmt.Sprintf("  %s (%s) by %s", h.Pointer.Catalog, h.Pointer.FormatVersion, h.Pointer.MigrationID)
			}
			if h.Current {
				line += "  [current]"
			}
			fmt.Fprintln(e.stdout, line)
		}
		return nil
	})
}

func printRun(e *env, r operator.RunStatus) {
	w := e.stdout
	if !r.Running {
		fmt.Fprintln(w, "no migration in progress (the lock is free)")
		return
	}
	l := r.Lock
	fmt.Fprintf(w, "migration in progress: %s, holding the lock since %s (lease until %s, %s)\n",
		l.MigrationID, l.AcquiredAt.Format(time.RFC3339), l.ExpiresAt.Format(time.RFC3339), l.Owner)
	if rec := r.Record; rec != nil {
		fmt.Fprintf(w, "  %s %s → %s (%s → %s), started by %s, running %s\n", rec.Kind, rec.Source, rec.Target, rec.From, rec.To,
			rec.Trigger, rec.Duration(time.Now()).Round(time.Second))
	}
	fmt.Fprintf(w, "  state: %s\n", r.State)
	if r.ShardsTotal > 0 {
		fmt.Fprintf(w, "  shards: %d exported, %d transformed, %d imported of %d\n", r.Exported, r.Transformed, r.Imported, r.ShardsTotal)
		if len(r.Pending) > 0 {
			fmt.Fprintf(w, "  not transformed yet: shards %v\n", r.Pending)
		}
	}
	if r.OnlineSource != "" {
		fmt.Fprintf(w, "  source: %s (snapshot %s): RockLake commits on; the run copies from the snapshot and catches up, and fences it only for the last round\n",
			r.OnlineSource, r.Checkpoint)
	}
	if r.FrozenSource != "" {
		fmt.Fprintf(w, "  frozen source: %s (checkpoint %s, writer-epoch %d, next_snapshot_id %d): RockLake cannot write to it until Flip or Abort\n",
			r.FrozenSource, r.Checkpoint, r.WriterEpoch, r.NextSnapshotID)
	}
	if r.LastStep != "" {
		fmt.Fprintf(w, "  last step finished: %s at %s\n", r.LastStep, r.LastStepAt.Format(time.RFC3339))
	}
}
