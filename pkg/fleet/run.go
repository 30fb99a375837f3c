package fleet

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Runner runs one pointer's migration, or its rollback, to its end and
// says how it went (the Line's State, RunID, catalogs, freeze, error).
// Local is the CLI's; the fleet state machine runs the migration state
// machine as child executions instead.
type Runner interface {
	Migrate(ctx context.Context, pointer string, to format.Version, rebuild bool, trigger string) Line
	Rollback(ctx context.Context, pointer, trigger string) Line
}

// Options say how a fleet run goes.
type Options struct {
	Sources []string
	To      format.Version
	// Rebuild moves each catalog into a new one (in To, or its own format
	// when To is 0): no pointer is at its target before.
	Rebuild bool
	// Concurrency: pointers run at once after the canary (at least 1).
	Concurrency int
	// Canary: pointers run first, one at a time, each to its flip; any
	// failure stops the fleet run before the others start.
	Canary int
	// MaxFailures: once this many pointers failed or were refused, no
	// more are started (0: never stop; each failure is still reported).
	MaxFailures int
	// ID names the fleet run (default: a new one).
	ID string
	// Progress, when set, hears of each pointer's line as it changes.
	Progress func(Line)
}

// Migrate runs every pointer of the fleet in sources to format To: the
// canary pointers first, then the rest at most Concurrency at a time. A
// pointer already at To is a no-op, one whose run is refused or fails is
// named in the record with its error name and blocks no other; running it
// again does exactly what is not yet done. The record (Run) is written
// before the first pointer starts and after each one ends; the error is
// ErrCanaryFailed or ErrPointersFailed when a pointer did not get there.
func Migrate(ctx context.Context, store *blob.Store, r Runner, opts Options) (Run, error) {
	f, err := Discover(ctx, store, opts.Sources)
	if err != nil {
		return Run{}, err
	}
	run := newRun("migrate", opts, f)
	for i, m := range f.Members {
		l := Line{Pointer: m.Pointer, State: Pending, Before: m.Catalog, From: m.Format}
		switch {
		case m.Unreadable != "":
			l.State, l.ErrorName, l.Error = Refused, m.ErrorName, m.Unreadable
		case m.Format == opts.To && !opts.Rebuild:
			l.State, l.After = AtTarget, m.Catalog
		}
		run.Lines[i] = l
	}
	trigger := "fleet:" + run.ID
	return execute(ctx, store, run, opts, func(ctx context.Context, l Line) Line {
		return r.Migrate(ctx, l.Pointer, opts.To, opts.Rebuild, trigger)
	})
}

// Rollback rolls back every pointer fleet run id (the latest migrate run
// when "") migrated, each by its own rollback (which carries back the
// commits made since its flip), at most Concurrency at a time, canary
// first. Its record names the run it undoes (RollbackOf).
func Rollback(ctx context.Context, store *blob.Store, r Runner, id string, opts Options) (Run, error) {
	undo, err := FindRun(ctx, store, opts.Sources[0], id, "migrate")
	if err != nil {
		return Run{}, err
	}
	opts.To = 0
	run := newRun("rollback", opts, Fleet{Sources: opts.Sources})
	run.RollbackOf = undo.ID
	for _, l := range undo.Lines {
		if l.State == Migrated {
			run.Lines = append(run.Lines, Line{Pointer: l.Pointer, State: Pending, Before: l.After, After: l.Before})
		}
	}
	trigger := "fleet-rollback:" + run.ID
	return execute(ctx, store, run, opts, func(ctx context.Context, l Line) Line {
		got := r.Rollback(ctx, l.Pointer, trigger)
		if got.State == Migrated {
			got.State = RolledBack
		}
		return got
	})
}

func newRun(kind string, opts Options, f Fleet) *Run {
	id := opts.ID
	if id == "" {
		id = workflow.NewRunID("f-")
	}
	return &Run{ID: id, Kind: kind, To: opts.To, Sources: opts.Sources, Started: time.Now().UTC().Truncate(time.Millisecond),
		Concurrency: max(opts.Concurrency, 1), Canary: opts.Canary, MaxFailures: opts.MaxFailures,
		Ignored: f.Ignored, Lines: make([]Line, len(f.Members))}
}

// execute runs each pending line (canary first, one at a time, then the
// rest at run.Concurrency), recording each as it starts and ends.
func execute(ctx context.Context, store *blob.Store, run *Run, opts Options, one func(context.Context, Line) Line) (Run, error) {
	w := &recorder{store: store, run: run}
	if err := w.write(ctx); err != nil {
		return w.snapshot(), err
	}
	do := func(i int) error {
		l := w.snapshot().Lines[i]
		l.State, l.Started = Running, time.Now().UTC()
		if err := w.set(ctx, i, l); err != nil {
			return err
		}
		notify(opts, l)
		got := one(ctx, l)
		got.Pointer, got.Canary, got.Started = l.Pointer, l.Canary, l.Started
		got.Seconds = time.Since(l.Started).Seconds()
		if got.Before == "" {
			got.Before = l.Before
		}
		notify(opts, got)
		return w.set(ctx, i, got)
	}
	// The canary: the first opts.Canary pointers whose runs start, one at
	// a time; one refused at its Check (nothing changed: its lock held,
	// its catalog in an unknown format) is named and the next one is the
	// canary instead, but a canary whose run failed stops the fleet run.
	var pending []int
	canaries := 0
	for i, l := range run.Lines {
		if l.State != Pending {
			continue
		}
		if canaries == opts.Canary {
			pending = append(pending, i)
			continue
		}
		l.Canary = true
		if err := w.set(ctx, i, l); err != nil {
			return finish(ctx, w, "", err)
		}
		if err := do(i); err != nil {
			return finish(ctx, w, "", err)
		}
		switch got := w.snapshot().Lines[i]; got.State {
		case Refused:
		case Failed:
			return finish(ctx, w, fmt.Sprintf("the canary %s failed: no other pointer was started", l.Pointer),
				fmt.Errorf("%w: %s: %s: %s", ErrCanaryFailed, l.Pointer, got.ErrorName, got.Error))
		default:
			canaries++
		}
	}
	stopped, err := pool(ctx, w, pending, opts, do)
	return finish(ctx, w, stopped, err)
}

// pool runs the lines at most run.Concurrency at a time, starting none
// once MaxFailures failed or ctx ended.
func pool(ctx context.Context, w *recorder, pending []int, opts Options, do func(int) error) (string, error) {
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		first   error
		stopped string
	)
	sem := make(chan struct{}, max(opts.Concurrency, 1))
	for _, i := range pending {
		sem <- struct{}{}
		cur := w.snapshot()
		mu.Lock()
		halt := first != nil
		mu.Unlock()
		switch {
		case halt:
		case ctx.Err() != nil:
			stopped = "interrupted: " + ctx.Err().Error()
		case opts.MaxFailures > 0 && cur.Failures() >= opts.MaxFailures:
			stopped = fmt.Sprintf("%d pointers failed or were refused (--max-failures %d): no more were started", cur.Failures(), opts.MaxFailures)
		}
		if halt || stopped != "" {
			<-sem
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			if err := do(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}(i)
	}
	wg.Wait()
	return stopped, first
}

// finish marks what never started as skipped, ends the record and says
// whether every pointer got there.
func finish(ctx context.Context, w *recorder, stopped string, err error) (Run, error) {
	w.mu.Lock()
	for i, l := range w.run.Lines {
		if l.State == Pending {
			w.run.Lines[i].State = Skipped
		}
	}
	w.run.Stopped, w.run.Ended = stopped, time.Now().UTC().Truncate(time.Millisecond)
	werr := w.writeLocked(context.WithoutCancel(ctx))
	w.mu.Unlock()
	run := w.snapshot()
	switch {
	case err != nil:
		return run, err
	case werr != nil:
		return run, werr
	case run.Failures() > 0 || run.Totals[Skipped] > 0:
		return run, fmt.Errorf("%w: %d of %d pointers failed or were refused, %d not started", ErrPointersFailed, run.Failures(), len(run.Lines), run.Totals[Skipped])
	}
	return run, nil
}

func notify(opts Options, l Line) {
	if opts.Progress != nil {
		opts.Progress(l)
	}
}
