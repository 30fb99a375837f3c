package workflow

import (
	"context"
	"fmt"
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

// FleetDriftInput is the fleet's drift check's input (drift.asl.json with
// "sources", from the stack's fleet drift schedule; the CLI's fleet drift).
type FleetDriftInput struct {
	// Sources are the fleet's prefixes and lists (fleet.Discover).
	Sources []string `json:"sources"`
	// Expect 0 (left out): the expected-version parameter's value, read now.
	Expect uint64 `json:"expect,omitempty"`
	// Topic, when set, gets one SNS message listing every pointer that
	// drifted or could not be checked.
	Topic string `json:"topic,omitempty"`
}

// FleetDrift runs the drift check (Drift: the expected version, from SSM
// when Expect is 0, and leftovers) on every pointer of the fleet, each in
// env's staging (a fleet's runs share one), and sends one alert to Topic
// listing every pointer that drifted or could not be checked. Findings are
// the report, not an error, as Drift's are: the error says the check could
// not look at all (no pointer found, the alert not sent).
func FleetDrift(ctx context.Context, env runstate.Env, in FleetDriftInput) (fleet.DriftReport, error) {
	f, err := fleet.Discover(ctx, env.Store, in.Sources)
	if err != nil {
		return fleet.DriftReport{}, err
	}
	rep := fleet.CheckDrift(ctx, f, in.Expect, func(ctx context.Context, pointerURL string) (fleet.DriftLine, uint64) {
		out, err := Drift(ctx, env, DriftInput{Pointer: pointerURL, Expect: in.Expect})
		if err != nil {
			return fleet.DriftLine{ErrorName: runstate.ErrorName(err), Error: err.Error()}, 0
		}
		l := fleet.DriftLine{Healthy: out.Healthy}
		for _, fd := range out.Report.Findings {
			l.Findings = append(l.Findings, string(fd.Kind)+": "+fd.Message)
		}
		return l, uint64(out.Report.Expected)
	})
	if rep.Healthy || in.Topic == "" {
		return rep, nil
	}
	publish, err := runstate.Publisher(ctx, env.Publish, in.Topic)
	if err != nil {
		return rep, fmt.Errorf("workflow: fleet drift: the alert was not sent: %w", err)
	}
	// The alert goes out even when the step's time is nearly up: it is the
	// point of the check.
	if err := publish(context.WithoutCancel(ctx), in.Topic, rep.Subject(), rep.Message()); err != nil {
		return rep, fmt.Errorf("workflow: fleet drift: the alert was not sent: %w", err)
	}
	rep.MessageID = "sent"
	return rep, nil
}
