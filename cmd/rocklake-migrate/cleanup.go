package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func init() {
	register("cleanup", "remove what migrations left behind (the drift check's checkpoints, staging, unclaimed targets); a dry run unless --apply", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "cleanup", "--pointer s3://… [--staging s3://…] [--apply] [--json]")
		ptr := pointerFlag(fs)
		staging := fs.String("staging", "", "staging prefix (default: beside the pointer, …/migrations)")
		apply := fs.Bool("apply", false, "delete (holding the migration lock); without it, only say what would be deleted")
		asJSON := fs.Bool("json", false, "print the outcome as JSON")
		if err := parse(fs, args); err != nil {
			return err
		}
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
