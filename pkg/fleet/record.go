package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// State is where one pointer of a fleet run stands.
type State string

const (
	Pending    State = "pending"     // not started yet
	Running    State = "running"     // its run is under way
	Migrated   State = "migrated"    // flipped to the target format, verified
	AtTarget   State = "at-target"   // already in the target format: nothing done
	Refused    State = "refused"     // its run refused before changing anything (lock held, unknown format, source gone …)
	Failed     State = "failed"      // its run failed; Abort removed what it made, the pointer did not move
	Skipped    State = "skipped"     // not started: the canary failed, or the fleet run stopped at its failure limit
	RolledBack State = "rolled-back" // a fleet rollback took it back to its catalog before the fleet run
)

// done reports whether a pointer in state s needs nothing more from a run
// to the target.
func (s State) done() bool { return s == Migrated || s == AtTarget }

// Line is one pointer in a fleet run's record and report.
type Line struct {
	Pointer string `json:"pointer"`
	Canary  bool   `json:"canary,omitempty"`
	State   State  `json:"state"`
	// RunID is the pointer's migration (or rollback) run.
	RunID string `json:"run_id,omitempty"`
	// Before and After are the catalogs the pointer named before and after.
	Before string         `json:"before,omitempty"`
	After  string         `json:"after,omitempty"`
	From   format.Version `json:"from,omitempty"`
	// FreezeSeconds is the run's write freeze (online: fence to flip).
	FreezeSeconds float64   `json:"freeze_seconds,omitempty"`
	Seconds       float64   `json:"seconds,omitempty"`
	ErrorName     string    `json:"error_name,omitempty"`
	Error         string    `json:"error,omitempty"`
	Started       time.Time `json:"started,omitzero"`
}

// Run is the record of one fleet run (<first source>.fleet/, layout.FleetRun):
// written when it starts and after each pointer's run ends, so that status
// reads it while it goes on and a rollback finds what it migrated.
type Run struct {
	ID          string         `json:"id"`
	Kind        string         `json:"kind"` // "migrate" or "rollback"
	To          format.Version `json:"to,omitempty"`
	Sources     []string       `json:"sources"`
	Started     time.Time      `json:"started"`
	Ended       time.Time      `json:"ended,omitzero"`
	Concurrency int            `json:"concurrency"`
	Canary      int            `json:"canary"`
	MaxFailures int            `json:"max_failures"`
	// RollbackOf names the fleet run a rollback undoes.
	RollbackOf string `json:"rollback_of,omitempty"`
	// Trigger says who started the fleet run.
	Trigger string `json:"trigger,omitempty"`
	// Stopped says why the run started no more pointers.
	Stopped string `json:"stopped,omitempty"`
	Ignored int    `json:"ignored"`
	Lines   []Line `json:"pointers"`
	Totals  Totals `json:"totals"`
}

// Totals counts a run's pointers by state.
type Totals map[State]int

// Failures is how many pointers failed or were refused.
func (r *Run) Failures() int { return r.Totals[Failed] + r.Totals[Refused] }

func (r *Run) count() {
	r.Totals = Totals{}
	for _, l := range r.Lines {
		r.Totals[l.State]++
	}
}

// url is where the record lives.
func (r *Run) url() string { return layout.FleetRun(r.Sources[0], r.Started, r.ID) }

// write counts the run's lines and writes its record.
func write(ctx context.Context, store *blob.Store, r *Run) error {
	r.count()
	if err := store.PutJSON(ctx, r.url(), r); err != nil {
		return fmt.Errorf("%w: %w", ErrRecordUnwritable, err)
	}
	return nil
}

// String is the totals in a stable order.
func (t Totals) String() string {
	var parts []string
	for _, s := range []State{Migrated, RolledBack, AtTarget, Refused, Failed, Skipped, Running, Pending} {
		if t[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", t[s], s))
		}
	}
	return strings.Join(parts, ", ")
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return hex.EncodeToString(b)
}

// Runs lists the fleet's run records beside source, newest first.
func Runs(ctx context.Context, store *blob.Store, source string) ([]string, error) {
	infos, err := store.List(ctx, layout.FleetRuns(source))
	if err != nil {
		return nil, fmt.Errorf("fleet: list the runs of %s: %w", source, err)
	}
	urls := make([]string, 0, len(infos))
	for _, in := range infos {
		if layout.IsFleetRun(in.URL) {
			urls = append(urls, in.URL)
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(urls)))
	return urls, nil
}

// FindRun reads fleet run id of the fleet beside source, or, when id is
// "", its latest run of kind ("" for any); for kind "migrate", the latest
// that migrated a pointer (a run that found every pointer done has nothing
// to undo).
func FindRun(ctx context.Context, store *blob.Store, source, id, kind string) (Run, error) {
	urls, err := Runs(ctx, store, source)
	if err != nil {
		return Run{}, err
	}
	for _, u := range urls {
		if id != "" && layout.HistoryRunID(u) != id {
			continue
		}
		var r Run
		if err := store.GetJSON(ctx, u, &r); err != nil {
			return Run{}, err
		}
		if id != "" || kind == "" || r.Kind == kind && (kind != "migrate" || r.Totals[Migrated] > 0) {
			return r, nil
		}
	}
	if id != "" {
		return Run{}, fmt.Errorf("%w: no fleet run %s beside %s", ErrNoRun, id, source)
	}
	return Run{}, fmt.Errorf("%w: no %s fleet run beside %s", ErrNoRun, kind, source)
}
