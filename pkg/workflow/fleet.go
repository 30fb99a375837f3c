package workflow

import (
	"context"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

// FleetList is the fleet definition's first step: the fleet run's
// pointers found (pkg/fleet: by content under prefixes, or listed), its
// record written, its runs split into the canary and the rest, each with
// its child execution's input.
func FleetList(ctx context.Context, env runstate.Env, in fleet.Request) (fleet.Listed, error) {
	return fleet.List(ctx, env.Store, in, time.Now())
}

// FleetReport is the fleet definition's last step: how each pointer went,
// read from its own run's record, into the fleet run's record, and the
// notice that says it.
func FleetReport(ctx context.Context, env runstate.Env, in fleet.Listed) (fleet.Summary, error) {
	return fleet.Report(ctx, env.Store, in, time.Now())
}

// FleetItemInput is what each item of a fleet run's Map tells the item
// steps: the fleet run, where its records are, and its failure limit.
type FleetItemInput struct {
	FleetRun    string `json:"fleet_run"`
	Source      string `json:"source"`
	MaxFailures int    `json:"max_failures,omitempty"`
}

// FleetGoOutput says whether the item may start its pointer's run.
type FleetGoOutput struct {
	Go bool `json:"go"`
}

// FleetGo is each fleet item's first step: whether fewer pointers failed
// than the fleet run's limit (pkg/fleet.MayStart); past it the item starts
// nothing, so that no running migration is ever stopped for the limit.
func FleetGo(ctx context.Context, env runstate.Env, in FleetItemInput) (FleetGoOutput, error) {
	ok, err := fleet.MayStart(ctx, env.Store, in.Source, in.FleetRun, in.MaxFailures)
	return FleetGoOutput{Go: ok}, err
}

// FleetFailedOutput is the fleet run's failed pointers so far.
type FleetFailedOutput struct {
	Failures int `json:"failures"`
}

// FleetFailed counts a fleet item whose pointer's run failed
// (pkg/fleet.CountFailure).
func FleetFailed(ctx context.Context, env runstate.Env, in FleetItemInput) (FleetFailedOutput, error) {
	n, err := fleet.CountFailure(ctx, env.Store, in.Source, in.FleetRun)
	return FleetFailedOutput{Failures: n}, err
}
