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

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// The definition's in-place branch: over the limit it fails with
// InPlaceTooLarge, having written nothing, the lock freed; under it the
// catalog is migrated where it lies, the pointer names it in format 2, and
// states of Strategy B (Freeze, the Shards map) never run.
func TestDefinitionInPlaceBranch(t *testing.T) {
	ctx, f := seeded.Setup(t, 1000)
	var states []string
	onExit := func(ev asl.StateEvent) { states = append(states, ev.Name) }

	_, pub, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, InPlaceMaxBytes: 2000}, nil)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != inplace.ErrTooLarge.ErrorName() {
		t.Fatalf("over the limit: err = %v, want InPlaceTooLarge", err)
	}
	if len(pub.Subjects) != 1 || pub.Subjects[0] != "rocklake-migrate: migration failed" {
		t.Fatalf("notifications = %v", pub.Subjects)
	}
	if c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1}); err != nil {
		t.Fatalf("the source after the refusal: %v", err)
	} else {
		c.Close()
	}
	// The way back's claim, made before the refusal, was withdrawn.
	if left, err := f.Env.Store.List(ctx, layout.ClaimsDir(f.Pointer)); err != nil || len(left) != 0 {
		t.Fatalf("claims after the refusal: %v, %v", left, err)
	}

	out, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true}, onExit)
	if err != nil {
		t.Fatalf("in place (the lock of the refused run must be free): %v", err)
	}
	var state struct {
		Verify workflow.InPlaceOutput `json:"verify"`
	}
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatal(err)
	}
	p, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != f.Source || p.FormatVersion != format.V2 || ref.VersionID != state.Verify.PointerVersionID || state.Verify.InPlace.Records == 0 {
		t.Fatalf("pointer = %+v (%+v), run said %+v", p, ref, state.Verify)
	}
	for _, s := range states {
		if s == "Freeze" || s == "Shards" || s == "Import" {
			t.Fatalf("the in-place run went through %s: %v", s, states)
		}
	}
	if c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the catalog after the in-place run: %v", err)
	} else {
		c.Close()
	}
}

// A pointer moved by someone else between Check and the in-place step: the
// batch lands, the pointer write fails with PointerConflict, and the catalog
// is restored at once from its way back (format 1, as the pointer says), the
// way back deleted, the lock freed.
func TestInPlacePointerConflictUndoes(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, MigrationID: "m-conflict"})
	if err != nil {
		t.Fatal(err)
	}
	seeded.MovePointer(t, ctx, f, "someone-else")
	_, err = workflow.MigrateInPlace(ctx, f.Env, m)
	if !errors.Is(err, pointer.ErrPointerConflict) || !strings.Contains(err.Error(), "restored to format v1") {
		t.Fatalf("in place with a moved pointer: err = %v, want PointerConflict and the catalog restored", err)
	}
	if left, err := f.Env.Store.List(ctx, strings.TrimSuffix(f.Source, "prod")+"v1-m-conflict/"); err != nil || len(left) != 0 {
		t.Fatalf("the way back after the undo: %d objects (%v), want it deleted", len(left), err)
	}
	c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatalf("the catalog after the conflict: %v", err)
	}
	c.Close()
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, DryRun: true}); err != nil {
		t.Fatalf("the lock after the conflict: %v", err)
	}
}

// in_place_auto: Check measures the catalog (read-only) and takes the
// in-place branch when its transformed keys and values fit the limit, the
// export/import one when they do not; either way the run ends with the
// pointer on a format-2 catalog.
func TestDefinitionInPlaceAuto(t *testing.T) {
	for _, c := range []struct {
		name     string
		maxBytes int64
		inPlace  bool
	}{
		{"fits", 0, true},
		{"too large", 2000, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, f := seeded.Setup(t, 1000)
			var (
				mu     sync.Mutex // the Map's items exit on goroutines of their own
				states []string
			)
			onExit := func(ev asl.StateEvent) {
				mu.Lock()
				defer mu.Unlock()
				states = append(states, ev.Name)
			}
			in := workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlaceAuto: true, InPlaceMaxBytes: c.maxBytes, Shards: 2}
			rep, err := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: in})
			if err != nil || (rep.Target == f.Source) != c.inPlace {
				t.Fatalf("preflight: target %s (%v), want in place %v; checks %+v", rep.Target, err, c.inPlace, rep.Checks)
			}
			if _, _, err := runDefinition(t, ctx, f, in, onExit); err != nil {
				t.Fatalf("run: %v", err)
			}
			p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
			if err != nil || p.FormatVersion != format.V2 || (p.Catalog == f.Source) != c.inPlace {
				t.Fatalf("pointer = %+v (%v), want format 2, in place %v", p, err, c.inPlace)
			}
			went := strings.Join(states, " ")
			if strings.Contains(went, "InPlace") != c.inPlace || strings.Contains(went, "Freeze") == c.inPlace {
				t.Fatalf("states %s, want in place %v", went, c.inPlace)
			}
		})
	}
}

// Issue 24: the in-place step keeps a margin before its deadline (a Lambda
// dies at it), as Import does: given no more time than the margin it refuses
// before touching anything (InPlaceNoTime: no way back, no claim, the
// catalog as it was, the lock freed, the run recorded failed); given more,
// it migrates.
func TestInPlaceKeepsAMarginBeforeItsDeadline(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, MigrationID: "m-short"})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	env := f.Env
	env.InPlaceMargin = time.Minute
	_, err = workflow.MigrateInPlace(short, env, m)
	if !errors.Is(err, workflow.ErrInPlaceNoTime) || runstate.ErrorName(err) != workflow.ErrInPlaceNoTime.ErrorName() {
		t.Fatalf("in place with 30 s left: %v, want InPlaceNoTime", err)
	}
	c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatalf("the catalog after the refusal: %v", err)
	}
	c.Close()
	for _, prefix := range []string{strings.TrimSuffix(f.Source, "prod") + "v1-m-short/", layout.ClaimsDir(f.Pointer)} {
		if left, err := f.Env.Store.List(ctx, prefix); err != nil || len(left) != 0 {
			t.Fatalf("%s after the refusal: %d objects (%v)", prefix, len(left), err)
		}
	}
	if _, rec, err := history.Find(ctx, f.Env.Store, f.Pointer, "m-short"); err != nil || rec.Outcome != history.Failed || rec.ErrorName != workflow.ErrInPlaceNoTime.ErrorName() {
		t.Fatalf("the refused run's record: %+v, %v", rec, err)
	}

	env.InPlaceMargin = time.Second
	m, err = workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, MigrationID: "m-enough"})
	if err != nil {
		t.Fatalf("check after the refusal (the lock must be free): %v", err)
	}
	enough, cancel2 := context.WithTimeout(ctx, time.Minute)
	defer cancel2()
	if _, err := workflow.MigrateInPlace(enough, env, m); err != nil {
		t.Fatalf("in place with a minute left and a second's margin: %v", err)
	}
	if cl, err := claim.Read(ctx, env.Store, f.Pointer, "m-enough"); err != nil || cl.Kind != claim.KindWayBack || cl.Named == nil {
		t.Fatalf("the way back's claim after the flip: %+v, %v", cl, err)
	}
}
