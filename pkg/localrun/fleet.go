package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// FleetOptions configure RunFleet.
type FleetOptions struct {
	// Topic gets the fleet run's notice, and each pointer's run's ("" for
	// none); Publish sends them (nil: SNSPublish when there is a topic).
	Topic   string
	Publish runstate.Publish
	// Observer watches the fleet definition's states (nil: none).
	Observer asl.Observer
}

// RunFleet runs a fleet run here: the fleet definition
// (statemachine/fleet.asl.json) under pkg/asl, each pointer's migration or
// rollback a child execution of its definition in this process, as the
// fleet state machine runs them on AWS. It returns the fleet run's record;
// the error is the execution's (PointersFailed when a pointer did not get
// there), or why the record cannot be read.
func RunFleet(ctx context.Context, env runstate.Env, req fleet.Request, opts FleetOptions) (fleet.Run, error) {
	publish, err := runstate.Publisher(ctx, opts.Publish, opts.Topic)
	if err != nil {
		return fleet.Run{}, err
	}
	m, err := LoadDefinition(statemachine.Fleet, opts.Topic)
	if err != nil {
		return fleet.Run{}, err
	}
	if req.ID == "" {
		req.ID = fleet.NewRunID(time.Now())
	}
	in, err := json.Marshal(req)
	if err != nil {
		return fleet.Run{}, err
	}
	_, runErr := asl.Run(ctx, m, in, asl.Options{Tasks: Tasks(env, publish), Observer: opts.Observer})
	run, err := fleet.FindRun(context.WithoutCancel(ctx), env.Store, req.Sources[0], req.ID, "")
	if err != nil {
		if runErr != nil {
			return run, runErr // the run failed before its record: FleetList's error
		}
		return run, err
	}
	var ee *asl.ExecutionError
	switch {
	case runErr == nil:
		return run, nil
	case errors.As(runErr, &ee) && ee.Name == "PointersFailed":
		return run, fmt.Errorf("%w: %s", fleet.ErrPointersFailed, run.Totals)
	}
	return run, runErr
}
