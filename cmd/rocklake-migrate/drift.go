package main

import (
	"github.com/spf13/cobra"

	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func newDriftCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "drift --pointer s3://… --expect vN [--staging s3://…] [--sns-topic ARN] [--json]",
		Short:   "check the pointer's catalog against the expected format; exit 4 on drift",
		Example: `  rocklake-migrate drift --pointer s3://b/rocklake/CURRENT --expect v2 --sns-topic arn:aws:sns:us-east-1:123456789012:alerts`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	expect := fs.String("expect", "", "the format the deployed release expects")
	staging := fs.String("staging", "", "staging prefix to look for leftovers (default: beside the pointer)")
	topic := fs.String("sns-topic", "", "publish one SNS message when there are findings")
	asJSON := jsonFlag(fs, "print the report as JSON")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		v, err := format.ParseVersion(*expect)
		if err != nil {
			return usagef("--expect: %v", err)
		}
		if *staging == "" {
			*staging = layout.DefaultStaging(*ptr)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		out, err := workflow.Drift(ctx, runstate.Env{Store: store, Staging: *staging, CreatedBy: createdBy()},
			workflow.DriftInput{Pointer: *ptr, Expect: uint64(v), Topic: *topic})
		if err != nil {
			return err
		}
		rep := out.Report
		if *asJSON {
			if err := printJSON(e.stdout, rep); err != nil {
				return err
			}
		} else {
			fmt.Fprint(e.stdout, rep.Text())
		}
		if !rep.Healthy {
			return fmt.Errorf("%w: %s", errDrift, rep.Summary())
		}
		return nil
	})
}
