package operator

import (
	"context"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// RollbackResult is what a rollback did: the one-step rollback's output,
// or the report of the rollback run that carried commits back.
type RollbackResult struct {
	OneStep *workflow.RollbackOutput
	Carried *localrun.Report
}

// Rollback undoes the pointer's latest flip, as the CLI's rollback does:
// when the flip pinned both catalogs and the current one took commits
// since, the rollback run (the migration definition in reverse, run here:
// pkg/localrun) carries them back first; otherwise, or for a dry run or
// with DiscardNewerCommits, the one-step rollback. opts configure the
// rollback run (its Check is made from in).
func Rollback(ctx context.Context, env runstate.Env, in workflow.RollbackInput, opts localrun.Options) (RollbackResult, error) {
	if !in.DryRun && !in.DiscardNewerCommits {
		carry, err := workflow.RollbackCarries(ctx, env, in.Pointer)
		if err != nil {
			return RollbackResult{}, err
		}
		if carry {
			opts.Check = workflow.CheckInput{Pointer: in.Pointer, Rollback: true, Trigger: in.Trigger, FreezeGrace: in.FreezeGrace}
			rep, err := localrun.Run(ctx, env, opts)
			return RollbackResult{Carried: rep}, err
		}
	}
	out, err := workflow.Rollback(ctx, env, in)
	if err != nil {
		return RollbackResult{}, err
	}
	return RollbackResult{OneStep: &out}, nil
}
