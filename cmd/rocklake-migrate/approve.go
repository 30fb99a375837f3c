package main

import (
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/spf13/cobra"

	"context"
	"fmt"
	"os"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

func newApproveCmd(e *env) *cobra.Command {
	return gateCommand(e, "approve", "flip a migration waiting at the gate (migrate --postpone-flip): Flip, then the success message", `  rocklake-migrate approve m-20261202T101500Z-1a2b3c4d --pointer s3://b/rocklake/CURRENT`, operator.Approve)
}

// gateCommand is approve and abort: MIGRATION-ID --pointer … [--staging …].
func gateCommand(e *env, name, summary, example string,
	complete func(context.Context, runstate.Env, string, operator.GateOptions) (operator.GateResult, error)) *cobra.Command {
	c := &cobra.Command{
		Use:     name + " MIGRATION-ID --pointer s3://… [--staging s3://…] [--json]",
		Short:   summary,
		Example: example,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	staging := fs.String("staging", "", "staging prefix of the run (default: beside the pointer, …/migrations; on AWS the stack's)")
	asJSON := jsonFlag(fs, "print the result as JSON")
	// Flip or Abort with their retries, then the outcome message.
	return setup(e, c, 30*time.Minute, 1, func(ctx context.Context, pos []string) error {
		return completeGate(ctx, e, name, pos[0], *ptr, *staging, *asJSON, complete)
	})
}

func completeGate(ctx context.Context, e *env, name, id, ptr, staging string, asJSON bool,
	complete func(context.Context, runstate.Env, string, operator.GateOptions) (operator.GateResult, error)) error {
	if err := needPointer(ptr); err != nil {
		return err
	}
	if staging == "" {
		staging = layout.DefaultStaging(ptr)
	}
	store, err := blob.New(ctx)
	if err != nil {
		return err
	}
	env := runstate.Env{Store: store, Staging: staging, CreatedBy: createdBy()}
	obs := asl.ObserverFuncs{Entered: announceState(e)}
	res, err := complete(ctx, env, id, operator.GateOptions{By: operatorName(), Pointer: ptr, Observer: obs})
	if asJSON && (err == nil || res.Gate.Migration.MigrationID != "") {
		if perr := printJSON(e.stdout, res); perr != nil {
			return perr
		}
	}
	if err != nil {
		return err
	}
	if asJSON {
		return nil
	}
	m := res.Gate.Migration
	switch {
	case res.SentTo != "":
		fmt.Fprintf(e.stdout, "%s sent to Step Functions execution %s: it goes on there (Flip or Abort, then the outcome message)\n", name, res.SentTo)
	case res.Abort != nil:
		fmt.Fprintf(e.stdout, "migration %s aborted at the gate: %d target and %d staging objects removed, the checkpoint deleted, the lock released; the pointer %s still names %s\n",
			m.MigrationID, res.Abort.TargetObjects, res.Abort.StagingObjects, m.Pointer, m.Source)
	default:
		fmt.Fprintf(e.stdout, "migration %s approved: the pointer %s names %s (%s); the lock is released\n", m.MigrationID, m.Pointer, m.Target, m.To)
	}
	return nil
}

// announceState prints each top-level state as the run enters it.
func announceState(e *env) func(asl.StateEvent) {
	return func(ev asl.StateEvent) {
		if len(ev.MapIndex) == 0 {
			fmt.Fprintf(e.stderr, "%s → %s\n", ev.Time.Format("15:04:05"), ev.Name)
		}
	}
}

// operatorName names who approves or aborts, for the record and the messages.
func operatorName() string {
	host, _ := os.Hostname()
	return userName() + "@" + host
}
