package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// objects lists every object version and delete marker in every bucket.
func objects(t *testing.T, ctx context.Context, f seeded.Fixture) []string {
	t.Helper()
	got, err := f.Stack.Objects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// preflightWritesNothing runs Preflight and fails the test if any bucket
// changed: an object, a version or a delete marker written or removed.
func preflightWritesNothing(t *testing.T, ctx context.Context, f seeded.Fixture, env runstate.Env, in operator.PlanInput) (operator.PlanReport, error) {
	t.Helper()
	before := objects(t, ctx, f)
	rep, err := operator.Plan(ctx, env, in)
	if after := objects(t, ctx, f); !slices.Equal(before, after) {
		t.Fatalf("Preflight wrote:\nbefore %v\nafter  %v", before, after)
	}
	return rep, err
}

func finding(rep operator.PlanReport, check string) workflow.Finding {
	for _, f := range rep.Checks {
		if f.Check == check {
			return f
		}
	}
	return workflow.Finding{Check: check, Detail: "(not checked)"}
}

// A plan of a migration that would run: every check passes, the shards are
// balanced by bytes, the estimates are there, and no bucket changed (every
// object version compared), the source's SlateDB objects included.
func TestPreflightWritesNothing(t *testing.T) {
	ctx, f := seeded.Setup(t, 3000)
	if err := f.Stack.CreateBucket(ctx, "plain", false); err != nil {
		t.Fatal(err)
	}
	rep, err := preflightWritesNothing(t, ctx, f, f.Env, operator.PlanInput{
		CheckInput: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 6}, Concurrency: 2})
	if err != nil || !rep.Ready {
		t.Fatalf("plan: %v\n%+v", err, rep.Checks)
	}
	for _, c := range []string{"credentials", "pointer", "pointer-versioning", "source", "target-version", "unknown-tags", "target", "staging", "lock"} {
		if fd := finding(rep, c); !fd.OK {
			t.Errorf("check %s: %+v", c, fd)
		}
	}
	if rep.From != format.V1 || rep.Source != f.Source || !strings.HasSuffix(rep.Target, "/v2-"+rep.MigrationID) {
		t.Fatalf("plan: %+v", rep)
	}
	if rep.Catalog == nil || rep.Catalog.Keys < 3000 || rep.Catalog.StoredBytes == 0 || len(rep.Shards) != 6 {
		t.Fatalf("measured %+v, %d shards", rep.Catalog, len(rep.Shards))
	}
	if rep.Imbalance > 1.1 || rep.Imbalance < 1 {
		t.Fatalf("shards by bytes: largest %.2f× the mean", rep.Imbalance)
	}
	// A catalog this small has too few SST blocks for 6 shards: Freeze
	// would scan, and the plan says why.
	if rep.Balance == "blocks" && (rep.BlockImbalance < 1 || rep.BlockImbalance > 1.2) || rep.Balance != "blocks" && !strings.HasPrefix(rep.Balance, "bytes (blocks unusable: ") {
		t.Fatalf("balance %q, block plan's imbalance %.2f", rep.Balance, rep.BlockImbalance)
	}
	e := rep.Estimate
	if e == nil || e.TotalSeconds <= 0 || e.Lambda.GBSeconds <= 0 || e.StepFunctions.Transitions < 6*2 || e.TotalUSD <= 0 {
		t.Fatalf("estimate: %+v", e)
	}
	// The plan's run is the run migrate makes: the same id gets the same target.
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 6, MigrationID: rep.MigrationID})
	if err != nil || m.Target != rep.Target {
		t.Fatalf("check after the plan: %+v, %v", m, err)
	}
	// With a migration in progress, the plan says so by name and still
	// writes nothing.
	rep, err = preflightWritesNothing(t, ctx, f, f.Env, operator.PlanInput{CheckInput: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2}})
	if runstate.ErrorName(err) != "MigrationInProgress" || rep.Ready || finding(rep, "lock").ErrorName != "MigrationInProgress" {
		t.Fatalf("plan during a migration: %v, %+v", err, finding(rep, "lock"))
	}
}

// A plan names each problem that would stop migrate, with its stable name,
// and goes on past one to find the others; it writes nothing either way.
func TestPreflightNamesProblems(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	if err := f.Stack.CreateBucket(ctx, "plain", false); err != nil {
		t.Fatal(err)
	}
	plan := func(env runstate.Env, in workflow.CheckInput) (operator.PlanReport, error) {
		t.Helper()
		in.TargetVersion = max(in.TargetVersion, 2)
		return preflightWritesNothing(t, ctx, f, env, operator.PlanInput{CheckInput: in})
	}

	// Credentials S3 refuses (a wrong secret): named, before anything else.
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong")
	wrongKeys, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env := f.Env
	env.Store = wrongKeys
	rep, err := plan(env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer})
	if !errors.Is(err, blob.ErrAccessDenied) || finding(rep, "credentials").ErrorName != blob.ErrAccessDenied.ErrorName() || len(rep.Checks) != 1 {
		t.Fatalf("refused credentials: %v, %+v", err, rep.Checks)
	}
	t.Setenv("AWS_SECRET_ACCESS_KEY", f.Stack.SecretKey())

	// No such bucket for the pointer.
	rep, err = plan(f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: "s3://no-such-bucket/CURRENT"})
	if !errors.Is(err, pointer.ErrPointerMissing) || finding(rep, "pointer").ErrorName != "PointerMissing" || !strings.Contains(err.Error(), "bucket does not exist") {
		t.Fatalf("a pointer in a missing bucket: %v, %+v", err, rep.Checks)
	}
	// Check refuses it alike, and records nothing: there is no bucket.
	before := objects(t, ctx, f)
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: "s3://no-such-bucket/CURRENT", TargetVersion: 2}); !errors.Is(err, pointer.ErrPointerMissing) {
		t.Fatalf("check of a pointer in a missing bucket: %v", err)
	}
	if after := objects(t, ctx, f); !slices.Equal(before, after) {
		t.Fatalf("a refused check wrote: %v", after)
	}

	// A pointer in a bucket without versioning: no rollback after a flip.
	body, err := pointer.Pointer{Catalog: f.Source, FormatVersion: format.V1, MigrationID: "initial", UpdatedAt: time.Now()}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Env.Store.Put(ctx, "s3://plain/CURRENT", body); err != nil {
		t.Fatal(err)
	}
	rep, err = plan(f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: "s3://plain/CURRENT"})
	if !errors.Is(err, pointer.ErrUnversioned) || finding(rep, "pointer-versioning").ErrorName != "PointerUnversioned" {
		t.Fatalf("an unversioned pointer bucket: %v, %+v", err, rep.Checks)
	}
	// ... and the plan went on: the source and target were checked too.
	if !finding(rep, "source").OK || !finding(rep, "target").OK {
		t.Fatalf("the plan stopped at the first problem: %+v", rep.Checks)
	}

	// An occupied target and a missing staging bucket, both in one plan.
	if _, err := seed.Seed(ctx, "s3://rocklake/catalogs/v2-m-taken", seed.Options{Rows: 20, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	env = f.Env
	env.Staging = "s3://no-such-staging/migrations"
	rep, err = plan(env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, MigrationID: "m-taken"})
	if runstate.ErrorName(err) != catalog.ErrTargetNotEmpty.ErrorName() || finding(rep, "target").ErrorName != catalog.ErrTargetNotEmpty.ErrorName() ||
		finding(rep, "staging").ErrorName != runstate.ErrStagingUnusable.ErrorName() || rep.Ready {
		t.Fatalf("an occupied target and no staging: %v, %+v", err, rep.Checks)
	}

	// The pointer says v2, the catalog is v1: the source's format is wrong.
	wrong := "s3://rocklake/WRONG"
	if _, err := pointer.Create(ctx, f.Env.Store, wrong, pointer.Pointer{Catalog: f.Source, FormatVersion: format.V2, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	rep, err = plan(f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: wrong})
	var mismatch *format.FormatVersionMismatch
	if !errors.As(err, &mismatch) || finding(rep, "source").ErrorName != format.ErrVersionMismatch.ErrorName() {
		t.Fatalf("a source in another format than the pointer's: %v, %+v", err, rep.Checks)
	}

	// Unknown tags under the default policy.
	w := "s3://rocklake/catalogs/odd"
	if _, err := seed.Seed(ctx, w, seed.Options{Rows: 20, Seed: 4}); err != nil {
		t.Fatal(err)
	}
	putRaw(t, ctx, w, []byte{0xF0, 0xAA}, []byte{0})
	odd := "s3://rocklake/ODD"
	if _, err := pointer.Create(ctx, f.Env.Store, odd, pointer.Pointer{Catalog: w, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	rep, err = plan(f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: odd})
	if runstate.ErrorName(err) != migration.ErrUnknownTags.ErrorName() || finding(rep, "unknown-tags").ErrorName != migration.ErrUnknownTags.ErrorName() {
		t.Fatalf("unknown tags: %v, %+v", err, rep.Checks)
	}
	// migrate runs the same checks before Freeze: it refuses the same way,
	// and touches nothing but its record.
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: odd, TargetVersion: 2}); runstate.ErrorName(err) != migration.ErrUnknownTags.ErrorName() {
		t.Fatalf("check with unknown tags: %v", err)
	}
	js, _ := json.Marshal(rep)
	if !strings.Contains(string(js), `"cannot_check_without_writing"`) {
		t.Fatalf("the report does not say what it could not check: %s", js)
	}
}

// putRaw writes one raw key into the catalog at url, as any SlateDB writer.
func putRaw(t *testing.T, ctx context.Context, url string, k, v []byte) {
	t.Helper()
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b slatedb.Batch
	b.Put(k, v)
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
}
