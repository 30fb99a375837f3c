package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/notify"
	"github.com/rocklake/rocklake-migrate/pkg/supervise"
)

func newServeCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "serve --pointer s3://… --rocklake 1=PATH [--rocklake 2=PATH] [-- rocklake serve flags]",
		Short: "run RockLake on the catalog the pointer names, and follow the pointer through migrations",
		Long: `serve runs ` + "`rocklake serve`" + ` (the binary given for the pointer's format) on the
catalog the pointer names and keeps it there. It reads the pointer and the
migration lock every --interval (conditional GETs), and keeps a presence record
beside the pointer (<pointer>.servers/), which migrations wait on. When a
migration names its fence it stops the writer, copies the source as it stands
beside it and serves reads from the copy (writes are refused; the fence does
not reach the copy), then acknowledges: the migration fences only then. When
the pointer flips it starts the writer for the new format on the new catalog;
after an abort it returns to the writer on the source; a rollback is followed
the same way. It never starts a writer while a migration holds the lock,
unless the migration says writes go on (an online copy, a dry run, a cleanup).

The supervisor listens on RockLake's --bind itself and hands connections to
the server that serves (each RockLake on a loopback port): a switch starts the
next server beside the reader that serves and moves new connections to it, and
a connection opened while none serves waits (--hold) rather than fail. A flip to a format with no --rocklake binary,
or to a catalog that is not there, keeps the last good server in reader mode,
says so in a health line, in an SNS message (--sns-topic) and in the exit
status when stopped (5). RockLake's output passes through; health lines go to
stderr (--json: one JSON object each). SIGTERM, SIGINT and SIGHUP stop
RockLake gracefully (SIGTERM: its drain) and then the supervisor; SIGUSR1 and
SIGUSR2 are forwarded to it.

Flags after -- go to every rocklake serve (--bind, --drain-timeout, ...);
--mode reader there makes a reader: it serves a copy of the catalog the
pointer names, made beside it (fencing nothing) and replaced by a fresher one
every --refresh, so that it never stops the writer.`,
		Example: `  rocklake-migrate serve --pointer s3://b/rocklake/CURRENT --rocklake 1=/usr/local/bin/rocklake -- --bind 0.0.0.0:5432 --drain-timeout 3
  rocklake-migrate serve --pointer s3://b/rocklake/CURRENT --rocklake 1=/opt/rocklake-0.47/rocklake --rocklake 2=/opt/rocklake-0.48/rocklake -- --mode reader`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	bins := fs.StringArray("rocklake", nil, "FORMAT=PATH: the RockLake binary serving catalogs of that format (1=…, 2=…); repeat for each format")
	interval := fs.Duration("interval", supervise.DefaultInterval, "how often to read the pointer and the lock")
	stopTimeout := fs.Duration("stop-timeout", supervise.DefaultStopTimeout, "how long RockLake may drain after SIGTERM before SIGKILL (give it a shorter --drain-timeout)")
	maxRestarts := fs.Int("max-restarts", supervise.DefaultMaxRestarts, "restarts of a RockLake that keeps exiting by itself before giving up (exit 1)")
	startTimeout := fs.Duration("start-timeout", supervise.DefaultStartTimeout, "how long to retry a first read of the pointer that fails")
	topic := fs.String("sns-topic", "", "SNS topic ARN for a degraded supervisor or one giving up")
	asJSON := jsonFlag(fs, "health lines as JSON objects on stderr")
	timeout := fs.Duration("timeout", 0, "stop serving (gracefully) after this long; 0: until a signal")
	hold := fs.Duration("hold", supervise.DefaultHold, "how long a client's new connection waits for a server while none serves (a restart, a switch)")
	refresh := fs.Duration("refresh", supervise.DefaultRefresh, "a reader (--mode reader) serves a copy of the catalog at most this old, plus the copy's time")
	useFront := fs.Bool("front", true, "listen on RockLake's --bind in the supervisor and hand connections to the server that serves (false: RockLake binds it, and a switch closes the port for a moment)")
	c.Args = func(cmd *cobra.Command, args []string) error {
		if dash := cmd.ArgsLenAtDash(); dash != 0 && len(args) > 0 {
			return usagef("serve takes no arguments before --, got %q (RockLake's flags go after --)", args)
		}
		return nil
	}
	c.RunE = func(cmd *cobra.Command, extra []string) error {
		e.ran = true
		if err := needPointer(*ptr); err != nil {
			return err
		}
		binaries, err := parseBinaries(*bins)
		if err != nil {
			return err
		}
		if *interval <= 0 || *stopTimeout <= 0 || *maxRestarts < 1 || *startTimeout <= 0 || *timeout < 0 || *hold <= 0 || *refresh <= 0 {
			return usagef("--interval, --stop-timeout, --start-timeout, --hold and --refresh want positive durations, --timeout 0 or more, --max-restarts 1 or more")
		}
		listen, front := supervise.ListenAddr(extra), ""
		if *useFront {
			front, extra = supervise.TakeBind(extra)
			listen = ""
		}
		// main's context ends on SIGTERM, SIGINT and SIGHUP: the graceful stop.
		ctx := cmd.Context()
		if *timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, *timeout)
			defer cancel()
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		opts := supervise.Options{
			Pointer: *ptr, Binaries: binaries, Extra: extra, Interval: *interval, StopTimeout: *stopTimeout,
			MaxRestarts: *maxRestarts, StartTimeout: *startTimeout, ListenAddr: listen, Front: front, Hold: *hold, Refresh: *refresh,
			Stdout: e.stdout, Stderr: e.stderr, Store: store, Health: healthPrinter(e.stderr, *asJSON),
		}
		if *topic != "" {
			if opts.Alert, err = snsAlert(ctx, *topic); err != nil {
				return err
			}
		}
		s, err := supervise.New(opts)
		if err != nil {
			return usagef("%v", err)
		}
		defer forwardSignals(ctx, s)()
		return served(s.Run(ctx))
	}
	return c
}

// served is serve's error for the supervisor's err: a degradedError when
// it stopped while degraded.
func served(err error) error {
	if supervise.StoppedDegraded(err) {
		return degradedError{err}
	}
	return err
}

// degradedError is a supervisor stopped while degraded (exit 5).
type degradedError struct{ err error }

func (d degradedError) Error() string { return d.err.Error() }
func (d degradedError) Unwrap() error { return d.err }

// parseBinaries reads --rocklake FORMAT=PATH values.
func parseBinaries(values []string) (map[format.Version]string, error) {
	if len(values) == 0 {
		return nil, usagef("--rocklake FORMAT=PATH is required: the RockLake binary for each catalog format (1=/usr/local/bin/rocklake)")
	}
	bins := map[format.Version]string{}
	for _, v := range values {
		f, path, ok := strings.Cut(v, "=")
		n, err := strconv.ParseUint(strings.TrimPrefix(f, "v"), 10, 32)
		if !ok || err != nil || n == 0 || path == "" {
			return nil, usagef("--rocklake %q: want FORMAT=PATH, like 1=/usr/local/bin/rocklake", v)
		}
		if _, dup := bins[format.Version(n)]; dup {
			return nil, usagef("--rocklake: format %d given twice", n)
		}
		if st, err := os.Stat(path); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, usagef("--rocklake %s: %s is not an executable file", v, path)
		}
		bins[format.Version(n)] = path
	}
	return bins, nil
}

// healthPrinter writes each health line to w: text, or a JSON object with
// --json.
func healthPrinter(w io.Writer, asJSON bool) func(supervise.Health) {
	var mu sync.Mutex
	return func(h supervise.Health) {
		mu.Lock()
		defer mu.Unlock()
		if asJSON {
			b, _ := json.Marshal(h) // plain fields
			fmt.Fprintf(w, "%s\n", b)
			return
		}
		fmt.Fprintf(w, "rocklake-migrate serve: %s\n", h)
	}
}

// snsAlert is the supervisor's alert: a message on topic.
func snsAlert(ctx context.Context, topic string) (func(ctx context.Context, subject, body string) error, error) {
	pub, err := notify.NewPublisher(ctx, notify.Options{})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, subject, body string) error {
		_, err := pub.PublishOutcome(ctx, topic, subject, body)
		return err
	}, nil
}

// forwardSignals passes SIGUSR1 and SIGUSR2 on to RockLake until ctx ends;
// the returned function stops it.
func forwardSignals(ctx context.Context, s *supervise.Supervisor) func() {
	forward := make(chan os.Signal, 4)
	signal.Notify(forward, syscall.SIGUSR1, syscall.SIGUSR2)
	go func() {
		for {
			select {
			case sig := <-forward:
				s.Signal(sig)
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { signal.Stop(forward) }
}
