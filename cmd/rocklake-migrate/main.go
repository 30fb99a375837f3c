// Command rocklake-migrate is the operator CLI: it runs every migration step
// by hand and inspects catalogs. The root command and the exit codes live
// here, the parts every command shares in command.go, and each command in
// its own file, built by a small constructor listed in newRoot. A command
// file is flags, output and exit codes only: what the command does is a
// call into the package under pkg/ that owns it (migrate's run is
// localrun.Run).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Exit codes are part of the CLI's contract: scripts branch on them.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitMismatch = 3 // FormatVersionMismatch (SQLSTATE 0A000)
	exitDrift    = 4
	exitDegraded = 5 // serve stopped while degraded
)

// exitCodes documents the exit codes, in the root help and in the README
// (a test keeps the README's table equal to this one).
var exitCodes = []struct {
	code    int
	meaning string
}{
	{exitOK, "success"},
	{exitError, "failure (the error is on stderr)"},
	{exitUsage, "usage: unknown command or flag, a missing or bad flag value, a stray argument"},
	{exitMismatch, "FormatVersionMismatch (SQLSTATE 0A000): the catalog is not in the format expected"},
	{exitDrift, "drift found (drift)"},
	{exitDegraded, "serve stopped while degraded: no RockLake binary for the pointer's format, or no catalog where it points; the last good server had been kept in reader mode"},
}

// env is what commands print to; tests swap it.
type env struct {
	stdout, stderr io.Writer
	// ran: a command's own code started (errors before are usage errors).
	ran bool
}

func main() {
	// Every catchable signal (a closed pipe included) cancels the command,
	// which then cleans up on a fresh context (migrate runs Abort).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	stopProfile := startProfile(os.Getenv("ROCKLAKE_MIGRATE_CPUPROFILE"))
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stopProfile()
	stop()
	os.Exit(code)
}

// startProfile writes a CPU profile of the whole command to path, when set
// (benchmark scripts ask for it; no flag, so that it is not part of any
// command's interface). A profile that cannot start is said and skipped:
// it never stops the command.
func startProfile(path string) (stop func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "rocklake-migrate: no CPU profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// run runs the CLI with args and returns its exit code.
func run(ctx context.Context, e *env, args []string) int {
	root := newRoot(e)
	if args == nil {
		args = []string{} // nil would make cobra read os.Args
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return report(e, cmd, err)
}

// newRoot builds the command tree; a new command is one constructor in
// this list.
func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "rocklake-migrate",
		Short: "Migrate RockLake catalogs between catalog format versions, safely",
		Long: `rocklake-migrate migrates RockLake catalogs (DuckLake metadata in SlateDB)
between catalog format versions: export/import into a fresh catalog, verify,
flip a pointer, roll back through S3 object versioning. It runs the migration
workflow locally (migrate) or each step by hand (export, transform, import,
verify), and inspects catalogs.

S3 settings come from the standard AWS_* variables. Progress goes to stderr:
a bar on a terminal, plain lines otherwise, JSON events with --json.

Exit codes:
` + exitCodeText(),
		Example: `  rocklake-migrate check --catalog s3://b/catalogs/prod --expect v1
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --shards 16 --dry-run`,
		Version:       toolVersion(),
		SilenceErrors: true, // report prints them, with the exit code's reason
		SilenceUsage:  true, // an error is not a reason to print the whole help
		// No arguments: the help, and a usage error (a script that forgot
		// the command must not succeed).
		RunE: func(cmd *cobra.Command, args []string) error {
			cmd.SetOut(e.stderr)
			_ = cmd.Help()
			return usagef("a command is required")
		},
	}
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate(versionText())
	root.SuggestionsMinimumDistance = 2
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err.Error()} })
	root.AddCommand(
		newCheckCmd(e),
		newInspectCmd(e),
		newKVCmd(e),
		newSeedCmd(e),
		newExportCmd(e),
		newTransformCmd(e),
		newImportCmd(e),
		newVerifyCmd(e),
		newInitPointerCmd(e),
		newPlanCmd(e),
		newMigrateCmd(e),
		newApproveCmd(e),
		newAbortCmd(e),
		newStatusCmd(e),
		newHistoryCmd(e),
		newRollbackCmd(e),
		newRestoreCmd(e),
		newUnlockCmd(e),
		newDriftCmd(e),
		newFleetCmd(e),
		newResolveCmd(e),
		newServeCmd(e),
		newCleanupCmd(e),
		newVersionCmd(e),
		newManCmd(e),
	)
	return root
}

func exitCodeText() string {
	var b strings.Builder
	for _, c := range exitCodes {
		fmt.Fprintf(&b, "  %d  %s\n", c.code, c.meaning)
	}
	return b.String()
}

// usageError marks bad invocations (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(f string, a ...any) error { return usageError{fmt.Sprintf(f, a...)} }

// errDrift is returned by drift checks that found something.
var errDrift = errors.New("drift found")

// report prints err, if any, and returns the exit code it means.
func report(e *env, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	name := "rocklake-migrate"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	fmt.Fprintf(e.stderr, "%s: %v\n", name, err)
	if errors.As(err, new(usageError)) || !e.ran {
		// Errors before a command ran are cobra's: an unknown command
		// (with suggestions), a bad flag, a wrong argument count.
		fmt.Fprintf(e.stderr, "Run '%s --help' for usage.\n", name)
		return exitUsage
	}
	return exitCodeOf(err)
}

// exitCodeOf is the exit code of a command that ran and failed with err
// (docs/errors.md gives each named error's).
func exitCodeOf(err error) int {
	switch {
	case errors.Is(err, format.ErrVersionMismatch):
		return exitMismatch
	case errors.Is(err, errDrift):
		return exitDrift
	case errors.As(err, new(degradedError)):
		return exitDegraded
	}
	return exitError
}
