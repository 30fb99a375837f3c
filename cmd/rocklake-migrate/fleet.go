package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

// newFleetCmd is `fleet`: the same operations over every pointer of a
// fleet (pkg/fleet).
func newFleetCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "fleet plan|migrate|rollback|status|drift --pointers s3://…/ [--pointers …]",
		Short: "plan, migrate, roll back, check every catalog of a fleet: pointers under prefixes or in lists",
		Long: `fleet runs the per-catalog operations over a fleet of pointers: every pointer object
under a prefix (a URL ending in /, recognised by its content; other objects are ignored
and counted), or each pointer URL listed in a file or object (one per line, # comments).
--pointers repeats; the prefixes and lists may be in several buckets. A fleet run's
record lives beside the first source (<source>.fleet/), which status and rollback read.`,
		Example: `  rocklake-migrate fleet plan --pointers s3://b/tenants/ --to v2 --concurrency 4
  rocklake-migrate fleet migrate --pointers s3://b/tenants/ --to v2 --concurrency 4 --canary 1 --max-failures 3
  rocklake-migrate fleet status --pointers s3://b/tenants/
  rocklake-migrate fleet rollback --pointers s3://b/tenants/
  rocklake-migrate fleet drift --pointers s3://b/tenants/ --expect v2 --sns-topic arn:aws:sns:us-east-1:123456789012:alerts`,
	}
	return withSubcommands(c, newFleetPlanCmd(e), newFleetMigrateCmd(e), newFleetRollbackCmd(e), newFleetStatusCmd(e), newFleetDriftCmd(e))
}

// fleetFlags are the flags every fleet command has.
type fleetFlags struct {
	sources *[]string
	staging *string
	asJSON  *bool
}

func addFleetFlags(fs *pflag.FlagSet, what string) fleetFlags {
	return fleetFlags{
		sources: fs.StringArray("pointers", nil, "a prefix (ending in /) whose pointer objects are the fleet, or a list of pointer URLs (repeatable)"),
		staging: fs.String("staging", "", "staging prefix of every pointer's runs (default: beside the first --pointers, outside it: s3://b/tenants/ → s3://b/tenants.migrations)"),
		asJSON:  jsonFlag(fs, what),
	}
}

func (f fleetFlags) check() error {
	if len(*f.sources) == 0 {
		return usagef("--pointers is required: a prefix (s3://b/tenants/) or a list of pointer URLs")
	}
	return nil
}

func (f fleetFlags) env(ctx context.Context) (runstate.Env, error) {
	store, err := blob.New(ctx)
	if err != nil {
		return runstate.Env{}, err
	}
	staging := *f.staging
	if staging == "" {
		staging = layout.FleetStaging((*f.sources)[0])
	}
	return runstate.Env{Store: store, Staging: staging, CreatedBy: createdBy()}, nil
}

// runFlags are the flags of the fleet commands that run pointers.
type runFlags struct {
	concurrency, canary, maxFailures, shards *int
	offline                                  *bool
	grace                                    *time.Duration
}

func addRunFlags(fs *pflag.FlagSet) runFlags {
	return runFlags{
		concurrency: fs.Int("concurrency", 2, "pointers run at once (after the canary)"),
		canary:      fs.Int("canary", 1, "pointers run first, one at a time, each to its flip; a canary that fails stops the fleet run before any other starts (one refused at its Check is named and the next is the canary)"),
		maxFailures: fs.Int("max-failures", 0, "start no more pointers once this many failed or were refused (0: go on; each is reported)"),
		shards:      fs.Int("shards", 8, "shards of each pointer's run"),
		offline:     fs.Bool("offline", false, "migrate offline (fence each source for its whole copy)"),
		grace:       freezeGraceFlag(fs),
	}
}

func (r runFlags) check() error {
	if *r.concurrency < 1 || *r.canary < 0 || *r.maxFailures < 0 || *r.shards < 1 {
		return usagef("--concurrency and --shards take at least 1, --canary and --max-failures no negative value")
	}
	return nil
}

// request is the fleet run these flags ask for.
func (r runFlags) request(f fleetFlags, action string) (fleet.Request, error) {
	grace, err := freezeGrace(*r.grace)
	if err != nil {
		return fleet.Request{}, err
	}
	child := map[string]any{}
	if grace != nil {
		child["freeze_grace"] = *grace
	}
	if action == fleet.ActionMigrate {
		child["shards"] = *r.shards
		if *r.offline {
			child["online"] = false
		}
	}
	return fleet.Request{Sources: *f.sources, Action: action, Concurrency: *r.concurrency, Canary: *r.canary, MaxFailures: *r.maxFailures,
		Trigger: trigger(), Child: child}, nil
}

// runFleet runs the fleet definition here (localrun.RunFleet), saying on
// stderr as each pointer's run starts and ends, and prints its record.
func runFleet(ctx context.Context, e *env, ff fleetFlags, req fleet.Request, topic string) error {
	env, err := ff.env(ctx)
	if err != nil {
		return err
	}
	var obs asl.Observer
	if !*ff.asJSON {
		obs = fleetProgress(e.stderr)
	}
	run, err := localrun.RunFleet(ctx, env, req, localrun.FleetOptions{Topic: topic, Observer: obs})
	return printFleetRun(e, run, *ff.asJSON, err)
}

// itemSteps are the fleet definition's Tasks in a Map item that are not
// the pointer's run: may it start, and counting its failure.
var itemSteps = map[string]bool{"Go?": true, "Count the failure": true}

// fleetProgress says when each pointer's run (a child execution) starts
// and how it ends.
func fleetProgress(w io.Writer) asl.Observer {
	var mu sync.Mutex
	started := map[string]string{}
	key := func(ev asl.StateEvent) string { return fmt.Sprint(ev.MapIndex) }
	return asl.ObserverFuncs{
		Entered: func(ev asl.StateEvent) {
			if ev.Type != "Task" || len(ev.MapIndex) == 0 || itemSteps[ev.Name] {
				return
			}
			var it struct{ Action, Pointer string }
			_ = json.Unmarshal(ev.Input, &it)
			mu.Lock()
			started[key(ev)] = it.Pointer + ": " + it.Action
			mu.Unlock()
			fmt.Fprintf(w, "%s %s: %s started\n", ev.Time.Format("15:04:05"), it.Pointer, it.Action)
		},
		Exited: func(ev asl.StateEvent) {
			if ev.Type != "Task" || len(ev.MapIndex) == 0 || itemSteps[ev.Name] {
				return
			}
			mu.Lock()
			p := started[key(ev)]
			mu.Unlock()
			how := "ended"
			if ev.Error != "" {
				how = "failed: " + ev.Error
			}
			fmt.Fprintf(w, "%s %s %s (%s)\n", ev.Time.Format("15:04:05"), p, how, ev.Duration.Round(100*time.Millisecond))
		},
	}
}

func newFleetMigrateCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "migrate --pointers s3://…/ (--to vN | --rebuild) [--concurrency N] [--canary N] [--max-failures N]",
		Short: "migrate every pointer of the fleet: the canary first, then the rest N at a time; exit 1 if any did not get there",
		Example: `  rocklake-migrate fleet migrate --pointers s3://b/tenants/ --to v2 --concurrency 4 --canary 1
  rocklake-migrate fleet migrate --pointers s3://b/tenants.txt --pointers s3://other/CURRENT-list --to v2`,
	}
	fs := c.Flags()
	ff := addFleetFlags(fs, "print the fleet run's record as JSON")
	rf := addRunFlags(fs)
	to := fs.String("to", "", "target format (v2)")
	topic := fs.String("sns-topic", "", "SNS topic ARN of the fleet run's notice and each pointer's outcome")
	rebuild := fs.Bool("rebuild", false, "move each catalog into a new one in its own format (or --to's), with every step and guard of a migration")
	return setup(e, c, 72*time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := ff.check(); err != nil {
			return err
		}
		if err := rf.check(); err != nil {
			return err
		}
		var v format.Version
		if !*rebuild || *to != "" {
			var err error
			if v, err = format.ParseVersion(*to); err != nil {
				return usagef("--to: %v", err)
			}
		}
		req, err := rf.request(ff, fleet.ActionMigrate)
		if err != nil {
			return err
		}
		req.TargetVersion, req.Rebuild = v, *rebuild
		return runFleet(ctx, e, ff, req, *topic)
	})
}

func newFleetRollbackCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "rollback --pointers s3://…/ [--fleet-run ID] [--concurrency N]",
		Short:   "roll back every pointer a fleet run migrated (each with rollback's checks, carrying back its commits since the flip)",
		Example: `  rocklake-migrate fleet rollback --pointers s3://b/tenants/`,
	}
	fs := c.Flags()
	ff := addFleetFlags(fs, "print the rollback's record as JSON")
	rf := addRunFlags(fs)
	id := fs.String("fleet-run", "", "the fleet run to undo (default: the latest that migrated a pointer)")
	topic := fs.String("sns-topic", "", "SNS topic ARN of the fleet run's notice and each pointer's outcome")
	return setup(e, c, 72*time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := ff.check(); err != nil {
			return err
		}
		if err := rf.check(); err != nil {
			return err
		}
		req, err := rf.request(ff, fleet.ActionRollback)
		if err != nil {
			return err
		}
		req.RollbackOf = *id
		return runFleet(ctx, e, ff, req, *topic)
	})
}

func newFleetStatusCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "status --pointers s3://…/",
		Short:   "where every pointer of the fleet stands: its format now, its lock, its line in the latest fleet run",
		Example: `  rocklake-migrate fleet status --pointers s3://b/tenants/ --json`,
	}
	ff := addFleetFlags(c.Flags(), "print the status as JSON")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := ff.check(); err != nil {
			return err
		}
		env, err := ff.env(ctx)
		if err != nil {
			return err
		}
		st, err := fleet.StatusOf(ctx, env.Store, *ff.sources)
		if err != nil {
			return err
		}
		if *ff.asJSON {
			return printJSON(e.stdout, st)
		}
		if st.Run != nil {
			fmt.Fprintf(e.stdout, "latest fleet run %s (%s), started %s%s\n", st.Run.ID, st.Run.Kind, st.Run.Started.Format(time.RFC3339), ended(*st.Run))
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POINTER\tFORMAT\tSTATE\tRUN\tFREEZE\tDURATION\tLOCKED BY\tERROR")
		for _, p := range st.Pointers {
			state, f := string(p.State), p.Format.String()
			if state == "" {
				state = "-"
			}
			if p.Unreadable != "" {
				f = "?"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Pointer, f, state, dash(p.RunID), secs(p.FreezeSeconds), secs(p.Seconds), dash(p.LockedBy), errText(p.Line, p.Unreadable))
		}
		_ = tw.Flush()
		var at []string
		for v, n := range st.AtFormat {
			at = append(at, fmt.Sprintf("%d at %s", n, v))
		}
		sort.Strings(at)
		fmt.Fprintf(e.stdout, "%d pointers: %s; %d other objects ignored\n", len(st.Pointers), strings.Join(at, ", "), st.Ignored)
		return nil
	})
}

func newFleetPlanCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "plan --pointers s3://…/ --to vN [--concurrency N] [--canary N]",
		Short:   "plan every pointer of the fleet (read-only): its catalog, format, size, checks and estimate, and the fleet run's time",
		Example: `  rocklake-migrate fleet plan --pointers s3://b/tenants/ --to v2 --concurrency 4`,
	}
	fs := c.Flags()
	ff := addFleetFlags(fs, "print the plan as JSON")
	concurrency := fs.Int("concurrency", 2, "pointers run at once (after the canary)")
	canary := fs.Int("canary", 1, "pointers run first, one at a time")
	shards := fs.Int("shards", 8, "shards of each pointer's run")
	to := fs.String("to", "", "target format (v2)")
	return setup(e, c, 6*time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := ff.check(); err != nil {
			return err
		}
		v, err := format.ParseVersion(*to)
		if err != nil {
			return usagef("--to: %v", err)
		}
		if *concurrency < 1 || *canary < 0 || *shards < 1 {
			return usagef("--concurrency and --shards take at least 1, --canary no negative value")
		}
		env, err := ff.env(ctx)
		if err != nil {
			return err
		}
		p, err := operator.PlanFleet(ctx, env, *ff.sources, v, *concurrency, *canary, *shards)
		if err != nil {
			return err
		}
		if *ff.asJSON {
			return printJSON(e.stdout, p)
		}
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "POINTER\tCATALOG\tFORMAT\tSTORED\tKEYS\tRUN\tFREEZE\tUSD\tREADY")
		for _, l := range p.Pointers {
			ready := "yes"
			switch {
			case l.ErrorName != "":
				ready = "no: " + l.ErrorName
			case !l.NeedsMigration:
				ready = "at target"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%.4f\t%s\n", l.Pointer, l.Catalog, l.Format, l.StoredBytes, l.Keys, secs(l.Seconds), secs(l.WriteFreeze), l.USD, ready)
		}
		_ = tw.Flush()
		fmt.Fprintf(e.stdout, "%d pointers to migrate, %d refused, %d other objects ignored; the fleet run at --concurrency %d, --canary %d: about %s on AWS, $%.4f\n",
			p.ToMigrate, p.Refused, p.Ignored, p.Concurrency, p.Canary, time.Duration(p.Seconds*float64(time.Second)).Round(time.Second), p.USD)
		return nil
	})
}

func newFleetDriftCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "drift --pointers s3://…/ --expect vN [--sns-topic ARN]",
		Short:   "check every pointer of the fleet against the expected format; one alert lists them; exit 4 on drift",
		Example: `  rocklake-migrate fleet drift --pointers s3://b/tenants/ --expect v2 --sns-topic arn:aws:sns:us-east-1:123456789012:alerts`,
	}
	fs := c.Flags()
	ff := addFleetFlags(fs, "print the report as JSON")
	expect := fs.String("expect", "", "the format the deployed release expects")
	topic := fs.String("sns-topic", "", "publish one SNS message listing every pointer that drifted")
	return setup(e, c, 6*time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := ff.check(); err != nil {
			return err
		}
		v, err := format.ParseVersion(*expect)
		if err != nil {
			return usagef("--expect: %v", err)
		}
		env, err := ff.env(ctx)
		if err != nil {
			return err
		}
		if *topic != "" {
			if env.Publish, err = runstate.SNSPublish(ctx); err != nil {
				return err
			}
		}
		rep, derr := operator.FleetDrift(ctx, env, *ff.sources, uint64(v), *topic)
		if *ff.asJSON {
			if err := printJSON(e.stdout, rep); err != nil {
				return err
			}
		} else {
			for _, l := range rep.Pointers {
				state := "ok"
				if !l.Healthy {
					state = "DRIFT"
				}
				fmt.Fprintf(e.stdout, "%s %s\n", state, l.Pointer)
				if l.Error != "" {
					fmt.Fprintf(e.stdout, "  cannot check: %s: %s\n", l.ErrorName, l.Error)
				}
				for _, f := range l.Findings {
					fmt.Fprintf(e.stdout, "  %s\n", f)
				}
			}
			fmt.Fprintf(e.stdout, "%d of %d pointers need attention\n", rep.Unhealthy, len(rep.Pointers))
		}
		if derr != nil && rep.Unhealthy > 0 && len(rep.Pointers) > 0 {
			return fmt.Errorf("%w: %w", errDrift, derr)
		}
		return derr
	})
}

// printFleetRun prints a fleet run's record, as a table or as JSON; err is
// the run's.
func printFleetRun(e *env, run fleet.Run, asJSON bool, err error) error {
	if run.ID == "" {
		return err
	}
	if asJSON {
		if perr := printJSON(e.stdout, run); perr != nil {
			return perr
		}
		return err
	}
	writeFleetRun(e.stdout, run)
	return err
}

func writeFleetRun(w io.Writer, run fleet.Run) {
	fmt.Fprintf(w, "fleet run %s (%s", run.ID, run.Kind)
	if run.RollbackOf != "" {
		fmt.Fprintf(w, " of %s", run.RollbackOf)
	}
	fmt.Fprintf(w, "), started %s%s\n", run.Started.Format(time.RFC3339), ended(run))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POINTER\tSTATE\tRUN\tFREEZE\tDURATION\tERROR")
	for _, l := range run.Lines {
		state := string(l.State)
		if l.Canary {
			state += " (canary)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Pointer, state, dash(l.RunID), secs(l.FreezeSeconds), secs(l.Seconds), errText(l, ""))
	}
	_ = tw.Flush()
	var totals []string
	for s, n := range run.Totals {
		totals = append(totals, fmt.Sprintf("%d %s", n, s))
	}
	sort.Strings(totals)
	fmt.Fprintf(w, "%d pointers: %s; %d other objects ignored\n", len(run.Lines), strings.Join(totals, ", "), run.Ignored)
	if run.Stopped != "" {
		fmt.Fprintf(w, "stopped: %s\n", run.Stopped)
	}
}

func ended(r fleet.Run) string {
	if r.Ended.IsZero() {
		return ", under way"
	}
	return fmt.Sprintf(", ended %s (%s)", r.Ended.Format(time.RFC3339), r.Ended.Sub(r.Started).Round(time.Second))
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func secs(s float64) string {
	if s == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1fs", s)
}

func errText(l fleet.Line, unreadable string) string {
	switch {
	case l.ErrorName != "":
		msg := l.Error
		if len(msg) > 120 {
			msg = msg[:120] + "…"
		}
		return l.ErrorName + ": " + msg
	case unreadable != "":
		return unreadable
	}
	return ""
}
