package integration

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// fleetPointers are the fleet's members under its prefix, in the order
// discovery sorts them: three catalogs of the suite's case seed, and one in
// format 99, last, so that with one pointer at a time it fails when no
// other is running (a Map Run stops the children still running when it
// fails; pkg/asl lets them end; aws-local-stepfunctions aborts them).
var fleetPointers = []string{"a", "b", "c", "z99"}

// fleetStopped is what the record says stopped the run, by engine: under
// pkg/asl the failing pointer is the last, counted, and nothing was left
// to start; aws-local-stepfunctions has no tolerated failures, so its Map
// fails at that item and the definition's Catch says so.
var fleetStopped = map[string]string{"fleet-asl": "", "fleet-lsf": "the fleet's Map failed: no more pointers were started"}

// fleetAndCheck runs a fleet migration (statemachine/fleet.asl.json)
// through the engine: FleetList and FleetReport on the check function,
// the canary and the Distributed Map's items as child executions of the
// migration definition, whose steps run on the Lambdas. It checks the
// fleet run's record (each pointer migrated to a v2 catalog with its
// source's counts, the format-99 one refused by its error name, the run
// stopped at its failure limit), the pointers and catalogs themselves, the
// notices (one summary, each child's own), then the fleet's drift check
// (drift.asl.json with {"sources"}, the FleetDrift step), then the fleet
// rollback (each pointer's rollback a child execution of the rollback
// definition). It returns the migrated catalogs' state, the same for every
// member and engine.
func (h *Harness) fleetAndCheck(t *testing.T, ctx context.Context, name string, run engine) CatalogState {
	t.Helper()
	prefix := "s3://rocklake/" + name + "/"
	fx := map[string]fixture{}
	for _, p := range fleetPointers {
		fx[p] = h.seed(t, ctx, name+"/"+p, caseRows, seedN)
	}
	setVersion(t, ctx, fx["z99"].Source, 99)
	// Not a pointer: discovery reads it and ignores it.
	if _, err := h.Store.Put(ctx, prefix+"README", []byte("the tenants' catalogs\n")); err != nil {
		t.Fatal(err)
	}
	src := catalogState(t, ctx, fx["a"].Source, format.V1)
	refused := h.snapshot(t, ctx, fx["z99"])
	sentBefore := len(h.messages(t, h.Topic))

	in := fleet.Request{Sources: []string{prefix}, Action: fleet.ActionMigrate, TargetVersion: format.V2,
		Canary: 1, Concurrency: 1, MaxFailures: 1, Trigger: "integration:" + name,
		Child: map[string]any{"shards": 2, "online": false, "freeze_grace": 0}}
	start := time.Now()
	o := run(t, ctx, statemachine.Fleet, in)
	t.Logf("%s: %s in %s", name, o, time.Since(start).Round(time.Millisecond))
	// Done? → PointersFailed: a pointer did not get there, and the notice
	// went out.
	if o.Status != "FAILED" || o.Error != "PointersFailed" || !strings.Contains(o.Cause, "3 migrated, 1 refused") {
		t.Fatalf("fleet run: %s, want PointersFailed (3 migrated, 1 refused)", o)
	}

	rec, err := fleet.FindRun(ctx, h.Store, prefix, "", "")
	if err != nil {
		t.Fatalf("the fleet run's record: %v", err)
	}
	if rec.Ended.IsZero() || rec.Trigger != in.Trigger || rec.Concurrency != 1 || rec.Canary != 1 || rec.MaxFailures != 1 || rec.Ignored < 1 ||
		rec.Stopped != fleetStopped[name] ||
		!maps.Equal(rec.Totals, fleet.Totals{fleet.Migrated: 3, fleet.Refused: 1}) || len(rec.Lines) != len(fleetPointers) {
		t.Fatalf("record %+v", rec)
	}
	var migrated CatalogState
	for i, l := range rec.Lines {
		f := fx[fleetPointers[i]]
		if l.Pointer != f.Pointer || l.Canary != (i == 0) || l.RunID == "" || l.Before != f.Source {
			t.Errorf("line %d: %+v, want %s (canary: %v)", i, l, f.Pointer, i == 0)
		}
		// Each pointer's own run record names the fleet run that started it.
		entries, err := history.List(ctx, h.Store, f.Pointer, 0)
		if err != nil || len(entries) != 1 || entries[0].Trigger != fleet.Trigger(rec.ID) || entries[0].ID != l.RunID {
			t.Errorf("%s: run records %+v (%v), want one started by fleet:%s", f.Pointer, entries, err, rec.ID)
		}
		if fleetPointers[i] == "z99" {
			if l.State != fleet.Refused || l.ErrorName != "FormatVersionMismatch" || !strings.Contains(l.Error, "99") {
				t.Errorf("the format-99 pointer: %+v, want refused, FormatVersionMismatch", l)
			}
			if after := h.snapshot(t, ctx, f); after != refused {
				t.Errorf("the refused pointer or its catalog changed: %+v, was %+v", after, refused)
			}
			continue
		}
		p, _, err := pointer.Read(ctx, h.Store, f.Pointer)
		if err != nil || l.State != fleet.Migrated || p.FormatVersion != format.V2 || p.Catalog != l.After || p.Catalog == f.Source {
			t.Fatalf("%s: line %+v, pointer %+v (%v), want migrated to a v2 catalog", f.Pointer, l, p, err)
		}
		got := catalogState(t, ctx, p.Catalog, format.V2)
		if !maps.Equal(got.Counts, src.Counts) {
			t.Fatalf("%s: counts %v, source %v", f.Pointer, got.Counts, src.Counts)
		}
		if i > 0 {
			sameState(t, f.Pointer, got, fx["a"].Pointer, migrated)
		}
		migrated = got
	}

	// One summary for the fleet run, naming the pointer that did not get
	// there by its error; each child's own notice.
	var summaries, succeeded, failed int
	for _, m := range h.messages(t, h.Topic)[sentBefore:] {
		switch {
		case strings.HasPrefix(m.Subject, "rocklake-migrate: fleet migrate "+rec.ID):
			summaries++
			// Its line for the refused pointer names the error; no other
			// pointer's says it did not get there.
			named := false
			for _, line := range strings.Split(m.Body, "\n") {
				switch {
				case strings.HasPrefix(line, fx["z99"].Pointer+": refused") && strings.Contains(line, ": FormatVersionMismatch:"):
					named = true
				case strings.HasPrefix(line, "s3://") && (strings.Contains(line, ": refused") || strings.Contains(line, ": failed")):
					t.Errorf("the summary's line %q", line)
				}
			}
			if !named {
				t.Errorf("the summary does not name the refused pointer by its error: %q", m.Body)
			}
		case m.Subject == "rocklake-migrate: migration succeeded":
			succeeded++
		case m.Subject == "rocklake-migrate: migration failed" && strings.Contains(m.Body, "FormatVersionMismatch"):
			failed++
		default:
			t.Errorf("unexpected message %q: %.300s", m.Subject, m.Body)
		}
	}
	if summaries != 1 || succeeded != 3 || failed != 1 {
		t.Errorf("messages: %d summaries, %d successes, %d failures; want 1, 3, 1", summaries, succeeded, failed)
	}

	// The fleet's drift check: the three at v2 are healthy, the one whose
	// catalog is in format 99 behind a v1 pointer drifted; one alert.
	topic := h.SNS.CreateTopic(t, "rocklake-drift-"+name)
	o = run(t, ctx, statemachine.Drift, workflow.FleetDriftInput{Sources: []string{prefix}, Expect: 2, Topic: topic})
	if o.Status != "FAILED" || o.Error != "DriftFound" {
		t.Fatalf("the fleet's drift check: %s, want DriftFound", o)
	}
	msgs := h.messages(t, topic)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Subject, "1 of 4 catalogs drifted") || !strings.Contains(msgs[0].Body, fx["z99"].Pointer) ||
		strings.Contains(msgs[0].Body, fx["a"].Pointer+"\n") {
		t.Fatalf("drift alerts %+v, want one naming %s only", msgs, fx["z99"].Pointer)
	}

	// The fleet rollback: the run that migrated them undone, each pointer's
	// rollback (rollback.asl.json) a child execution, two at a time.
	sentBefore = len(h.messages(t, h.Topic))
	o = run(t, ctx, statemachine.Fleet, fleet.Request{Sources: []string{prefix}, Action: fleet.ActionRollback, Canary: 1, Concurrency: 2, Trigger: "integration:" + name})
	if o.Status != "SUCCEEDED" {
		t.Fatalf("fleet rollback: %s", o)
	}
	rb, err := fleet.FindRun(ctx, h.Store, prefix, "", fleet.ActionRollback)
	if err != nil || rb.RollbackOf != rec.ID || !maps.Equal(rb.Totals, fleet.Totals{fleet.RolledBack: 3}) {
		t.Fatalf("the rollback's record %+v (%v), want 3 rolled back of %s", rb, err, rec.ID)
	}
	for _, n := range fleetPointers[:3] {
		if p, _, err := pointer.Read(ctx, h.Store, fx[n].Pointer); err != nil || p.Catalog != fx[n].Source || p.FormatVersion != format.V1 {
			t.Errorf("%s after the fleet rollback: %+v (%v), want %s as v1", fx[n].Pointer, p, err, fx[n].Source)
		}
	}
	var rolled, rbSummaries int
	for _, m := range h.messages(t, h.Topic)[sentBefore:] {
		switch {
		case m.Subject == "rocklake-migrate: rollback done":
			rolled++
		case strings.HasPrefix(m.Subject, "rocklake-migrate: fleet rollback "+rb.ID):
			rbSummaries++
		default:
			t.Errorf("unexpected message %q: %.300s", m.Subject, m.Body)
		}
	}
	if rolled != 3 || rbSummaries != 1 {
		t.Errorf("messages: %d rollbacks done, %d summaries; want 3, 1", rolled, rbSummaries)
	}
	return migrated
}
