package fleet

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The actions of a fleet run.
const (
	ActionMigrate  = "migrate"
	ActionRollback = "rollback"
)

// Request is what a fleet run is asked (the fleet state machine's input).
type Request struct {
	// Sources are the fleet's prefixes and lists (Discover); the first
	// keeps the fleet's run records.
	Sources []string `json:"sources"`
	// Action is ActionMigrate (the default) or ActionRollback.
	Action string `json:"action,omitempty"`
	// TargetVersion and Rebuild: each pointer's migration's (a rebuild
	// may leave the version out: each catalog's own).
	TargetVersion format.Version `json:"target_version,omitempty"`
	Rebuild       bool           `json:"rebuild,omitempty"`
	// Canary pointers run first, one at a time; Concurrency the rest at
	// once (default 1); once MaxFailures failed, no more start (0: all
	// run, each failure reported).
	Canary      int `json:"canary,omitempty"`
	Concurrency int `json:"concurrency,omitempty"`
	MaxFailures int `json:"max_failures,omitempty"`
	// Trigger says who started the fleet run.
	Trigger string `json:"trigger,omitempty"`
	// ID names the fleet run (default: a new one).
	ID string `json:"fleet_run,omitempty"`
	// RollbackOf is the fleet run a rollback undoes (default: the latest
	// that migrated a pointer).
	RollbackOf string `json:"rollback_of,omitempty"`
	// Child is more of each pointer's run's input (shards, online,
	// freeze_grace …), passed to every child as it is.
	Child map[string]any `json:"child,omitempty"`
}

// Item is one pointer's run. The definition's ItemSelector makes its
// child execution's input: the run's Child with the item's pointer, so
// that an item is its pointer alone and the state holds thousands.
type Item struct {
	Pointer string `json:"pointer"`
}

// Listed is what FleetList hands the definition: the fleet run, its
// canary and the rest, the Map's limits, and where the record is.
type Listed struct {
	FleetRun string    `json:"fleet_run"`
	Source   string    `json:"source"`
	Started  time.Time `json:"started"`
	Action   string    `json:"action"`
	// Child is every child execution's input but its pointer; Item what
	// each item's steps (FleetGo, FleetFailed) are told but its pointer.
	Child  map[string]any `json:"child"`
	Item   map[string]any `json:"item"`
	Canary []Item         `json:"canary"`
	Rest   []Item         `json:"rest"`
	// Concurrency is the Map's MaxConcurrency; MaxFailures the failure
	// limit each item asks about before it starts (MayStart).
	Concurrency int `json:"concurrency"`
	MaxFailures int `json:"max_failures"`
	// Stopped says why the fleet run started no more pointers (the
	// definition sets it when the canary failed or the limit was passed);
	// StoppedBy is the Map's error.
	Stopped   string `json:"stopped"`
	StoppedBy any    `json:"stopped_by,omitempty"`
}

// List finds the pointers of a fleet run (Discover; for a rollback, those
// the fleet run it undoes migrated), writes the run's record (every
// pointer pending, those at the target at-target, those that cannot be
// read refused) and splits the runs to make into the canary and the rest.
func List(ctx context.Context, store *blob.Store, req Request, now time.Time) (Listed, error) {
	if len(req.Sources) == 0 {
		return Listed{}, fmt.Errorf("%w: no source of pointers given", ErrNoPointers)
	}
	if req.Action == "" {
		req.Action = ActionMigrate
	}
	run := &Run{ID: req.ID, Kind: req.Action, To: req.TargetVersion, Sources: req.Sources, Started: now.UTC().Truncate(time.Millisecond),
		Concurrency: max(req.Concurrency, 1), Canary: req.Canary, MaxFailures: req.MaxFailures, Trigger: req.Trigger}
	if run.ID == "" {
		run.ID = NewRunID(now)
	}
	switch req.Action {
	case ActionMigrate:
		f, err := Discover(ctx, store, req.Sources)
		if err != nil {
			return Listed{}, err
		}
		run.Ignored = f.Ignored
		for _, m := range f.Members {
			l := Line{Pointer: m.Pointer, State: Pending, Before: m.Catalog, From: m.Format}
			switch {
			case m.Unreadable != "":
				l.State, l.ErrorName, l.Error = Refused, m.ErrorName, m.Unreadable
			case m.Format == req.TargetVersion && !req.Rebuild:
				l.State, l.After = AtTarget, m.Catalog
			}
			run.Lines = append(run.Lines, l)
		}
	case ActionRollback:
		undo, err := FindRun(ctx, store, req.Sources[0], req.RollbackOf, ActionMigrate)
		if err != nil {
			return Listed{}, err
		}
		run.RollbackOf = undo.ID
		for _, l := range undo.Lines {
			if l.State == Migrated {
				run.Lines = append(run.Lines, Line{Pointer: l.Pointer, State: Pending, Before: l.After, After: l.Before})
			}
		}
	default:
		return Listed{}, fmt.Errorf("%w: action %q: want %q or %q", ErrBadRequest, req.Action, ActionMigrate, ActionRollback)
	}
	out := Listed{FleetRun: run.ID, Source: req.Sources[0], Started: run.Started, Action: req.Action, Concurrency: run.Concurrency,
		Child: childInput(req, run.ID), Canary: []Item{}, Rest: []Item{}}
	for i, l := range run.Lines {
		if l.State != Pending {
			continue
		}
		it := Item{Pointer: l.Pointer}
		if len(out.Canary) < req.Canary {
			run.Lines[i].Canary = true
			out.Canary = append(out.Canary, it)
		} else {
			out.Rest = append(out.Rest, it)
		}
	}
	out.MaxFailures = req.MaxFailures
	out.Item = map[string]any{"fleet_run": run.ID, "source": out.Source, "max_failures": req.MaxFailures}
	return out, write(ctx, store, run)
}

// Trigger is what each pointer's run of fleet run id records as its
// trigger: how Report finds it.
func Trigger(id string) string { return "fleet:" + id }

// childInput is every child's input but the pointer the definition adds.
func childInput(req Request, id string) map[string]any {
	in := maps.Clone(req.Child)
	if in == nil {
		in = map[string]any{}
	}
	in["trigger"] = Trigger(id)
	if req.Action == ActionMigrate {
		if req.TargetVersion != 0 {
			in["target_version"] = uint64(req.TargetVersion)
		}
		if req.Rebuild {
			in["rebuild"] = true
		}
	}
	return in
}

// NewRunID is a new fleet run's id: its start and a random tail, so that
// ids sort as runs start.
func NewRunID(now time.Time) string {
	return "f-" + now.UTC().Format("20060102T150405Z") + "-" + randomHex(4)
}
