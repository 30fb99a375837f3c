package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/function"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// runUntilVerify runs the steps as the state machine orders them, up to and
// including Verify.
func runUntilVerify(t *testing.T, ctx context.Context, f seeded.Fixture, shards int) runstate.Migration {
	t.Helper()
	return finishToVerify(t, ctx, f, frozen(t, ctx, f, shards))
}

// frozen runs an offline migration of the fixture to v2 in shards through
// Check (no grace) and Freeze.
func frozen(t *testing.T, ctx context.Context, f seeded.Fixture, shards int) runstate.Migration {
	t.Helper()
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: shards, FreezeGrace: seeded.NoGrace()})
	if err != nil {
		t.Fatalf("check: %v", err)
	}
	if !m.NeedsMigration || m.From != format.V1 || m.To != format.V2 {
		t.Fatalf("check = %+v", m)
	}
	if m, err = workflow.Freeze(ctx, f.Env, m); err != nil {
		t.Fatalf("freeze: %v", err)
	}
	return m
}

// finishToVerify runs frozen migration m's steps after Freeze, up to and
// including Verify.
func finishToVerify(t *testing.T, ctx context.Context, f seeded.Fixture, m runstate.Migration) runstate.Migration {
	t.Helper()
	shards := m.Shards
	var err error
	for i := 0; i < shards; i++ {
		if _, err := workflow.ExportTransformShard(ctx, f.Env, workflow.ShardInput{MigrationID: m.MigrationID, Index: i}); err != nil {
			t.Fatalf("export and transform %d: %v", i, err)
		}
	}
	for i := 0; ; i++ {
		out, err := workflow.Import(ctx, f.Env, m)
		if err != nil {
			t.Fatalf("import: %v", err)
		}
		if out.Done {
			break
		}
		if i > shards {
			t.Fatal("import makes no progress")
		}
	}
	if m, err = workflow.Finalize(ctx, f.Env, m); err != nil {
		t.Fatalf("finalize: %v", err)
	}
	v, err := workflow.Verify(ctx, f.Env, m)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if v.Counts["ducklake_data_file"] == 0 {
		t.Fatalf("verify counts = %v", v.Counts)
	}
	return m
}

func dumpSource(t *testing.T, ctx context.Context, url string) map[string]string {
	t.Helper()
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := map[string]string{}
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		m[string(e.Key)] = string(e.Value)
	}
	return m
}

func TestMigrationFlipAndRollback(t *testing.T) {
	ctx, f := seeded.Setup(t, 2000)
	before := dumpSource(t, ctx, f.Source)
	m := runUntilVerify(t, ctx, f, 4)
	out, err := workflow.Flip(ctx, f.Env, m)
	if err != nil {
		t.Fatalf("flip: %v", err)
	}
	if out.PointerVersionID == "" || out.CleanupError != "" {
		t.Fatalf("flip = %+v", out)
	}
	// A retried Flip (its first response lost) succeeds with the same version.
	again, err := workflow.Flip(ctx, f.Env, m)
	if err != nil || again.PointerVersionID != out.PointerVersionID {
		t.Fatalf("retried flip = %+v, %v; first gave %s", again, err, out.PointerVersionID)
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != m.Target || p.FormatVersion != format.V2 || p.PreviousCatalog != f.Source {
		t.Fatalf("pointer after flip = %+v, %v", p, err)
	}
	c, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatalf("the pointer's catalog fails the v2 startup check: %v", err)
	}
	c.Close()
	// The source's rows are untouched (Freeze's fencing aside) and its
	// checkpoint is gone.
	after := dumpSource(t, ctx, f.Source)
	if len(after) != len(before) {
		t.Fatalf("source changed: %d → %d keys", len(before), len(after))
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
	rb, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer})
	if err != nil || rb.Catalog != f.Source || rb.FormatVersion != format.V1 {
		t.Fatalf("rollback = %+v, %v", rb, err)
	}
	checked, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2})
	if err != nil || checked.Source != f.Source || !checked.NeedsMigration {
		t.Fatalf("check after rollback = %+v, %v", checked, err)
	}
}

func TestAbortRefusesTheLiveCatalog(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	if _, err := workflow.Flip(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); !errors.Is(err, runstate.ErrAbortAfterFlip) {
		t.Fatalf("abort after flip: err = %v", err)
	}
	if _, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the live catalog was damaged: %v", err)
	}
}

func TestWriteAfterFreezeBlocksFlip(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m := runUntilVerify(t, ctx, f, 2)
	// RockLake comes back and commits a snapshot.
	if err := seeded.Commit(ctx, f.Source); err != nil {
		t.Fatal(err)
	}
	_, ptrBefore, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	_, err := workflow.Flip(ctx, f.Env, m)
	if !errors.Is(err, workflow.ErrSourceChanged) || runstate.ErrorName(err) != "SourceChangedDuringMigration" {
		t.Fatalf("flip after a source write: err = %v (%s)", err, runstate.ErrorName(err))
	}
	p, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if p.Catalog != f.Source || ref.ETag != ptrBefore.ETag {
		t.Fatalf("pointer moved: %+v", p)
	}
	// Abort cleans up the new catalog and staging, leaving source and pointer.
	out, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if err != nil || out.TargetObjects == 0 || out.StagingObjects == 0 {
		t.Fatalf("abort = %+v, %v", out, err)
	}
	if _, err := catalog.Open(ctx, m.Target, catalog.Options{}); !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("target after abort: %v", err)
	}
	if cps, _ := slatedb.ListCheckpoints(ctx, f.Source, slatedb.Options{}); len(cps) != 0 {
		t.Fatalf("checkpoint left after abort: %v", cps)
	}
	if _, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1}); err != nil {
		t.Fatalf("source after abort: %v", err)
	}
}

func TestConcurrentPointerChangeIsAConflict(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m := runUntilVerify(t, ctx, f, 1)
	// Someone else moves the pointer during the run.
	seeded.MovePointer(t, ctx, f, "someone-else")
	_, err := workflow.Flip(ctx, f.Env, m)
	if !errors.Is(err, pointer.ErrPointerConflict) || runstate.ErrorName(err) != "PointerConflict" {
		t.Fatalf("err = %v (%s), want PointerConflict", err, runstate.ErrorName(err))
	}
	p, _, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if p.MigrationID != "someone-else" {
		t.Fatalf("pointer = %+v", p)
	}
}

func TestCheckRefusesUnknownVersions(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 99}); runstate.ErrorName(err) != "FormatVersionMismatch" {
		t.Fatalf("target 99: %v (%s)", err, runstate.ErrorName(err))
	}
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 1})
	if err != nil || m.NeedsMigration {
		t.Fatalf("already at target: %+v, %v", m, err)
	}
}

func TestHandlerNamesErrors(t *testing.T) {
	ctx, f := seeded.Setup(t, 20)
	log := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := function.Handler(f.Env, "check", log)
	call := func(step string, in any) (json.RawMessage, string) {
		raw, _ := json.Marshal(in)
		out, err := h(ctx, workflow.Request{Step: step, Input: raw})
		var ie messages.InvokeResponse_Error
		if err != nil && !errors.As(err, &ie) {
			t.Fatalf("%s: error %T is not a Lambda error response", step, err)
		}
		return out, ie.Type
	}
	if _, name := call("Freeze", runstate.Migration{}); name != "StepFailed" {
		t.Fatalf("a step the check function does not host: %q", name)
	}
	if _, name := call("Check", workflow.CheckInput{Online: seeded.Offline(), Pointer: "s3://rocklake/NOPE", TargetVersion: 2}); name != "PointerMissing" {
		t.Fatalf("missing pointer: %q", name)
	}
	if _, name := call("Check", workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 7}); name != "FormatVersionMismatch" {
		t.Fatalf("unknown target version: %q", name)
	}
	out, name := call("Check", workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2})
	var m runstate.Migration
	if name != "" || json.Unmarshal(out, &m) != nil || m.Source != f.Source {
		t.Fatalf("check through the handler: %s, %q", out, name)
	}
}

// A target location that someone else filled makes Import fail with
// TargetNotEmpty, and Abort leaves that catalog alone.
func TestAbortLeavesSomeoneElsesTarget(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1, FreezeGrace: seeded.NoGrace()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Seed(ctx, m.Target, seed.Options{Rows: 30, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	if m, err = workflow.Freeze(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func(context.Context, runstate.Env, workflow.ShardInput) (workflow.ShardOutput, error){workflow.ExportShard, workflow.TransformShard} {
		if _, err := step(ctx, f.Env, workflow.ShardInput{MigrationID: m.MigrationID}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = workflow.Import(ctx, f.Env, m)
	if runstate.ErrorName(err) != "TargetNotEmpty" {
		t.Fatalf("import onto a filled target: %v (%s)", err, runstate.ErrorName(err))
	}
	before := dumpSource(t, ctx, m.Target)
	out, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if err != nil || out.TargetObjects != 0 {
		t.Fatalf("abort = %+v, %v", out, err)
	}
	if after := dumpSource(t, ctx, m.Target); len(after) != len(before) {
		t.Fatalf("abort changed someone else's catalog: %d → %d keys", len(before), len(after))
	}
	// Check claimed the target for this pointer; it was never this run's,
	// so Abort withdrew the claim, and cleanup leaves the catalog alone.
	if _, err := claim.Read(ctx, f.Env.Store, f.Pointer, m.MigrationID); !errors.Is(err, claim.ErrNoClaim) {
		t.Fatalf("the claim on someone else's target after Abort: %v", err)
	}
	if c, err := operator.Cleanup(ctx, f.Env, operator.CleanupInput{Pointer: f.Pointer, Apply: true}); err != nil || len(c.Items) != 0 {
		t.Fatalf("cleanup after the abort: %s, %v", c.Text(), err)
	}
	if after := dumpSource(t, ctx, m.Target); len(after) != len(before) {
		t.Fatalf("cleanup changed someone else's catalog: %d → %d keys", len(before), len(after))
	}
}

// Abort fails closed: with a pointer it cannot read (here corrupt), it
// deletes nothing, since the target may be the live catalog, and says so
// with an error the state machine retries.
func TestAbortRefusesWhenThePointerIsUnreadable(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	if _, err := f.Env.Store.Put(ctx, f.Pointer, []byte("{not a pointer")); err != nil {
		t.Fatal(err)
	}
	out, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if !errors.Is(err, workflow.ErrAbortUndecided) || runstate.ErrorName(err) != errname.Transient {
		t.Fatalf("abort with a corrupt pointer: %+v, %v (%s)", out, err, runstate.ErrorName(err))
	}
	if out.TargetObjects != 0 || out.StagingObjects != 0 {
		t.Fatalf("abort deleted %+v", out)
	}
	if _, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the target was damaged: %v", err)
	}
}

// A rollback to a catalog that is gone leaves the pointer where it is, so
// that RockLake is never pointed at nothing and a second attempt still has
// its way back.
func TestRollbackToAGoneCatalogLeavesThePointer(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	if _, err := workflow.Flip(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	before, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Env.Store.DeletePrefix(ctx, f.Source+"/"); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer}); !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("rollback to a deleted catalog: %v, want ErrNoCatalog", err)
	}
	after, ref2, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || after.Catalog != before.Catalog || ref2.VersionID != ref.VersionID {
		t.Fatalf("the pointer moved: %+v (%s), was %+v (%s): %v", after, ref2.VersionID, before, ref.VersionID, err)
	}
}

// A commit to the new catalog after the flip stops a one-step rollback,
// which writes nothing and says the rollback run is to carry it (Carry); a
// flip that pinned nothing makes it refuse, naming what it would drop; a
// dry run says it would be carried and writes nothing; DiscardNewerCommits
// takes the lock as a rollback, fences the new catalog, rolls back anyway
// and reports what it left behind, and frees the lock.
func TestRollbackRefusesToDropNewerCommits(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	if _, err := workflow.Flip(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	cur, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || cur.Marks.NextSnapshotID == 0 {
		t.Fatalf("the flip recorded no marks: %+v, %v", cur, err)
	}
	// Nothing written since: dry run and rollback pass.
	out, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer, DryRun: true})
	if err != nil || !out.DryRun || out.Catalog != f.Source || out.From != m.Target || out.Newer != "" {
		t.Fatalf("dry run: %+v, %v", out, err)
	}
	// RockLake (format 2, once it exists) commits two snapshots to the new catalog.
	next, err := seeded.CommitIn(ctx, m.Target, format.V2, 2)
	if err != nil {
		t.Fatal(err)
	}
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	snaps := fmt.Sprintf("snapshots %d to %d", next, next+1)
	out, err = workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer, DryRun: true})
	if err != nil || !out.Carries || !strings.Contains(out.Newer, snaps) {
		t.Fatalf("dry run over newer commits: %+v, %v; want them named, to be carried", out, err)
	}
	out, err = workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer})
	if err != nil || !out.Carry || !strings.Contains(out.Newer, snaps) {
		t.Fatalf("one-step rollback over newer commits: %+v, %v; want Carry", out, err)
	}
	if _, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); after != before {
		t.Fatalf("a one-step rollback that says carry moved the pointer: %+v → %+v", before, after)
	}
	// Without the flip's pins (a flip by an earlier release), nothing can
	// be carried: it refuses.
	unpinned := cur
	unpinned.FlipPoint, unpinned.Generation = nil, cur.Generation+1
	if _, err := pointer.Flip(ctx, f.Env.Store, f.Pointer, unpinned, before); err != nil {
		t.Fatal(err)
	}
	_, before, _ = pointer.Read(ctx, f.Env.Store, f.Pointer)
	_, err = workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer})
	if !errors.Is(err, workflow.ErrRollbackLosesCommits) || runstate.ErrorName(err) != "RollbackLosesCommits" || !strings.Contains(err.Error(), snaps) {
		t.Fatalf("one-step rollback over newer commits, no pins: %v", err)
	}
	if _, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); after != before {
		t.Fatalf("a refused rollback moved the pointer: %+v → %+v", before, after)
	}
	out, err = workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer, DiscardNewerCommits: true, FreezeGrace: seeded.NoGrace()})
	if err != nil || out.Catalog != f.Source || !strings.Contains(out.Newer, snaps) {
		t.Fatalf("rollback discarding newer commits: %+v, %v", out, err)
	}
	if l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, ""); err != nil || l.MigrationID != "" || l.ReleasedBy != "migration "+out.RunID {
		t.Fatalf("the lock after a discarding rollback: %+v, %v; want it taken by %s and freed", l, err, out.RunID)
	}
}

// A writer that opened the new catalog after the flip (a supervisor
// following it) and committed nothing moves its writer-epoch only: no
// commit is lost, and the one-step rollback goes through.
func TestRollbackAfterAnEpochMoveAlone(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	if _, err := workflow.Flip(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	w, err := catalog.OpenWriter(ctx, m.Target, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	epoch, _, err := w.Catalog.Marks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put(format.SystemKey(format.SystemWriterEpoch), format.EncodeCounter(format.V2, epoch+1))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	out, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer})
	if err != nil || out.Catalog != f.Source || out.Newer != "" {
		t.Fatalf("rollback after an epoch move alone: %+v, %v", out, err)
	}
}

// Flip and Abort race (a state timeout runs Abort while a Flip still runs):
// whichever takes the migration's decision first wins, and the other
// changes nothing. An Abort that won leaves a late Flip unable to point at
// the deleted target; a Flip that decided leaves the target to Abort.
func TestFlipAbortDecideOnce(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	st := layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	// Abort decided (its deletes not done yet) when the Flip gets there.
	if _, err := f.Env.Store.PutIfAbsent(ctx, st.Decision(), []byte("abort")); err != nil {
		t.Fatal(err)
	}
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if _, err := workflow.Flip(ctx, f.Env, m); !errors.Is(err, runstate.ErrDecided) || runstate.ErrorName(err) != "MigrationDecided" {
		t.Fatalf("a Flip after Abort decided: %v (%s)", err, runstate.ErrorName(err))
	}
	// The Abort goes on (its own decision); a Flip after it still writes nothing.
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Flip(ctx, f.Env, m); err == nil {
		t.Fatal("a Flip after the Abort succeeded")
	}
	if p, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); after != before || p.Catalog != f.Source {
		t.Fatalf("a Flip after Abort moved the pointer to %s", p.Catalog)
	}
	if got, _, err := f.Env.Store.Get(ctx, st.Decision()); err != nil || string(got) != "abort" {
		t.Fatalf("Abort's cleanup removed its decision: %q, %v", got, err)
	}

	// A Flip that decided but whose pointer write is still in flight: the
	// pointer does not name the target yet, and Abort must keep it all the
	// same. The run is over: Abort frees its lock.
	m = runUntilVerify(t, ctx, f, 1)
	st = layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	if _, err := f.Env.Store.PutIfAbsent(ctx, st.Decision(), []byte("flip")); err != nil {
		t.Fatal(err)
	}
	out, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if !errors.Is(err, runstate.ErrAbortAfterFlip) || out.TargetObjects != 0 {
		t.Fatalf("Abort after a Flip decided: %+v, %v", out, err)
	}
	if _, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the target was damaged: %v", err)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
		t.Fatalf("Abort after a Flip decided kept the lock: %+v", l)
	}
	// A Flip of the run that starts after that writes nothing.
	if _, err := workflow.Flip(ctx, f.Env, m); !errors.Is(err, lock.ErrLost) {
		t.Fatalf("a Flip after the run's Abort: %v", err)
	}
	if p, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); after != before || p.Catalog != f.Source {
		t.Fatalf("a Flip after Abort moved the pointer to %s", p.Catalog)
	}
}

// A writer that commits to the source after Freeze without moving RockLake's
// writer-epoch or next_snapshot_id (any SlateDB writer: opening fences
// Freeze's) is caught at Flip by the engine's state, and the pointer stays.
func TestSilentWriteAfterFreezeBlocksFlip(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m := runUntilVerify(t, ctx, f, 1)
	w, err := slatedb.OpenWriter(ctx, f.Source, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put([]byte{0x30, 1}, []byte("a key RockLake's marks do not see"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	w.Close()
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	_, err = workflow.Flip(ctx, f.Env, m)
	if !errors.Is(err, workflow.ErrSourceChanged) || !strings.Contains(err.Error(), "SlateDB state moved") {
		t.Fatalf("flip after a silent write: %v", err)
	}
	if _, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); after != before {
		t.Fatal("the pointer moved")
	}
}

// One migration at a time: a second Check on the same pointer is refused
// with MigrationInProgress before it touches anything; Abort (or Flip)
// releases the lock; an expired lock is taken over; Unlock breaks one.
func TestOneMigrationAtATime(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	in := workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1}
	a, err := workflow.Check(ctx, f.Env, in)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Check(ctx, f.Env, in); !errors.Is(err, lock.ErrInProgress) ||
		runstate.ErrorName(err) != "MigrationInProgress" || !strings.Contains(err.Error(), a.MigrationID) {
		t.Fatalf("a second migration: %v (%s)", err, runstate.ErrorName(err))
	}
	// A retry of the holder's Check is fine.
	in.MigrationID = a.MigrationID
	if _, err := workflow.Check(ctx, f.Env, in); err != nil {
		t.Fatalf("a retried Check: %v", err)
	}
	in.MigrationID = ""
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: a}); err != nil {
		t.Fatal(err)
	}
	b, err := workflow.Check(ctx, f.Env, in)
	if err != nil {
		t.Fatalf("after the first one's abort: %v", err)
	}
	// b's run died: an expired lease is taken over.
	stale, _ := json.Marshal(lock.Lock{MigrationID: b.MigrationID, Owner: "dead", ExpiresAt: time.Now().Add(-time.Minute)})
	if _, err := f.Env.Store.Put(ctx, layout.Lock(f.Pointer), stale); err != nil {
		t.Fatal(err)
	}
	c, err := workflow.Check(ctx, f.Env, in)
	if err != nil {
		t.Fatalf("over an expired lock: %v", err)
	}
	// The operator breaks c's lock by hand.
	if _, err := runstate.Unlock(ctx, f.Env, f.Pointer, "someone-else"); err == nil {
		t.Fatal("unlock of another migration's lock succeeded")
	}
	if held, err := runstate.Unlock(ctx, f.Env, f.Pointer, c.MigrationID); err != nil || held.MigrationID != c.MigrationID {
		t.Fatalf("unlock: %+v, %v", held, err)
	}
	if _, err := workflow.Check(ctx, f.Env, in); err != nil {
		t.Fatalf("after unlock: %v", err)
	}
	if name := runstate.ErrorName(fmt.Errorf("freeze: %w", slatedb.ErrFenced)); name != "Fenced" {
		t.Fatalf("a fenced step is %s", name)
	}
}

// A catalog at a bucket root has no place beside it for the new catalog
// (beside it is another bucket): Check refuses, before any lock or fence.
func TestSourceAtBucketRootRefused(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	root, ptr := "s3://staging", "s3://rocklake/ROOT"
	if _, err := seed.Seed(ctx, root, seed.Options{Rows: 50, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Create(ctx, f.Env.Store, ptr, pointer.Pointer{Catalog: root, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	_, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: ptr, TargetVersion: 2})
	if !errors.Is(err, workflow.ErrSourceAtRoot) || runstate.ErrorName(err) != "SourceAtRoot" {
		t.Fatalf("a catalog at a bucket root: %v (%s)", err, runstate.ErrorName(err))
	}
	if _, _, err := f.Env.Store.Get(ctx, layout.Lock(ptr)); err == nil {
		t.Fatal("the refused run took the lock")
	}
}

// A typo in the staging location is refused at Check, before the source is
// fenced or checkpointed and before the lock is taken.
func TestUnusableStagingRefusedBeforeTouchingTheSource(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	before := dumpSource(t, ctx, f.Source)
	env := f.Env
	env.Staging = "s3://no-such-staging-bucket/migrations"
	_, err := workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2})
	if !errors.Is(err, runstate.ErrStagingUnusable) || runstate.ErrorName(err) != "StagingUnusable" {
		t.Fatalf("check with an unusable staging: %v (%s)", err, runstate.ErrorName(err))
	}
	if _, _, err := f.Env.Store.Get(ctx, layout.Lock(f.Pointer)); err == nil {
		t.Fatal("the refused run took the lock")
	}
	if after := dumpSource(t, ctx, f.Source); len(after) != len(before) {
		t.Fatal("the source changed")
	}
	if cps, err := slatedb.ListCheckpoints(ctx, f.Source, slatedb.Options{}); err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints: %v, %v", cps, err)
	}
}

// The definition's ExportTransformShard leaves in staging what ExportShard
// then TransformShard leave, byte for byte: both shard files and both
// results, for every shard, on S3.
func TestExportTransformShardIsExportThenTransform(t *testing.T) {
	ctx, f := seeded.Setup(t, 1500)
	const shards = 3
	m := frozen(t, ctx, f, shards)
	st := layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	objects := func(i int) [][]byte {
		var got [][]byte
		for _, url := range []string{st.Shard(format.V1, i, shards), st.Shard(format.V2, i, shards), st.ExportResult(i), st.TransformResult(i)} {
			b, _, err := f.Env.Store.Get(ctx, url)
			if err != nil {
				t.Fatalf("shard %d: %v", i, err)
			}
			got = append(got, b)
		}
		return got
	}
	for i := range shards {
		in := workflow.ShardInput{MigrationID: m.MigrationID, Index: i}
		if _, err := workflow.ExportShard(ctx, f.Env, in); err != nil {
			t.Fatal(err)
		}
		if _, err := workflow.TransformShard(ctx, f.Env, in); err != nil {
			t.Fatal(err)
		}
		want := objects(i)
		if _, err := f.Env.Store.DeletePrefix(ctx, st.ShardDir(format.V1)+"/"); err != nil {
			t.Fatal(err)
		}
		if _, err := f.Env.Store.DeletePrefix(ctx, st.ShardDir(format.V2)+"/"); err != nil {
			t.Fatal(err)
		}
		out, err := workflow.ExportTransformShard(ctx, f.Env, in)
		if err != nil {
			t.Fatal(err)
		}
		if out.Records == 0 || out.Index != i {
			t.Fatalf("shard %d: %+v", i, out)
		}
		for j, got := range objects(i) {
			if !bytes.Equal(got, want[j]) {
				t.Errorf("shard %d: object %d differs from the separate steps'", i, j)
			}
		}
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatal(err)
	}
}

// Freeze fences the source once every live supervisor acknowledged, within
// the run's grace (the lock's fence_at, counted from when Check took the
// lock), not at its end; the default grace is DefaultFreezeGrace; a grace
// out of bounds is refused before anything is touched.
func TestFreezeWaitsItsGrace(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	for _, g := range []float64{-1, runstate.MaxFreezeGrace.Seconds() + 1} {
		_, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, FreezeGrace: &g})
		if runstate.ErrorName(err) != runstate.ErrBadFreezeGrace.ErrorName() {
			t.Fatalf("freeze_grace %v: %v, want BadFreezeGrace", g, err)
		}
	}
	if raw, _, err := f.Env.Store.Get(ctx, layout.Lock(f.Pointer)); err == nil {
		t.Fatalf("a refused grace took the lock: %s", raw)
	}
	// The default grace; a dry run's lock says it fences nothing.
	dry, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1, DryRun: true})
	if err != nil || dry.FreezeGrace != runstate.DefaultFreezeGrace.Seconds() || !dry.FenceAt.IsZero() {
		t.Fatalf("dry run's check: grace %v s, fence at %v, %v; want the default %v and no fence", dry.FreezeGrace, dry.FenceAt, err, runstate.DefaultFreezeGrace)
	}
	if l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, ""); err != nil || !l.DryRun || !l.FenceAt.IsZero() || !l.Held(time.Now()) {
		t.Fatalf("a dry run's lock: %+v %v", l, err)
	}
	if _, err := runstate.Unlock(ctx, f.Env, f.Pointer, dry.MigrationID); err != nil {
		t.Fatal(err)
	}
	grace := 20.0
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1, FreezeGrace: &grace})
	if err != nil {
		t.Fatal(err)
	}
	// The lock tells the supervisors when the fence may come at the
	// latest: the grace after the lock was written.
	l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, "")
	if err != nil || l.MigrationID != m.MigrationID || !l.FenceAt.Equal(m.FenceAt) || l.FenceAt.Sub(m.StartedAt) < 20*time.Second || l.DryRun {
		t.Fatalf("the lock %+v (%v) for migration %+v", l, err, m)
	}
	// A live supervisor that has not acknowledged: Freeze waits, the
	// source untouched; once it acknowledges, Freeze fences at once.
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "sup", Role: presence.Follower, Catalog: f.Source, Mode: "writer"}); err != nil {
		t.Fatal(err)
	}
	before, err := engineFiles(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	frozen := make(chan error, 1)
	go func() {
		_, err := workflow.Freeze(ctx, f.Env, m)
		frozen <- err
	}()
	time.Sleep(1500 * time.Millisecond)
	if during, err := engineFiles(ctx, f); err != nil || during != before {
		t.Fatalf("the source changed before the supervisor acknowledged (%v):\nbefore: %s\nduring: %s", err, before, during)
	}
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "sup", Role: presence.Follower, Catalog: f.Source, Mode: "reader", Acked: m.MigrationID}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-frozen:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Freeze did not fence within 15 s of the acknowledgement")
	}
	if !time.Now().Before(m.FenceAt) {
		t.Fatalf("Freeze waited out the grace (fence_at %s) after the acknowledgement", m.FenceAt)
	}
	if after, _ := engineFiles(ctx, f); after == before {
		t.Fatal("Freeze fenced nothing")
	}
}

// engineFiles lists the source's SlateDB objects (manifest, WAL) with their
// sizes.
func engineFiles(ctx context.Context, f seeded.Fixture) (string, error) {
	infos, err := f.Env.Store.List(ctx, f.Source+"/")
	var b strings.Builder
	for _, i := range infos {
		fmt.Fprintf(&b, "%s %d\n", i.URL, i.Size)
	}
	return b.String(), err
}
