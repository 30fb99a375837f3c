package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/progress"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// defaultTimeout is the --timeout of commands that name no other.
const defaultTimeout = 5 * time.Minute

// runFunc is a command's own code: ctx carries its --timeout.
type runFunc func(ctx context.Context, args []string) error

// setup gives c what every command shares, and returns it:
//
//   - --timeout, the command's overall deadline (timeout is its default,
//     long enough for the work the command does), applied before run
//     starts any I/O, so that nothing waits forever on a store that accepts
//     connections and never answers; an expired one names the S3 endpoint;
//   - exactly nargs positional arguments: a stray word is a usage error,
//     never silently the end of the flags, so that
//     `migrate ... now --dry-run` cannot run without --dry-run (flags may
//     follow arguments; after "--" everything is an argument).
func setup(e *env, c *cobra.Command, timeout time.Duration, nargs int, run runFunc) *cobra.Command {
	d := c.Flags().Duration("timeout", timeout, "the command's overall deadline")
	c.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == nargs {
			return nil
		}
		name := strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" ")
		if nargs == 0 {
			return usagef("%s takes no arguments, got %q", name, args)
		}
		return usagef("%s takes %d argument(s), got %d: %q", name, nargs, len(args), args)
	}
	for name, values := range flagValues {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp)) // fails only for a missing flag
		}
	}
	c.RunE = func(cmd *cobra.Command, args []string) error {
		e.ran = true
		if *d <= 0 {
			return usagef("--timeout %s: want a positive duration like 90s or 2h", *d)
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), *d)
		defer cancel()
		err := run(ctx, args)
		if err != nil && deadlinePassed(ctx) {
			where := ""
			// The endpoint S3 and the engine were given (the deadline is
			// gone: the configuration is resolved already, or needs no
			// network).
			if cfg, err := awsconfig.Load(context.WithoutCancel(ctx)); err == nil && cfg.Endpoint != "" {
				where = " (S3 endpoint " + cfg.Endpoint + ")"
			}
			err = fmt.Errorf("timed out: the command's --timeout %s ran out%s: %w", *d, where, err)
		}
		return err
	}
	return c
}

// deadlinePassed reports whether ctx's deadline is over: by its error, or by
// the clock, since the engine's own timer (set to ctx's deadline) can end a
// call before ctx's timer has run on a busy machine.
func deadlinePassed(ctx context.Context) bool {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// flagValues are the values shell completion offers for the flags of these
// names, in every command that has them.
var flagValues = map[string][]string{
	"format":       {format.V1.String(), format.V2.String()},
	"to":           {format.V2.String()},
	"expect":       {format.V1.String(), format.V2.String()},
	"unknown-tags": {"fail", "carry", "drop"},
	"compression":  {"none", "gz", "zst"},
}

// jsonFlag adds --json: the command's report as JSON on stdout, and its
// progress as JSON events on stderr.
func jsonFlag(fs *pflag.FlagSet, what string) *bool {
	return fs.Bool("json", false, what)
}

// stage shows a long stage's progress on stderr until the returned stop:
// a bar on a terminal, plain lines otherwise, JSON events with --json.
func (e *env) stage(name string, asJSON bool, p *shard.Progress) (stop func(error)) {
	d := e.progress(asJSON)
	s := d.Stage(name, "rows", p)
	return func(err error) {
		s.Stop(err)
		d.Close()
	}
}

// progress makes the display for one command's stderr.
func (e *env) progress(asJSON bool) *progress.Display {
	return progress.New(e.stderr, progress.Options{Mode: progress.ModeFor(e.stderr, asJSON)})
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
