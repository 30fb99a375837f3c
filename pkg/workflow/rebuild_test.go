package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/operator"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// catalogDigest is the order-independent digest of every raw key and value
// of the catalog at url, which must be format v.
func catalogDigest(t *testing.T, ctx context.Context, url string, v format.Version) string {
	t.Helper()
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	defer c.Close()
	d, err := shard.DigestCatalog(ctx, c, nil)
	if err != nil {
		t.Fatal(err)
	}
	return d.Sum()
}

type rebuildState = localrun.FinalState

// rebuild runs the definition with in and returns its final state.
func rebuild(t *testing.T, ctx context.Context, f seeded.Fixture, in workflow.CheckInput) rebuildState {
	t.Helper()
	out, _, err := runDefinition(t, ctx, f, in, nil)
	if err != nil {
		t.Fatalf("rebuild %+v: %v", in, err)
	}
	var st rebuildState
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// flippedToIdentity checks that the pointer names st's new catalog, in the
// source's format, holding every key and value of the source as it was.
func flippedToIdentity(t *testing.T, ctx context.Context, f seeded.Fixture, st rebuildState, keys map[string]string, digest string) {
	t.Helper()
	m := st.Migration
	if !m.Rebuild || m.From != format.V1 || m.To != format.V1 || m.Target == f.Source {
		t.Fatalf("the run = %+v", m)
	}
	p, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != m.Target || p.FormatVersion != format.V1 || p.PreviousCatalog != f.Source || ref.VersionID != st.Verify.Flip.PointerVersionID {
		t.Fatalf("pointer after the rebuild = %+v (%+v), %v; the run: %+v", p, ref, err, st.Verify.Flip)
	}
	if got := catalogDigest(t, ctx, m.Target, format.V1); got != digest || st.Verify.Digest != digest {
		t.Fatalf("digest of the rebuilt catalog %s (Verify said %s), the source's %s", got, st.Verify.Digest, digest)
	}
	if got := dumpSource(t, ctx, m.Target); !maps.Equal(got, keys) {
		t.Fatalf("the rebuilt catalog's keys and values differ from the source's: %d keys, %d in the source", len(got), len(keys))
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left on the source", n)
	}
}

// rolledBack rolls the pointer back and checks that it names the source,
// which then rebuilds again.
func rolledBack(t *testing.T, ctx context.Context, f seeded.Fixture) {
	t.Helper()
	rb, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer})
	if err != nil || rb.Catalog != f.Source || rb.FormatVersion != format.V1 {
		t.Fatalf("rollback = %+v, %v", rb, err)
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != f.Source || p.FormatVersion != format.V1 {
		t.Fatalf("pointer after rollback = %+v, %v", p, err)
	}
}

// A rebuild of a v1 catalog into the same prefix: no target version in the
// input (and no expected-version parameter: the catalog's own format), the
// identity transform, the pointer flipped to a new v1 catalog beside the
// source holding every key and value of it, byte for byte; both shard sets
// in staging (the audit copy and the rebuilt one Import read); rollback
// names the source again. Old main read no "rebuild": Check wanted a target
// version (NoTargetVersion), and with target_version 1 had nothing to do.
func TestRebuildSamePrefixFlipsAndRollsBack(t *testing.T) {
	ctx, f := seeded.Setup(t, 2000)
	keys, digest := dumpSource(t, ctx, f.Source), catalogDigest(t, ctx, f.Source, format.V1)
	st := rebuild(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true, Shards: 4})
	if !strings.HasPrefix(st.Migration.Target, "s3://rocklake/catalogs/v1-m-") {
		t.Fatalf("the new catalog %s is not beside the source %s", st.Migration.Target, f.Source)
	}
	flippedToIdentity(t, ctx, f, st, keys, digest)
	stg := layout.Staging{Root: f.Env.Staging, MigrationID: st.Migration.MigrationID}
	for _, dir := range []string{stg.ShardDir(format.V1), stg.ImportDir(format.V1, format.V1)} {
		files, err := shard.List(ctx, f.Env.Store, dir)
		if err != nil || len(files) != 4 {
			t.Fatalf("shards in %s: %v, %v", dir, files, err)
		}
	}
	rolledBack(t, ctx, f)
	if got := catalogDigest(t, ctx, f.Source, format.V1); got != digest {
		t.Fatalf("the source's digest moved: %s → %s", digest, got)
	}
	// The same catalog rebuilds again after the rollback; the input may
	// name its format.
	again := rebuild(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true, TargetVersion: 1, Shards: 2})
	flippedToIdentity(t, ctx, f, again, keys, digest)
}

// A rebuild into another bucket: plan checks the target bucket and place
// (a missing bucket, a place inside the source, one someone else filled),
// the run flips to s3://other/catalogs/v1-<id> with staging in its own
// bucket, and rollback restores the source.
func TestRebuildIntoAnotherBucket(t *testing.T) {
	ctx, f := seeded.Setup(t, 1500)
	if err := f.Stack.CreateBucket(ctx, "other", false); err != nil {
		t.Fatal(err)
	}
	keys, digest := dumpSource(t, ctx, f.Source), catalogDigest(t, ctx, f.Source, format.V1)
	plan := func(prefix, id string) operator.PlanReport {
		t.Helper()
		rep, _ := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: workflow.CheckInput{Online: seeded.Offline(),
			Pointer: f.Pointer, Rebuild: true, TargetPrefix: prefix, MigrationID: id, Shards: 2}})
		return rep
	}
	target := func(rep operator.PlanReport) workflow.Finding {
		for _, c := range rep.Checks {
			if c.Check == "target" {
				return c
			}
		}
		t.Fatalf("plan checked no target: %+v", rep.Checks)
		return workflow.Finding{}
	}
	rep := plan("s3://other/catalogs/", "m-planned")
	if tc := target(rep); !rep.Ready || !rep.Rebuild || rep.To != format.V1 || rep.Target != "s3://other/catalogs/v1-m-planned" || !tc.OK {
		t.Fatalf("plan into another bucket: ready %v, target %s: %+v", rep.Ready, rep.Target, rep.Checks)
	}
	// in_place_auto (the release rule sends it) takes Strategy B for a
	// rebuild: a new catalog, never the source itself.
	auto, err := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: workflow.CheckInput{Online: seeded.Offline(),
		Pointer: f.Pointer, Rebuild: true, InPlaceAuto: true, TargetPrefix: "s3://other/catalogs", MigrationID: "m-auto"}})
	if err != nil || !auto.Ready || auto.Target != "s3://other/catalogs/v1-m-auto" {
		t.Fatalf("plan of a rebuild with in_place_auto: %+v, %v", auto, err)
	}
	for _, c := range []struct{ prefix, name string }{
		{"s3://no-such-bucket/catalogs", blob.ErrNoSuchBucket.ErrorName()},
		{f.Source + "/", catalog.ErrTargetNotEmpty.ErrorName()}, // inside the source
		{"rocklake/catalogs", workflow.ErrBadInput.ErrorName()}, // not a URL
	} {
		if rep := plan(c.prefix, "m-planned"); rep.Ready || target(rep).ErrorName != c.name {
			t.Fatalf("plan into %s: ready %v, %+v; want %s", c.prefix, rep.Ready, target(rep), c.name)
		}
	}
	// Someone else's catalog where the run would make its own: Check
	// refuses before anything is touched, and that catalog stays.
	if _, err := seed.Seed(ctx, "s3://other/catalogs/v1-m-taken", seed.Options{Rows: 20, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	taken := dumpSource(t, ctx, "s3://other/catalogs/v1-m-taken")
	_, _, err = runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true, TargetPrefix: "s3://other/catalogs", MigrationID: "m-taken"}, nil)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != catalog.ErrTargetNotEmpty.ErrorName() {
		t.Fatalf("rebuild onto someone else's catalog: %v", err)
	}
	if got := dumpSource(t, ctx, "s3://other/catalogs/v1-m-taken"); !maps.Equal(got, taken) {
		t.Fatal("the refused run changed the catalog it found in its place")
	}

	st := rebuild(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true, TargetPrefix: "s3://other/catalogs/", Shards: 3})
	if want := "s3://other/catalogs/v1-" + st.Migration.MigrationID; st.Migration.Target != want {
		t.Fatalf("target %s, want %s", st.Migration.Target, want)
	}
	flippedToIdentity(t, ctx, f, st, keys, digest)
	rolledBack(t, ctx, f)
}

// A rebuild keeps every guarantee of a migration: refusals of inputs that
// contradict it; the lock; a dry run that writes nothing to the source nor
// leaves its target; a write to the source after Freeze makes Flip refuse
// (SourceChangedDuringMigration) and Abort remove the target it claimed in
// another bucket, its staging and the source's checkpoint.
func TestRebuildGuards(t *testing.T) {
	ctx, f := seeded.Setup(t, 400)
	if err := f.Stack.CreateBucket(ctx, "other", false); err != nil {
		t.Fatal(err)
	}
	for _, in := range []workflow.CheckInput{
		{Pointer: f.Pointer, Rebuild: true, TargetVersion: 2}, // a rebuild keeps the format
		{Pointer: f.Pointer, Rebuild: true, InPlace: true},    // in place makes no new catalog
		{Pointer: f.Pointer, TargetVersion: 2, InPlace: true, TargetPrefix: "s3://other/x"},
	} {
		if _, err := workflow.Check(ctx, f.Env, in); runstate.ErrorName(err) != workflow.ErrBadInput.ErrorName() {
			t.Fatalf("check %+v: %v (%s), want BadInput", in, err, runstate.ErrorName(err))
		}
	}

	// A dry run: the pointer, the source's objects and the target bucket
	// as they were.
	objects := func(prefix string) map[string]string { return seeded.Objects(t, ctx, f.Env.Store, prefix) }
	_, ptrBefore, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	sourceBefore := objects(f.Source + "/")
	out, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true, TargetPrefix: "s3://other/catalogs", Shards: 2, DryRun: true}, nil)
	var dry rebuildState
	if err != nil || json.Unmarshal(out, &dry) != nil || dry.Verify.Digest == "" {
		t.Fatalf("dry run: %s, %v", out, err)
	}
	if _, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); ref.ETag != ptrBefore.ETag {
		t.Fatal("the dry run moved the pointer")
	}
	if after := objects(f.Source + "/"); !maps.Equal(after, sourceBefore) {
		t.Fatalf("the dry run changed the source: %d objects before, %d after", len(sourceBefore), len(after))
	}
	if left := objects("s3://other/"); len(left) != 0 {
		t.Fatalf("the dry run left %d objects in the target bucket", len(left))
	}

	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true, TargetPrefix: "s3://other/catalogs", Shards: 2})
	if err != nil || !m.NeedsMigration || !m.Rebuild {
		t.Fatalf("check = %+v, %v", m, err)
	}
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true}); runstate.ErrorName(err) != "MigrationInProgress" {
		t.Fatalf("a second rebuild while the first holds the lock: %v", err)
	}
	if m, err = workflow.Freeze(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := workflow.ExportTransformShard(ctx, f.Env, workflow.ShardInput{MigrationID: m.MigrationID, Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	if o, err := workflow.Import(ctx, f.Env, m); err != nil || !o.Done {
		t.Fatalf("import = %+v, %v", o, err)
	}
	if m, err = workflow.Finalize(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Verify(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	// RockLake commits to the source after Freeze.
	if err := seeded.Commit(ctx, f.Source); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Flip(ctx, f.Env, m); runstate.ErrorName(err) != workflow.ErrSourceChanged.ErrorName() {
		t.Fatalf("flip after a source write: %v", err)
	}
	if p, _, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != f.Source {
		t.Fatalf("pointer moved: %+v", p)
	}
	ab, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if err != nil || ab.TargetObjects == 0 || ab.StagingObjects == 0 {
		t.Fatalf("abort = %+v, %v", ab, err)
	}
	if left := objects("s3://other/"); len(left) != 0 {
		t.Fatalf("abort left %d objects of its target", len(left))
	}
	if cps, _ := slatedb.ListCheckpoints(ctx, f.Source, slatedb.Options{}); len(cps) != 0 {
		t.Fatalf("checkpoint left after abort: %v", cps)
	}
	// The lock is free again.
	if _, err := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Rebuild: true}}); err != nil {
		t.Fatalf("plan after the abort: %v", err)
	}
}
