package main

import (
	"context"

	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func init() {
	register("abort", "abort a migration waiting at the gate (migrate --postpone-flip): remove the new catalog, release the source and the lock", func(ctx context.Context, e *env, args []string) error {
		return gateCommand(ctx, e, "abort", args, workflow.AbortGate)
	})
}
