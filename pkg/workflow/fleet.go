package workflow

import (
	"context"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
)

// FleetList is the fleet definition's first step: the fleet run's
// pointers found (pkg/fleet: by content under prefixes, or listed), its
// record written, its runs split into the canary and the rest, each with
// its child execution's input.
func FleetList(ctx context.Context, env Env, in fleet.Request) (fleet.Listed, error) {
	return fleet.List(ctx, env.Store, in, time.Now())
}

// FleetReport is the fleet definition's last step: how each pointer went,
// read from its own run's record, into the fleet run's record, and the
// notice that says it.
func FleetReport(ctx context.Context, env Env, in fleet.Listed) (fleet.Summary, error) {
	return fleet.Report(ctx, env.Store, in, time.Now())
}
