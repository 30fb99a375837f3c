package operator

import (
	"context"
	"fmt"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// FleetDriftLine is one pointer's drift check.
type FleetDriftLine struct {
	Pointer string `json:"pointer"`
	Healthy bool   `json:"healthy"`
	// Findings are the drift check's, one line each.
	Findings  []string `json:"findings,omitempty"`
	ErrorName string   `json:"error_name,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// FleetDriftReport is the fleet's drift check: every pointer on its own line,
// and the one alert sent for all of them.
type FleetDriftReport struct {
	Expect    uint64           `json:"expect"`
	Pointers  []FleetDriftLine `json:"pointers"`
	Unhealthy int              `json:"unhealthy"`
	Ignored   int              `json:"ignored"`
	MessageID string           `json:"message_id,omitempty"`
}

// FleetDrift runs the drift check (workflow.Drift: the expected version, from
// SSM when expect is 0, and leftovers) on every pointer of the fleet, each
// in env's staging (a fleet's runs share one), and sends one alert to
// topic listing every pointer that drifted or could not be checked. The
// error is ErrFleetDrift when any did.
func FleetDrift(ctx context.Context, env workflow.Env, sources []string, expect uint64, topic string) (FleetDriftReport, error) {
	f, err := fleet.Discover(ctx, env.Store, sources)
	if err != nil {
		return FleetDriftReport{}, err
	}
	rep := FleetDriftReport{Expect: expect, Ignored: f.Ignored}
	for _, m := range f.Members {
		e := env
		l := FleetDriftLine{Pointer: m.Pointer}
		out, err := workflow.Drift(ctx, e, workflow.DriftInput{Pointer: m.Pointer, Expect: expect})
		switch {
		case err != nil:
			l.ErrorName, l.Error = workflow.ErrorName(err), err.Error()
		default:
			l.Healthy = out.Healthy
			rep.Expect = uint64(out.Report.Expected)
			for _, fd := range out.Report.Findings {
				l.Findings = append(l.Findings, string(fd.Kind)+": "+fd.Message)
			}
		}
		if !l.Healthy {
			rep.Unhealthy++
		}
		rep.Pointers = append(rep.Pointers, l)
	}
	if rep.Unhealthy == 0 {
		return rep, nil
	}
	if topic != "" && env.Publish != nil {
		subject := fmt.Sprintf("rocklake-migrate: %d of %d catalogs drifted", rep.Unhealthy, len(rep.Pointers))
		if err := env.Publish(ctx, topic, subject, rep.message()); err != nil {
			return rep, fmt.Errorf("fleet: drift: the alert was not sent: %w", err)
		}
		rep.MessageID = "sent"
	}
	return rep, fmt.Errorf("%w: %d of %d pointers", ErrFleetDrift, rep.Unhealthy, len(rep.Pointers))
}

func (r FleetDriftReport) message() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d catalogs of the fleet need attention (expected format %d):\n", r.Unhealthy, len(r.Pointers), r.Expect)
	for _, l := range r.Pointers {
		if l.Healthy {
			continue
		}
		fmt.Fprintf(&b, "\n%s\n", l.Pointer)
		if l.Error != "" {
			fmt.Fprintf(&b, "  cannot check: %s: %s\n", l.ErrorName, l.Error)
		}
		for _, f := range l.Findings {
			fmt.Fprintf(&b, "  %s\n", f)
		}
	}
	return b.String()
}
