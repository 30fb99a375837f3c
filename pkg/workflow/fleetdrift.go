package workflow

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

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
