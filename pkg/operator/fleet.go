package operator

import (
	"context"
	"fmt"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// FleetPlanLine is one pointer's plan.
type FleetPlanLine struct {
	Pointer        string         `json:"pointer"`
	Catalog        string         `json:"catalog,omitempty"`
	Format         format.Version `json:"format_version,omitempty"`
	NeedsMigration bool           `json:"needs_migration"`
	Ready          bool           `json:"ready"`
	StoredBytes    int64          `json:"stored_bytes,omitempty"`
	Keys           int64          `json:"keys,omitempty"`
	// Seconds is the estimate of its run (pkg/estimate), WriteFreeze its
	// write freeze, USD its cost on AWS.
	Seconds     float64 `json:"seconds,omitempty"`
	WriteFreeze float64 `json:"write_freeze_seconds,omitempty"`
	USD         float64 `json:"usd,omitempty"`
	ErrorName   string  `json:"error_name,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// FleetPlan is the fleet's plan: every pointer, and the fleet run's time at
// the concurrency asked (the canary one at a time, then the rest).
type FleetPlan struct {
	To          format.Version  `json:"to"`
	Concurrency int             `json:"concurrency"`
	Canary      int             `json:"canary"`
	Pointers    []FleetPlanLine `json:"pointers"`
	Ignored     int             `json:"ignored"`
	ToMigrate   int             `json:"to_migrate"`
	Refused     int             `json:"refused"`
	// Seconds is the fleet run's estimate; USD the sum of the runs'.
	Seconds float64 `json:"seconds"`
	USD     float64 `json:"usd"`
}

// PlanFleet runs plan (operator.Plan: every check, read-only, and the
// catalog measured) on every pointer of the fleet and schedules the runs
// the fleet run would make.
func PlanFleet(ctx context.Context, env runstate.Env, sources []string, to format.Version, concurrency, canary, shards int) (FleetPlan, error) {
	f, err := fleet.Discover(ctx, env.Store, sources)
	if err != nil {
		return FleetPlan{}, err
	}
	p := FleetPlan{To: to, Concurrency: max(concurrency, 1), Canary: canary, Ignored: f.Ignored}
	var runs []float64
	for _, m := range f.Members {
		e := env
		l := FleetPlanLine{Pointer: m.Pointer, Catalog: m.Catalog, Format: m.Format}
		rep, err := Plan(ctx, e, PlanInput{CheckInput: workflow.CheckInput{Pointer: m.Pointer, TargetVersion: uint64(to), Shards: shards}})
		l.NeedsMigration, l.Ready = rep.NeedsMigration, rep.Ready
		if err != nil {
			l.ErrorName, l.Error = runstate.ErrorName(err), err.Error()
			p.Refused++
		}
		if c := rep.Catalog; c != nil {
			l.StoredBytes = c.StoredBytes
			l.Keys = int64(c.Keys)
		}
		if est := rep.Estimate; est != nil {
			l.Seconds, l.WriteFreeze, l.USD = est.TotalSeconds, est.WriteFreezeSeconds, est.TotalUSD
		}
		if err == nil && l.NeedsMigration {
			p.ToMigrate++
			runs = append(runs, l.Seconds)
			p.USD += l.USD
		}
		p.Pointers = append(p.Pointers, l)
	}
	p.Seconds = Schedule(runs, p.Concurrency, canary)
	return p, nil
}

// Schedule is the wall time of runs of these durations (in the fleet
// run's order) when the first canary run one at a time and the rest at
// most concurrency at once, each taken by the first free slot.
func Schedule(runs []float64, concurrency, canary int) float64 {
	total := 0.0
	canary = min(canary, len(runs))
	for _, s := range runs[:canary] {
		total += s
	}
	slots := make([]float64, max(concurrency, 1))
	for _, s := range runs[canary:] {
		sort.Float64s(slots)
		slots[0] += s
	}
	sort.Float64s(slots)
	return total + slots[len(slots)-1]
}

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
