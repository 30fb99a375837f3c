// Command rocklake-migrate is the operator CLI: it runs every migration step
// by hand and inspects catalogs. Each command lives in its own file; the
// logic lives in the packages under pkg/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Exit codes are part of the CLI's contract: scripts branch on them.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitMismatch = 3 // FormatVersionMismatch (SQLSTATE 0A000)
	exitDrift    = 4
)

// command is one subcommand: run gets its own flag set and arguments.
type command struct {
	summary string
	run     func(ctx context.Context, env *env, args []string) error
}

// env is what commands print to; tests swap it.
type env struct {
	stdout, stderr io.Writer
}

var commands = map[string]command{}

func register(name, summary string, run func(ctx context.Context, env *env, args []string) error) {
	commands[name] = command{summary: summary, run: run}
}

// usageError marks bad invocations (exit 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(f string, a ...any) error { return usageError{fmt.Sprintf(f, a...)} }

func main() {
	// Every catchable signal (a closed pipe included) cancels the command,
	// which then cleans up on a fresh context (migrate runs Abort).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	code := run(ctx, &env{stdout: os.Stdout, stderr: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(e.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(e.stderr, "rocklake-migrate: unknown command %q\n\n", args[0])
		printUsage(e.stderr)
		return exitUsage
	}
	d, err := timeoutArg(args[0], args[1:])
	if err != nil {
		return report(e, args[0], err)
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	err = cmd.run(ctx, e, args[1:])
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		where := ""
		// The endpoint S3 and the engine were given (the deadline is gone:
		// the configuration is resolved already, or needs no network).
		if cfg, err := awsconfig.Load(context.WithoutCancel(ctx)); err == nil && cfg.Endpoint != "" {
			where = " (S3 endpoint " + cfg.Endpoint + ")"
		}
		err = fmt.Errorf("timed out: the command's --timeout %s ran out%s: %w", d, where, err)
	}
	return report(e, args[0], err)
}

// Every command has an overall deadline, --timeout: long enough for the
// work a command does, so that nothing waits forever on a store that
// accepts connections and never answers.
var commandTimeouts = map[string]time.Duration{
	"migrate": 12 * time.Hour, "seed": 4 * time.Hour, "export": 4 * time.Hour, "transform": 4 * time.Hour,
	"import": 4 * time.Hour, "verify": 4 * time.Hour, "inspect": time.Hour,
	// Flip or Abort with their retries, then the outcome message.
	"approve": 30 * time.Minute, "abort": 30 * time.Minute,
}

const defaultTimeout = 5 * time.Minute

func commandTimeout(name string) time.Duration {
	if d, ok := commandTimeouts[name]; ok {
		return d
	}
	return defaultTimeout
}

// timeoutArg finds --timeout among args (the command's FlagSet defines it
// too, for help and parsing): the deadline must hold before the command
// starts any I/O.
func timeoutArg(name string, args []string) (time.Duration, error) {
	d := commandTimeout(name)
	for i, a := range args {
		if a == "--" {
			break
		}
		v, ok := "", false
		switch {
		case a == "--timeout" || a == "-timeout":
			if i+1 < len(args) {
				v, ok = args[i+1], true
			}
		case strings.HasPrefix(a, "--timeout=") || strings.HasPrefix(a, "-timeout="):
			_, v, _ = strings.Cut(a, "=")
			ok = true
		}
		if !ok {
			continue
		}
		parsed, err := time.ParseDuration(v)
		if err != nil || parsed <= 0 {
			return 0, usagef("--timeout %q: want a positive duration like 90s or 2h", v)
		}
		d = parsed
	}
	return d, nil
}

func report(e *env, name string, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	fmt.Fprintf(e.stderr, "rocklake-migrate %s: %v\n", name, err)
	var mismatch *format.FormatVersionMismatch
	var usage usageError
	switch {
	case errors.As(err, &usage):
		return exitUsage
	case errors.As(err, &mismatch):
		return exitMismatch
	case errors.Is(err, errDrift):
		return exitDrift
	}
	return exitError
}

// errDrift is returned by drift checks that found something.
var errDrift = errors.New("drift found")

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: rocklake-migrate COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nrocklake-migrate COMMAND -h shows a command's flags.")
}

// flags makes a command's flag set; parse errors become usage errors.
func flags(e *env, name, args string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	cmd, _, _ := strings.Cut(name, " ")
	fs.Duration("timeout", commandTimeout(cmd), "the command's overall deadline")
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "usage: rocklake-migrate %s %s\n", name, args)
		fs.PrintDefaults()
	}
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	_, err := parseArgs(fs, args, 0)
	return err
}

// parseArgs parses flags wherever they stand among the arguments (after
// "--" everything is an argument) and requires exactly n arguments: a stray
// word is a usage error, never silently the end of the flags, so that
// `migrate ... now --dry-run` cannot run without --dry-run.
func parseArgs(fs *flag.FlagSet, args []string, n int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			pos = append(pos, rest...) // after "--": arguments only
			break
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
	if len(pos) != n {
		if n == 0 {
			return nil, usagef("%s takes no arguments, got %q", fs.Name(), pos)
		}
		return nil, usagef("%s takes %d argument(s), got %d: %q", fs.Name(), n, len(pos), pos)
	}
	return pos, nil
}
