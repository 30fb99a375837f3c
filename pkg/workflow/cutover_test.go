package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// decisionOf is the migration's decision marker ("" when there is none).
func decisionOf(t *testing.T, ctx context.Context, f seeded.Fixture, id string) string {
	t.Helper()
	got, _, err := f.Env.Store.Get(ctx, layout.Staging{Root: f.Env.Staging, MigrationID: id}.Decision())
	if errors.Is(err, blob.ErrNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

// aborted checks that Abort ended run m: its target gone, the lock free.
func aborted(t *testing.T, ctx context.Context, f seeded.Fixture, m runstate.Migration) {
	t.Helper()
	out, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if err != nil || out.TargetObjects == 0 {
		t.Fatalf("abort: %+v, %v", out, err)
	}
	if objs, err := f.Env.Store.List(ctx, m.Target+"/"); err != nil || len(objs) != 0 {
		t.Fatalf("the target after abort: %d objects, %v", len(objs), err)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
		t.Fatalf("the lock after abort: %+v", l)
	}
}

// Issue 24 item 5: a Flip refused because the pointer moved after Check
// takes no decision (or withdraws the one an earlier attempt took), so
// Abort ends the run and the next migration starts at once. A Flip whose
// write had landed keeps its decision: that target was live.
func TestFlipRefusedByAMovedPointerLeavesARunAbortEnds(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m := runUntilVerify(t, ctx, f, 1)
	seeded.MovePointer(t, ctx, f, "operator")
	if _, err := workflow.Flip(ctx, f.Env, m); !errors.Is(err, pointer.ErrPointerConflict) || runstate.ErrorName(err) != "PointerConflict" {
		t.Fatalf("flip after the pointer moved: %v (%s)", err, runstate.ErrorName(err))
	}
	if d := decisionOf(t, ctx, f, m.MigrationID); d == "flip" {
		t.Fatal("Flip decided to flip before it checked the pointer")
	}
	aborted(t, ctx, f, m)
	next, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1})
	if err != nil {
		t.Fatalf("a migration after the abort: %v", err)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: next}); err != nil {
		t.Fatal(err)
	}

	// An earlier attempt decided to flip and its write did not land (an
	// error, a lost answer); the pointer moved before the retry.
	m = runUntilVerify(t, ctx, f, 1)
	st := layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	if _, err := f.Env.Store.PutIfAbsent(ctx, st.Decision(), []byte("flip")); err != nil {
		t.Fatal(err)
	}
	seeded.MovePointer(t, ctx, f, "rollback")
	if _, err := workflow.Flip(ctx, f.Env, m); !errors.Is(err, pointer.ErrPointerConflict) {
		t.Fatalf("a retried flip after the pointer moved: %v", err)
	}
	if d := decisionOf(t, ctx, f, m.MigrationID); d == "flip" {
		t.Fatal("a Flip that never wrote the pointer kept its decision")
	}
	aborted(t, ctx, f, m)
	if d := decisionOf(t, ctx, f, m.MigrationID); d != "abort" {
		t.Fatalf("the decision after abort: %q", d)
	}

	// The pointer refuses the write itself, after the decision (here: the
	// fixed pointer is not newer than the current one, as one built before
	// a move between Flip's look and its write would be): the decision is
	// withdrawn, and Abort ends the run.
	m = runUntilVerify(t, ctx, f, 1)
	st = layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	cur, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	stale := cur.Next(m.Target, m.To, m.MigrationID)
	stale.Generation, stale.UpdatedAt = cur.Generation, time.Now().UTC().Truncate(time.Millisecond)
	body, _ := json.Marshal(stale)
	if _, err := f.Env.Store.Put(ctx, st.FlipIntent(), body); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Flip(ctx, f.Env, m); !errors.Is(err, pointer.ErrPointerConflict) {
		t.Fatalf("a flip the pointer refuses: %v", err)
	}
	if d := decisionOf(t, ctx, f, m.MigrationID); d != "withdrawn" {
		t.Fatalf("the decision after the pointer refused the write: %q", d)
	}
	aborted(t, ctx, f, m)

	// The flip landed, then a rollback moved the pointer back; a late
	// retry of that Flip refuses and keeps the decision, and Abort keeps
	// the target (it was live) but frees nothing it does not hold.
	m = runUntilVerify(t, ctx, f, 1)
	if _, err := workflow.Flip(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Flip(ctx, f.Env, m); !errors.Is(err, pointer.ErrPointerConflict) {
		t.Fatalf("a late flip after the rollback: %v", err)
	}
	if d := decisionOf(t, ctx, f, m.MigrationID); d != "flip" {
		t.Fatalf("the decision of a flip that landed: %q", d)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); !errors.Is(err, runstate.ErrAbortAfterFlip) {
		t.Fatalf("abort of a migration that flipped: %v", err)
	}
	if _, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the once live target: %v", err)
	}
}

// Issue 24 item 6: the lock's lease covers the execution's timeout (the
// definition's, or the deployment's from the Lambda's environment), so no
// run can outlive it.
func TestLockLeaseCoversTheExecution(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	exec, err := runstate.DefinitionTimeout()
	if err != nil || exec < 30*time.Hour {
		t.Fatalf("the definition's TimeoutSeconds: %v, %v", exec, err)
	}
	for _, timeout := range []time.Duration{0, 100 * time.Hour} {
		env := f.Env
		env.ExecutionTimeout = timeout
		m, err := workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := timeout
		if want == 0 {
			want = exec
		}
		if l := seeded.LockHolder(t, ctx, f); l.ExpiresAt.Sub(l.AcquiredAt) <= want {
			t.Fatalf("execution timeout %v: the lock's lease is %v", want, l.ExpiresAt.Sub(l.AcquiredAt))
		}
		if _, err := workflow.Abort(ctx, env, workflow.AbortInput{Migration: m}); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("ROCKLAKE_STAGING", f.Env.Staging)
	t.Setenv(runstate.ExecutionTimeoutEnv, "360000")
	env, err := runstate.EnvFromEnvironment(ctx)
	if err != nil || env.ExecutionTimeout != 100*time.Hour {
		t.Fatalf("%s=360000: %v, %v", runstate.ExecutionTimeoutEnv, env.ExecutionTimeout, err)
	}
	t.Setenv(runstate.ExecutionTimeoutEnv, "36h")
	if _, err := runstate.EnvFromEnvironment(ctx); err == nil {
		t.Fatalf("%s=36h accepted", runstate.ExecutionTimeoutEnv)
	}
}

// Issue 24 item 6: once a run's lock is not its own (another migration took
// it over, an operator broke it, its lease ran out), every step from Freeze
// on refuses with LockLost before it writes anything; Abort still removes
// what is the run's own.
func TestStepsRefuseOnceTheLockIsLost(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = workflow.Freeze(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	st := layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	setLock := func(l lock.Lock) {
		t.Helper()
		b, _ := json.Marshal(l)
		if _, err := f.Env.Store.Put(ctx, layout.Lock(f.Pointer), b); err != nil {
			t.Fatal(err)
		}
	}
	objects := func(prefix string) int {
		t.Helper()
		objs, err := f.Env.Store.List(ctx, prefix)
		if err != nil {
			t.Fatal(err)
		}
		return len(objs)
	}
	_, ptrBefore, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	for _, lost := range []lock.Lock{
		{MigrationID: "m-other", Owner: "a later run", ExpiresAt: time.Now().Add(time.Hour)},
		{ReleasedBy: "unlock by ops"},
		{MigrationID: m.MigrationID, Owner: "test", ExpiresAt: time.Now().Add(-time.Minute)},
	} {
		setLock(lost)
		staged := objects(st.Prefix())
		// Through Run, as the Lambdas and the CLI run them (Run keeps a
		// step's time in staging, but not a step's that lost its lock).
		shard := workflow.ShardInput{MigrationID: m.MigrationID, Index: 0}
		steps := map[string]any{
			"Freeze": m, "ExportTransformShard": shard, "TransformShard": shard, "Import": m, "Finalize": m, "Verify": m,
			"Gate": workflow.GateInput{Migration: m, TaskToken: "t"}, "Flip": m,
		}
		for name, in := range steps {
			raw, _ := json.Marshal(in)
			if _, err := workflow.Run(ctx, f.Env, name, raw); !errors.Is(err, lock.ErrLost) || runstate.ErrorName(err) != "LockLost" {
				t.Fatalf("lock %+v: %s: %v (%s), want LockLost", lost, name, err, runstate.ErrorName(err))
			}
		}
		// Nothing written: no staging object, no target, the pointer
		// where it was.
		if n := objects(st.Prefix()); n != staged {
			t.Fatalf("lock %+v: staging grew from %d to %d objects", lost, staged, n)
		}
		for _, res := range []string{st.ShardDir(format.V1) + "/", st.ShardDir(format.V2) + "/", m.Target + "/"} {
			if n := objects(res); n != 0 {
				t.Fatalf("lock %+v: %d objects under %s", lost, n, res)
			}
		}
		if _, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); ref != ptrBefore {
			t.Fatal("the pointer moved")
		}
	}
	other := lock.Lock{MigrationID: "m-other", Owner: "a later run", ExpiresAt: time.Now().Add(time.Hour)}
	setLock(other)
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatalf("abort of the run that lost its lock: %v", err)
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != other.MigrationID {
		t.Fatalf("Abort freed another run's lock: %+v", l)
	}
}

// Issue 24 item 6: Flip runs the target's startup check right before it
// writes the pointer, also when an earlier attempt fixed the pointer to
// write: a target removed since (a cleanup) is never pointed at.
func TestFlipChecksTheTargetBeforeThePointer(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m := runUntilVerify(t, ctx, f, 1)
	st := layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}
	cur, before, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	next := cur.Next(m.Target, m.To, m.MigrationID)
	next.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	body, _ := json.Marshal(next)
	if _, err := f.Env.Store.Put(ctx, st.FlipIntent(), body); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Env.Store.DeletePrefix(ctx, m.Target+"/"); err != nil {
		t.Fatal(err)
	}
	_, err = workflow.Flip(ctx, f.Env, m)
	if !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("flip to a removed target: %v (%s)", err, runstate.ErrorName(err))
	}
	if p, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); after != before || p.Catalog != f.Source {
		t.Fatalf("the pointer names %s", p.Catalog)
	}
	if d := decisionOf(t, ctx, f, m.MigrationID); d != "" {
		t.Fatalf("decision %q", d)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatal(err)
	}
}

// Issue 24 item 9: Abort removes a target whose writer is still writing
// (an import abandoned mid-write: the CLI interrupted, a Lambda frozen):
// it fences the writer and deletes until nothing comes back, so nothing of
// the target survives, also what the writer had in flight.
func TestAbortFencesAWriterStillWriting(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	m := runUntilVerify(t, ctx, f, 1)
	w, err := slatedb.OpenWriter(ctx, m.Target, slatedb.Options{BulkLoad: true, BulkMemtableBytes: 32 << 10})
	if err != nil {
		t.Fatal(err)
	}
	// The writer's calls end with wctx: one whose database was deleted
	// under it may wait for ever on a flush.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	var batches atomic.Int64
	go func() {
		for i := 0; ; i++ {
			if wctx.Err() != nil {
				done <- nil
				return
			}
			var b slatedb.Batch
			for j := range 64 {
				b.Put(fmt.Appendf(nil, "\x30abandoned-%08d-%02d", i, j), make([]byte, 100))
			}
			if err := w.WriteAsync(wctx, &b); err != nil {
				done <- err
				return
			}
			batches.Add(1)
		}
	}()
	for batches.Load() < 50 {
		time.Sleep(10 * time.Millisecond)
	}
	out, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m})
	if err != nil || out.TargetObjects == 0 {
		t.Fatalf("abort: %+v, %v", out, err)
	}
	var werr error
	select {
	case werr = <-done:
	case <-time.After(3 * time.Second): // the writer goes on: time to land more
		stop()
		werr = <-done
	}
	// Abandoned: the handle goes without a flush, its engine tasks stay.
	gone, cancel := context.WithCancel(ctx)
	cancel()
	_ = w.CloseContext(gone)
	time.Sleep(2 * time.Second)
	if objs, err := f.Env.Store.List(ctx, m.Target+"/"); err != nil || len(objs) != 0 {
		t.Fatalf("%d objects of the target survived Abort (the writer: %v), %v", len(objs), werr, err)
	}
	if !errors.Is(werr, slatedb.ErrFenced) {
		t.Fatalf("the writer still writing was not fenced: %v", werr)
	}
}
