package workflow_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Issue 24, 7: the inplace function has 2048 MB; a limit of 60 MiB needs
// more (inplace.PeakBytes). Check and Plan refuse it before anything is
// touched (InPlaceLimitTooLarge, stating the bytes per byte), with in_place
// and in_place_auto alike; the default limit fits. The InPlace step holds
// the limit to its own memory too, touching nothing and freeing the lock.
func TestInPlaceLimitTheMemoryCannotHoldRefused(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	f.Env.InPlaceMemory = 2048 << 20
	objects := func() string {
		objs, err := f.Stack.Objects(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Join(objs, "\n")
	}
	before := objects()
	for _, in := range []workflow.CheckInput{
		{Pointer: f.Pointer, TargetVersion: 2, InPlace: true, InPlaceMaxBytes: 60 << 20},
		{Pointer: f.Pointer, TargetVersion: 2, InPlaceAuto: true, InPlaceMaxBytes: 60 << 20},
	} {
		_, err := workflow.Check(ctx, f.Env, in)
		if !errors.Is(err, runstate.ErrInPlaceLimitTooLarge) || runstate.ErrorName(err) != runstate.ErrInPlaceLimitTooLarge.ErrorName() ||
			!strings.Contains(err.Error(), "38 bytes per byte") {
			t.Fatalf("Check %+v: err = %v, want InPlaceLimitTooLarge stating the bytes per byte", in, err)
		}
		rep, err := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: in})
		refused := false
		for _, c := range rep.Checks {
			refused = refused || (c.Check == "in-place-limit" && !c.OK && c.ErrorName == runstate.ErrInPlaceLimitTooLarge.ErrorName())
		}
		if !errors.Is(err, runstate.ErrInPlaceLimitTooLarge) || rep.Ready || !refused {
			t.Fatalf("plan %+v: ready %v, checks %+v (%v); want the in-place-limit check failed", in, rep.Ready, rep.Checks, err)
		}
	}
	// Check records a refused run beside the pointer; nothing else changed.
	if after := objects(); strings.ReplaceAll(after, "\n", "") == "" || !sameButHistory(before, after) {
		t.Fatalf("objects before the refusals:\n%s\nafter:\n%s", before, after)
	}
	if max := inplace.MaxBytesFor(2048 << 20); max < inplace.DefaultMaxBytes || max >= 60<<20 {
		t.Fatalf("2048 MB holds a limit of %d bytes: want the default (%d) and less than 60 MiB", max, inplace.DefaultMaxBytes)
	}

	// A run checked where the memory held the limit reaches an InPlace
	// step with less: refused there, nothing touched, the lock freed.
	roomy := f.Env
	roomy.InPlaceMemory = 8 << 30
	m, err := workflow.Check(ctx, roomy, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, InPlaceMaxBytes: 60 << 20, MigrationID: "m-roomy"})
	if err != nil {
		t.Fatalf("Check with 8 GiB: %v", err)
	}
	if _, err := workflow.MigrateInPlace(ctx, f.Env, m); runstate.ErrorName(err) != runstate.ErrInPlaceLimitTooLarge.ErrorName() {
		t.Fatalf("InPlace with 2048 MB: err = %v, want InPlaceLimitTooLarge", err)
	}
	if c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1}); err != nil {
		t.Fatalf("the catalog after the refused step: %v", err)
	} else {
		c.Close()
	}
	if p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer); err != nil || p.FormatVersion != format.V1 {
		t.Fatalf("pointer after the refused step: %+v, %v", p, err)
	}
	// The default limit fits 2048 MB; the refused step freed the lock.
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, DryRun: true}); err != nil {
		t.Fatalf("Check at the default limit with 2048 MB: %v", err)
	}
}

// sameButHistory: after holds what before held, plus run records.
func sameButHistory(before, after string) bool {
	var kept []string
	for _, o := range strings.Split(after, "\n") {
		if !strings.Contains(o, ".history/") {
			kept = append(kept, o)
		}
	}
	return strings.Join(kept, "\n") == before
}

// The Lambdas' environment names the InPlace step's memory: the check
// function's ROCKLAKE_INPLACE_MEMORY_MB (the inplace function's, set by
// infra), else the function's own AWS_LAMBDA_FUNCTION_MEMORY_SIZE.
func TestEnvFromEnvironmentInPlaceMemory(t *testing.T) {
	ctx := t.Context()
	t.Setenv("ROCKLAKE_STAGING", "s3://staging/migrations")
	t.Setenv(runstate.ExpectedVersionParameterEnv, "")
	t.Setenv(runstate.InPlaceMemoryEnv, "")
	t.Setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "2048")
	if _, err := blob.New(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		inplace string
		want    int64
		bad     bool
	}{
		{"", 2048 << 20, false},
		{"3008", 3008 << 20, false},
		{"lots", 0, true},
	} {
		t.Setenv(runstate.InPlaceMemoryEnv, c.inplace)
		env, err := runstate.EnvFromEnvironment(ctx)
		if (err != nil) != c.bad || env.InPlaceMemory != c.want {
			t.Fatalf("%s=%q: memory %d (%v), want %d (error %v)", runstate.InPlaceMemoryEnv, c.inplace, env.InPlaceMemory, err, c.want, c.bad)
		}
	}
}
