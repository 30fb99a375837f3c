package operator

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// FleetDrift runs the drift check on every pointer of the fleet and sends
// one alert to topic listing every pointer that drifted or could not be
// checked (workflow.FleetDrift: the CLI and the schedule share it). The error is ErrFleetDrift when any did,
// for the CLI's exit code.
func FleetDrift(ctx context.Context, env runstate.Env, sources []string, expect uint64, topic string) (fleet.DriftReport, error) {
	rep, err := workflow.FleetDrift(ctx, env, workflow.FleetDriftInput{Sources: sources, Expect: expect, Topic: topic})
	if err != nil {
		return rep, err
	}
	if rep.Unhealthy > 0 {
		return rep, fmt.Errorf("%w: %d of %d pointers", ErrFleetDrift, rep.Unhealthy, len(rep.Pointers))
	}
	return rep, nil
}
