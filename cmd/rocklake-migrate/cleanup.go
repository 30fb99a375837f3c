package main

import (
	"github.com/spf13/cobra"

	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func newCleanupCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "cleanup --pointer s3://… [--staging s3://…] [--apply] [--json]",
		Short: "remove what migrations left behind (the drift check's checkpoints, staging, unclaimed targets); a dry run unless --apply",
		Example: `  rocklake-migrate cleanup --pointer s3://b/rocklake/CURRENT            # what would go
  rocklake-migrate cleanup --pointer s3://b/rocklake/CURRENT --apply    # remove it`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	staging := fs.String("staging", "", "staging prefix (default: beside the pointer, …/migrations)")
	apply := fs.Bool("apply", false, "delete (holding the migration lock); without it, only say what would be deleted")
	asJSON := jsonFlag(fs, "print the outcome as JSON")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if *staging == "" {
			*staging = defaultStaging(*ptr)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		out, err := workflow.Cleanup(ctx, workflow.Env{Store: store, Staging: *staging, CreatedBy: createdBy()},
			workflow.CleanupInput{Pointer: *ptr, Apply: *apply, Trigger: trigger()})
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
