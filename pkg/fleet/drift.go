package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// DriftLine is one pointer's drift check.
type DriftLine struct {
	Pointer string `json:"pointer"`
	Healthy bool   `json:"healthy"`
	// Findings are the drift check's, one line each.
	Findings  []string `json:"findings,omitempty"`
	ErrorName string   `json:"error_name,omitempty"`
	Error     string   `json:"error,omitempty"`
}

// DriftReport is the fleet's drift check: every pointer on its own line,
// and the one alert sent for all of them. Healthy is what drift.asl.json's
// Healthy state reads, as for one pointer.
type DriftReport struct {
	Expect    uint64      `json:"expect"`
	Healthy   bool        `json:"healthy"`
	Pointers  []DriftLine `json:"pointers"`
	Unhealthy int         `json:"unhealthy"`
	Ignored   int         `json:"ignored"`
	MessageID string      `json:"message_id,omitempty"`
}

// DriftCheck checks one pointer: its line (Healthy and Findings, or the
// error that kept it from looking), and the format version it held the
// pointer against (0 when it could not look).
type DriftCheck func(ctx context.Context, pointerURL string) (DriftLine, uint64)

// driftConcurrency is how many pointers the fleet's drift check looks at
// at once: each check is a few small S3 reads, so a fleet of hundreds fits
// the check Lambda's time only when they overlap.
const driftConcurrency = 8

// driftMargin is how long before its context's deadline the check starts
// no more pointers, so that the step still returns its report (and sends
// its alert) instead of timing out with nothing.
const driftMargin = 20 * time.Second

// CheckDrift runs check on every member of f, driftConcurrency at a time;
// a member it had no time left for is ErrDriftNoTime on its line. expect
// is the version the report names until a check says which it held
// against.
func CheckDrift(ctx context.Context, f Fleet, expect uint64, check DriftCheck) DriftReport {
	rep := DriftReport{Expect: expect, Ignored: f.Ignored, Pointers: make([]DriftLine, len(f.Members))}
	deadline, hasDeadline := ctx.Deadline()
	var wg sync.WaitGroup
	var mu sync.Mutex
	sem := make(chan struct{}, driftConcurrency)
	for i, m := range f.Members {
		rep.Pointers[i] = DriftLine{Pointer: m.Pointer}
		acquired := false
		select {
		case sem <- struct{}{}:
			acquired = true
		case <-ctx.Done():
		}
		if ctx.Err() != nil || hasDeadline && time.Until(deadline) < driftMargin {
			if acquired {
				<-sem
			}
			rep.Pointers[i].ErrorName, rep.Pointers[i].Error = errname.Of(ErrDriftNoTime), ErrDriftNoTime.Error()
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			l, held := check(ctx, m.Pointer)
			l.Pointer = m.Pointer
			rep.Pointers[i] = l
			if held != 0 {
				mu.Lock()
				rep.Expect = held
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, l := range rep.Pointers {
		if !l.Healthy {
			rep.Unhealthy++
		}
	}
	rep.Healthy = rep.Unhealthy == 0
	return rep
}

// Subject is the alert's subject.
func (r DriftReport) Subject() string {
	return fmt.Sprintf("rocklake-migrate: %d of %d catalogs drifted", r.Unhealthy, len(r.Pointers))
}

// Message is the alert: every pointer that needs attention, with what was
// found or why it could not be checked.
func (r DriftReport) Message() string {
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
