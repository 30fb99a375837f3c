package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// migrateInPlace is `migrate --in-place` (Strategy A): Check (the lock and
// the refusals, before anything is touched), then workflow.MigrateInPlace,
// reported as migrate reports a workflow run.
func migrateInPlace(ctx context.Context, e *env, env workflow.Env, in workflow.CheckInput, publish workflow.Publish, topic string, asJSON bool) error {
	times := map[string]float64{}
	rep := migrateReport{MigrationID: in.MigrationID, StateSeconds: times, Outcome: "migrated in place"}
	timed := func(state string, f func() error) error {
		fmt.Fprintf(e.stderr, "%s → %s\n", time.Now().Format("15:04:05"), state)
		start := time.Now()
		err := f()
		times[state] = time.Since(start).Seconds()
		return err
	}
	var m workflow.Migration
	err := timed("Check", func() (err error) {
		m, err = workflow.Check(ctx, env, in)
		return err
	})
	if err == nil {
		rep.Source, rep.Target, rep.From, rep.To = m.Source, m.Target, m.From, m.To
	}
	if err == nil && m.NeedsMigration {
		var out workflow.InPlaceOutput
		err = timed("InPlace", func() (err error) {
			out, err = workflow.MigrateInPlace(ctx, env, m)
			return err
		})
		res := out.InPlace
		rep.InPlace, rep.PointerVersionID = &res, out.PointerVersionID
		if err == nil {
			rep.Counts, rep.Digest = res.Digest.Counts(), res.Digest.Sum()
		}
		for t, n := range res.Carried {
			rep.Carried = countTag(rep.Carried, t.String(), n)
		}
		for t, n := range res.Dropped {
			rep.Dropped = countTag(rep.Dropped, t.String(), n)
		}
		for _, w := range []string{out.Warning, out.CleanupError} {
			if w != "" {
				fmt.Fprintf(e.stderr, "warning: %s\n", w)
			}
		}
	}
	switch {
	case err != nil:
		rep.Outcome, rep.Error = "failed", err.Error()
	case !m.NeedsMigration:
		rep.Outcome = "nothing to do"
	case m.DryRun:
		rep.Outcome = "dry run (nothing written; the pointer unchanged)"
	}
	if publish != nil && topic != "" {
		msg := fmt.Sprintf("migration %s (in place) of %s: %s", rep.MigrationID, rep.Source, rep.Outcome)
		if rep.Error != "" {
			msg += ": " + rep.Error
		}
		if perr := publish(ctx, topic, "rocklake-migrate "+rep.MigrationID+": "+rep.Outcome, msg); perr != nil {
			rep.NotifyError = perr.Error()
		}
	}
	if asJSON {
		if perr := printJSON(e.stdout, rep); perr != nil {
			return perr
		}
		return err
	}
	printMigrateReport(e, rep)
	if r := rep.InPlace; r != nil && r.Records > 0 {
		fmt.Fprintf(e.stdout, "in place: %d keys in format %s (%d bytes), %d format-%s keys deleted, one batch of %d bytes", r.Records, r.To, r.Bytes, r.Deleted, r.From, r.BatchBytes)
		if wb := r.WayBack; wb != nil {
			fmt.Fprintf(e.stdout, "; the way back is %s, the format-%s catalog as it was (%d objects, %d bytes copied; rocklake-migrate rollback --pointer %s names it)", wb.Catalog, r.From, wb.Objects, wb.Bytes, in.Pointer)
		}
		fmt.Fprintln(e.stdout)
	}
	return err
}

func countTag(m map[string]uint64, tag string, n uint64) map[string]uint64 {
	if m == nil {
		m = map[string]uint64{}
	}
	m[tag] += n
	return m
}
