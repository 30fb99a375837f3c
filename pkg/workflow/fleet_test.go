package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"
	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// A fleet run whose pointers did not all get there and whose summary
// cannot be published ends in FailedUnreported (the stack's alarm counts
// it: nobody was told), with the run's own error, PointersFailed; one whose
// summary went out ends in PointersFailed.
func TestFleetNoticeUnpublishedEndsInFailedUnreported(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	const prefix = "s3://rocklake/t/"
	for name, cat := range map[string]string{"a": f.Source, "gone": "s3://rocklake/catalogs/gone"} {
		if _, err := pointer.Create(ctx, f.Env.Store, prefix+name+"/CURRENT", pointer.Pointer{Catalog: cat, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := localrun.LoadDefinition(statemachine.Fleet, "arn:aws:sns:us-east-1:000000000000:rocklake")
	if err != nil {
		t.Fatal(err)
	}
	run := func(publish func(context.Context, string, string, string) error) (map[string]bool, error) {
		var mu sync.Mutex
		entered := map[string]bool{}
		in, _ := json.Marshal(fleet.Request{Sources: []string{prefix}, TargetVersion: format.V2, Concurrency: 1,
			Child: map[string]any{"shards": 1, "online": false, "freeze_grace": 0}})
		_, err := asl.Run(ctx, m, in, asl.Options{Tasks: localrun.Tasks(f.Env, publish),
			Sleep: func(context.Context, time.Duration) error { return nil },
			Observer: asl.ObserverFuncs{Entered: func(e asl.StateEvent) {
				if e.MapIndex == nil {
					mu.Lock()
					entered[e.Name] = true
					mu.Unlock()
				}
			}}})
		return entered, err
	}
	down := func(context.Context, string, string, string) error { return errors.New("SNS is down") }
	entered, err := run(down)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != "PointersFailed" || !entered["FailedUnreported"] || entered["PointersFailed"] {
		t.Fatalf("summary unpublished: %v, states %v; want PointersFailed from FailedUnreported", err, entered)
	}
	pub := &seeded.Published{}
	entered, err = run(pub.Publish)
	if !errors.As(err, &ee) || ee.Name != "PointersFailed" || entered["FailedUnreported"] || !entered["PointersFailed"] || len(pub.Subjects) == 0 {
		t.Fatalf("summary published: %v, states %v, %d messages; want PointersFailed", err, entered, len(pub.Subjects))
	}
}

// The drift definition with {"sources"} checks the fleet (the FleetDrift
// step): healthy when every pointer is at the expected version; otherwise
// DriftFound after one message naming each pointer that drifted and no
// other.
func TestFleetDriftDefinition(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	const prefix = "s3://rocklake/tenants/"
	for _, name := range []string{"a", "b"} {
		cat := prefix + name + "/catalogs/prod"
		if _, err := seed.Seed(ctx, cat, seed.Options{Rows: 30, Seed: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := pointer.Create(ctx, f.Env.Store, prefix+name+"/CURRENT", pointer.Pointer{Catalog: cat, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := localrun.LoadDefinition(statemachine.Drift, "")
	if err != nil {
		t.Fatal(err)
	}
	run := func(expect uint64) (*seeded.Published, error) {
		pub := &seeded.Published{}
		in, _ := json.Marshal(workflow.FleetDriftInput{Sources: []string{prefix}, Expect: expect, Topic: "arn:aws:sns:us-east-1:000000000000:alerts"})
		_, err := asl.Run(ctx, m, in, asl.Options{Tasks: localrun.Tasks(f.Env, pub.Publish)})
		return pub, err
	}
	pub, err := run(1)
	if err != nil || len(pub.Bodies) != 0 {
		t.Fatalf("a fleet at v1, expected v1: %v, %d messages", err, len(pub.Bodies))
	}
	// A third pointer names a catalog that is not there: it drifts, a and
	// b do not.
	if _, err := pointer.Create(ctx, f.Env.Store, prefix+"c/CURRENT", pointer.Pointer{Catalog: prefix + "c/catalogs/gone", FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	pub, err = run(1)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != "DriftFound" {
		t.Fatalf("one pointer drifted: %v, want DriftFound", err)
	}
	if len(pub.Bodies) != 1 || !strings.Contains(pub.Subjects[0], "1 of 3 catalogs drifted") || !strings.Contains(pub.Bodies[0], prefix+"c/CURRENT") ||
		!strings.Contains(pub.Bodies[0], "DanglingPointer") || strings.Contains(pub.Bodies[0], prefix+"a/CURRENT") || strings.Contains(pub.Bodies[0], prefix+"b/CURRENT") {
		t.Fatalf("alerts %q %q, want one naming c only", pub.Subjects, pub.Bodies)
	}
	// The pointer drift check the schedule ran before is unchanged.
	if _, err := asl.Run(ctx, m, json.RawMessage(`{"pointer":"`+f.Pointer+`","expect":1}`), asl.Options{Tasks: localrun.Tasks(f.Env, nil)}); err != nil {
		t.Fatalf("one pointer's drift check: %v", err)
	}
}

// With too little of its Lambda's time left, the fleet's drift check
// starts no pointer's check and reports each as not checked (Transient),
// rather than time out with no report and no alert.
func TestFleetDriftKeepsTimeForItsReport(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	pub := &seeded.Published{}
	env := f.Env
	env.Publish = pub.Publish
	start := time.Now()
	rep, err := workflow.FleetDrift(short, env, workflow.FleetDriftInput{Sources: []string{"s3://rocklake/"}, Expect: 1, Topic: "t"})
	if err != nil {
		t.Fatalf("FleetDrift: %v", err)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %s with no time to check anything", time.Since(start))
	}
	if rep.Healthy || rep.Unhealthy != 1 || len(rep.Pointers) != 1 || rep.Pointers[0].ErrorName != errname.Transient || !strings.Contains(rep.Pointers[0].Error, "ran out of time") {
		t.Fatalf("report %+v", rep)
	}
	if len(pub.Bodies) != 1 || !strings.Contains(pub.Bodies[0], "cannot check: Transient") {
		t.Fatalf("alerts %q", pub.Bodies)
	}
}
