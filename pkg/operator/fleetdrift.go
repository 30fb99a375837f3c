package operator

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// FleetDriftLine and FleetDriftReport are the fleet's drift check's, the
// check Lambda's FleetDrift step's (workflow.FleetDrift): one
// implementation for the CLI and the schedule.
type (
	FleetDriftLine   = workflow.FleetDriftLine
	FleetDriftReport = workflow.FleetDriftReport
)

// FleetDrift runs the drift check on every pointer of the fleet and sends
// one alert to topic listing every pointer that drifted or could not be
// checked (workflow.FleetDrift). The error is ErrFleetDrift when any did,
// for the CLI's exit code.
func FleetDrift(ctx context.Context, env workflow.Env, sources []string, expect uint64, topic string) (FleetDriftReport, error) {
	rep, err := workflow.FleetDrift(ctx, env, workflow.FleetDriftInput{Sources: sources, Expect: expect, Topic: topic})
	if err != nil {
		return rep, err
	}
	if rep.Unhealthy > 0 {
		return rep, fmt.Errorf("%w: %d of %d pointers", ErrFleetDrift, rep.Unhealthy, len(rep.Pointers))
	}
	return rep, nil
}
