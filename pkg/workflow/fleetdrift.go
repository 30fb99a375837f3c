package workflow

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
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

// FleetDriftLine is one pointer's drift check.
type FleetDriftLine struct {
	Pointer string `json:"pointer"`
	Healthy bool   `json:"healthy"`
	// Findings are the drift check's, one line each.
	Findings  []string `json:"findings,omitempty"`
	ErrorName string   `json:"error_name,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// FleetDriftReport is the fleet's drift check: every pointer on its own
// line, and the one alert sent for all of them. Healthy is what
// drift.asl.json's Healthy state reads, as for one pointer.
type FleetDriftReport struct {
	Expect    uint64           `json:"expect"`
	Healthy   bool             `json:"healthy"`
	Pointers  []FleetDriftLine `json:"pointers"`
	Unhealthy int              `json:"unhealthy"`
	Ignored   int              `json:"ignored"`
	MessageID string           `json:"message_id,omitempty"`
}

// fleetDriftConcurrency is how many pointers the fleet's drift check looks
// at once: each check is a few small S3 reads, so a fleet of hundreds fits
// the check Lambda's time only when they overlap.
const fleetDriftConcurrency = 8

// fleetDriftMargin is how long before its context's deadline the check
// starts no more pointers, so that the step still returns its report (and
// sends its alert) instead of timing out with nothing.
const fleetDriftMargin = 20 * time.Second

// FleetDrift runs the drift check (Drift: the expected version, from SSM
// when Expect is 0, and leftovers) on every pointer of the fleet, each in
// env's staging (a fleet's runs share one), and sends one alert to Topic
// listing every pointer that drifted or could not be checked. Findings are
// the report, not an error, as Drift's are: the error says the check could
// not look at all (no pointer found, the alert not sent).
func FleetDrift(ctx context.Context, env Env, in FleetDriftInput) (FleetDriftReport, error) {
	f, err := fleet.Discover(ctx, env.Store, in.Sources)
	if err != nil {
		return FleetDriftReport{}, err
	}
	rep := FleetDriftReport{Expect: in.Expect, Ignored: f.Ignored, Pointers: make([]FleetDriftLine, len(f.Members))}
	deadline, hasDeadline := ctx.Deadline()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sem := make(chan struct{}, fleetDriftConcurrency)
	for i, m := range f.Members {
		rep.Pointers[i] = FleetDriftLine{Pointer: m.Pointer}
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		if ctx.Err() != nil || hasDeadline && time.Until(deadline) < fleetDriftMargin {
			if acquired {
				<-sem
			}
			rep.Pointers[i].ErrorName, rep.Pointers[i].Error = errname.Of(ErrDriftNoTime), ErrDriftNoTime.Error()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			l := &rep.Pointers[i]
			out, err := Drift(ctx, env, DriftInput{Pointer: m.Pointer, Expect: in.Expect})
			if err != nil {
				l.ErrorName, l.Error = ErrorName(err), err.Error()
				return
			}
			l.Healthy = out.Healthy
			for _, fd := range out.Report.Findings {
				l.Findings = append(l.Findings, string(fd.Kind)+": "+fd.Message)
			}
			mu.Lock()
			rep.Expect = uint64(out.Report.Expected)
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, l := range rep.Pointers {
		if !l.Healthy {
			rep.Unhealthy++
		}
	}
	rep.Healthy = rep.Unhealthy == 0
	if rep.Healthy || in.Topic == "" {
		return rep, nil
	}
	publish := env.Publish
	if publish == nil {
		if publish, err = SNSPublish(ctx); err != nil {
			return rep, fmt.Errorf("workflow: fleet drift: the alert was not sent: %w", err)
		}
	}
	subject := fmt.Sprintf("rocklake-migrate: %d of %d catalogs drifted", rep.Unhealthy, len(rep.Pointers))
	// The alert goes out even when the step's time is nearly up: it is the
	// point of the check.
	if err := publish(context.WithoutCancel(ctx), in.Topic, subject, rep.Message()); err != nil {
		return rep, fmt.Errorf("workflow: fleet drift: the alert was not sent: %w", err)
	}
	rep.MessageID = "sent"
	return rep, nil
}

// Message is the alert: every pointer that needs attention, with what was
// found or why it could not be checked.
func (r FleetDriftReport) Message() string {
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
