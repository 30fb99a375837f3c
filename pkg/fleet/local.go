package fleet

import (
	"context"
	"io"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Local runs each pointer's migration in this process (pkg/localrun: the
// migration definition under pkg/asl, the same steps as the Lambdas), with
// the checks and the staging every migration has.
type Local struct {
	// Env is every run's; an empty Staging is each pointer's own, beside
	// it (layout.DefaultStaging).
	Env workflow.Env
	// Shards and Concurrency are each run's (0: localrun's defaults).
	Shards, Concurrency int
	// Online is each run's setting (nil: the default, online).
	Online *bool
	// FreezeGrace bounds each run's wait for its supervisors (nil: the
	// default).
	FreezeGrace *float64
	// Log gets each run's plain lines (nil: none).
	Log io.Writer
}

func (l Local) env(ptr string) workflow.Env {
	env := l.Env
	if env.Staging == "" {
		env.Staging = layout.DefaultStaging(ptr)
	}
	return env
}

// Migrate runs pointer's migration to to.
func (l Local) Migrate(ctx context.Context, ptr string, to format.Version, rebuild bool, trigger string) Line {
	rep, err := localrun.Run(ctx, l.env(ptr), localrun.Options{
		Check:       workflow.CheckInput{Pointer: ptr, TargetVersion: uint64(to), Rebuild: rebuild, Shards: l.Shards, Online: l.Online, FreezeGrace: l.FreezeGrace, Trigger: trigger},
		Concurrency: l.Concurrency, Log: l.Log,
	})
	return lineOf(rep, err)
}

// Rollback rolls pointer back as the CLI's rollback does (operator.Rollback).
func (l Local) Rollback(ctx context.Context, ptr, trigger string) Line {
	res, err := operator.Rollback(ctx, l.env(ptr), workflow.RollbackInput{Pointer: ptr, Trigger: trigger, FreezeGrace: l.FreezeGrace},
		localrun.Options{Concurrency: l.Concurrency, Log: l.Log})
	if res.Carried != nil {
		return lineOf(res.Carried, err)
	}
	if err != nil {
		return failure(Refused, err)
	}
	out := res.OneStep
	return Line{State: Migrated, RunID: out.RunID, Before: out.From, After: out.Catalog}
}

// lineOf is how a local run went: refused when it ended at Check (nothing
// was changed), failed when a later state failed (its Abort ran).
func lineOf(rep *localrun.Report, err error) Line {
	if rep == nil {
		return failure(Refused, err)
	}
	l := Line{RunID: rep.MigrationID, Before: rep.Source, After: rep.Target, From: rep.From}
	if rep.Online != nil {
		l.FreezeSeconds = rep.Online.FreezeSeconds
	}
	switch {
	case err != nil:
		state := Failed
		if ranOnlyCheck(rep.StateSeconds) {
			state = Refused
		}
		f := failure(state, err)
		f.RunID, f.Before, f.From = l.RunID, l.Before, l.From
		return f
	case rep.Outcome == "nothing to do" || rep.PointerVersionID == "":
		l.State, l.After = AtTarget, rep.Source
	default:
		l.State = Migrated
	}
	return l
}

// ranOnlyCheck reports whether a run ended before any step that touches
// its source (Freeze, Snapshot, InPlace): Check refused it.
func ranOnlyCheck(states map[string]float64) bool {
	for _, s := range []string{statemachine.StepFreeze, statemachine.StepSnapshot, statemachine.StepInPlace} {
		if _, ok := states[s]; ok {
			return false
		}
	}
	return true
}

func failure(s State, err error) Line {
	name := workflow.ErrorName(err)
	if name == "" {
		name = errname.Of(err)
	}
	return Line{State: s, ErrorName: name, Error: err.Error()}
}
