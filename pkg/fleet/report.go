package fleet

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Summary is how a fleet run went: whether every pointer got there (OK),
// the totals, and the notice's subject and text (the record has the rest).
type Summary struct {
	OK      bool   `json:"ok"`
	Subject string `json:"subject"`
	Summary string `json:"summary"`
	Totals  Totals `json:"totals"`
}

// Report reads how each pointer of the fleet run went from its own run's
// record (the run whose trigger is Trigger(id); for a rollback, what the
// pointer names now), ends the fleet run's record with it, and says how
// the run went. A pointer with no run is skipped: the canary failed, or
// the failure limit stopped the run, before it started.
func Report(ctx context.Context, store *blob.Store, l Listed, now time.Time) (Summary, error) {
	run, err := FindRun(ctx, store, l.Source, l.FleetRun, "")
	if err != nil {
		return Summary{}, err
	}
	for i, line := range run.Lines {
		if line.State != Pending && line.State != Running {
			continue
		}
		if run.Lines[i], err = outcome(ctx, store, run, line); err != nil {
			return Summary{}, err
		}
	}
	run.Stopped, run.Ended = l.Stopped, now.UTC().Truncate(time.Millisecond)
	run.count()
	if run.Stopped == "" && run.MaxFailures > 0 && run.Failures() >= run.MaxFailures && run.Totals[Skipped] > 0 {
		run.Stopped = fmt.Sprintf("%d pointers failed or were refused (max_failures %d): no more were started", run.Failures(), run.MaxFailures)
	}
	if err := write(ctx, store, &run); err != nil {
		return Summary{}, err
	}
	s := Summary{Totals: run.Totals, OK: run.Failures() == 0 && run.Totals[Skipped] == 0 && run.Totals[Running] == 0}
	s.Subject = fmt.Sprintf("rocklake-migrate: fleet %s %s: %s", run.Kind, run.ID, run.Totals)
	s.Summary = run.Text()
	return s, nil
}

// outcome is line's state from its pointer's run record.
func outcome(ctx context.Context, store *blob.Store, run Run, line Line) (Line, error) {
	entries, err := history.List(ctx, store, line.Pointer, 0)
	if err != nil {
		return line, err
	}
	var rec *history.Record
	for _, e := range entries {
		if e.Trigger == Trigger(run.ID) || run.Kind == ActionRollback && e.Kind == history.KindRollback && !e.Start.Before(run.Started) {
			rec = &e.Record
			break
		}
	}
	if run.Kind == ActionRollback {
		p, _, err := pointer.Read(ctx, store, line.Pointer)
		if err == nil && p.Catalog == line.After {
			line.State = RolledBack
			if rec != nil {
				line.RunID, line.Seconds = rec.ID, rec.Duration(time.Now()).Seconds()
			}
			return line, nil
		}
	}
	switch {
	case rec == nil:
		line.State, line.Error = Skipped, "no run of this pointer was recorded: it was not started"
	case rec.Outcome == history.InProgress:
		line.State, line.RunID = Running, rec.ID
	case rec.Outcome == history.Succeeded:
		line.State, line.RunID, line.After = Migrated, rec.ID, rec.Target
	case rec.Outcome == history.NothingToDo:
		line.State, line.RunID, line.After = AtTarget, rec.ID, rec.Source
	default:
		line.State, line.RunID, line.ErrorName, line.Error = Failed, rec.ID, rec.ErrorName, rec.Error
		if rec.State == statemachine.StepCheck {
			line.State = Refused
		}
	}
	if rec != nil {
		line.Started, line.Seconds = rec.Start, rec.Duration(time.Now()).Seconds()
		if rec.Online != nil {
			line.FreezeSeconds = rec.Online.FreezeSeconds
		}
		if rec.From != 0 {
			line.From = rec.From
		}
	}
	return line, nil
}

// maxText bounds a notice: the summary travels in the state payload (256
// KiB) and in one SNS message (256 KiB); the record has every line.
const maxText = 64 << 10

// Text is the run as a notice: the totals, then one line per pointer (its
// state, run, write freeze, duration, error), those that did not get there
// first; past maxText it names how many more lines the record holds.
func (r Run) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleet %s %s of %s: %d pointers: %s\n", r.Kind, r.ID, strings.Join(r.Sources, ", "), len(r.Lines), r.Totals)
	if r.Stopped != "" {
		fmt.Fprintf(&b, "stopped: %s\n", r.Stopped)
	}
	fmt.Fprintf(&b, "record: %s\n\n", r.url())
	lines := slices.Clone(r.Lines)
	sort.SliceStable(lines, func(i, j int) bool { return !lines[i].got() && lines[j].got() })
	for n, l := range lines {
		if b.Len() > maxText {
			fmt.Fprintf(&b, "… and %d more pointers: the record has them\n", len(lines)-n)
			break
		}
		fmt.Fprintf(&b, "%s: %s", l.Pointer, l.State)
		if l.RunID != "" {
			fmt.Fprintf(&b, ", run %s", l.RunID)
		}
		if l.FreezeSeconds > 0 {
			fmt.Fprintf(&b, ", write freeze %.1f s", l.FreezeSeconds)
		}
		if l.Seconds > 0 {
			fmt.Fprintf(&b, ", %.1f s", l.Seconds)
		}
		if l.ErrorName != "" {
			fmt.Fprintf(&b, ": %s: %s", l.ErrorName, l.Error)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// got reports whether the pointer got where the run took it.
func (l Line) got() bool { return l.State.done() || l.State == RolledBack }
