package main

import (
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/spf13/cobra"

	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

func newCleanupCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "cleanup --pointer s3://… [--staging s3://…] [--apply] [--json]",
		Short: "remove what migrations left behind (the drift check's checkpoints, staging, unclaimed targets); a dry run unless --apply",
		Example: `  rocklake-migrate cleanup --pointer s3://b/rocklake/CURRENT            # what would go
  rocklake-migrate cleanup --pointer s3://b/rocklake/CURRENT --apply    # remove it
  rocklake-migrate cleanup --pointer s3://b/rocklake/CURRENT --apply --release-way-back m-20261202T130000Z-3f2a9c01`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	staging := fs.String("staging", "", "staging prefix (default: beside the pointer, …/migrations)")
	apply := fs.Bool("apply", false, "delete (holding the migration lock); without it, only say what would be deleted")
	release := fs.String("release-way-back", "", "first record that this in-place migration's way back is no longer needed (with --apply)")
	asJSON := jsonFlag(fs, "print the outcome as JSON")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if *staging == "" {
			*staging = layout.DefaultStaging(*ptr)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		out, err := operator.Cleanup(ctx, runstate.Env{Store: store, Staging: *staging, CreatedBy: createdBy()},
			operator.CleanupInput{Pointer: *ptr, Apply: *apply, Trigger: trigger(), ReleaseWayBack: *release})
		switch {
		case *asJSON:
			if jerr := printJSON(e.stdout, out); jerr != nil {
				return jerr
			}
		case err == nil || len(out.Items) > 0: // a refusal touched nothing: its error says it all
			fmt.Fprint(e.stdout, out.Text())
		}
		return err
	})
}
