package main

import (
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/spf13/cobra"
)

func newAbortCmd(e *env) *cobra.Command {
	return gateCommand(e, "abort", "abort a migration waiting at the gate (migrate --postpone-flip): remove the new catalog, release the source and the lock", `  rocklake-migrate abort m-20261202T101500Z-1a2b3c4d --pointer s3://b/rocklake/CURRENT`, operator.AbortGate)
}
