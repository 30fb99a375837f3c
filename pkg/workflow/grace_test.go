package workflow_test

import (
	"errors"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Freeze reads the lock again after its grace: a run aborted and replaced
// within the grace fences nothing of the source the next run is using
// (LockLost, the source's SlateDB state as it was).
func TestFreezeAfterTheGraceRereadsTheLock(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	grace := 1.5
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, FreezeGrace: &grace})
	if err != nil {
		t.Fatal(err)
	}
	before, err := inplace.EngineState(ctx, f.Env.Store, f.Source)
	if err != nil {
		t.Fatal(err)
	}
	// A live supervisor that has not acknowledged yet holds Freeze.
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "sup-1", Role: presence.Follower}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := workflow.Freeze(ctx, f.Env, m)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := runstate.Unlock(ctx, f.Env, f.Pointer, m.MigrationID); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: online(), Pointer: f.Pointer, TargetVersion: 2}); err != nil {
		t.Fatal(err)
	}
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "sup-1", Role: presence.Follower, Acked: m.MigrationID}); err != nil {
		t.Fatal(err)
	}
	var ferr error
	select {
	case ferr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Freeze did not return within 30 s")
	}
	if !errors.Is(ferr, lock.ErrLost) {
		t.Fatalf("Freeze of a run replaced within its grace: %v, want LockLost", ferr)
	}
	if after, err := inplace.EngineState(ctx, f.Env.Store, f.Source); err != nil || after != before {
		t.Fatalf("the replaced run's Freeze moved the source's SlateDB state: %s → %s (%v)", before, after, err)
	}
}

// Freeze waits for the live supervisors, not for a timer: with none it
// fences at once whatever the grace; a live one that does not acknowledge
// within the grace fails it (ServersNotAcknowledged, naming it) with the
// source untouched; one that went stale is not waited for.
func TestFreezeWaitsForAcknowledgementsNotTimers(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	grace := 20.0
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, FreezeGrace: &grace})
	if err != nil {
		t.Fatal(err)
	}
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "gone", Role: presence.Follower, StaleAfterSeconds: 0.1}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if m, err = workflow.Freeze(ctx, f.Env, m); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("Freeze with no live supervisor took %s: it waited on the grace", took)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatal(err)
	}

	short := 1.0
	m, err = workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, FreezeGrace: &short})
	if err != nil {
		t.Fatal(err)
	}
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "stuck", Role: presence.Follower, Catalog: f.Source, Mode: "writer"}); err != nil {
		t.Fatal(err)
	}
	before, err := inplace.EngineState(ctx, f.Env.Store, f.Source)
	if err != nil {
		t.Fatal(err)
	}
	_, err = workflow.Freeze(ctx, f.Env, m)
	if !errors.Is(err, presence.ErrNotAcknowledged) || !strings.Contains(err.Error(), "stuck") {
		t.Fatalf("Freeze with a live supervisor that never acknowledges: %v, want ServersNotAcknowledged naming it", err)
	}
	if after, err := inplace.EngineState(ctx, f.Env.Store, f.Source); err != nil || after != before {
		t.Fatalf("a refused Freeze moved the source: %s → %s (%v)", before, after, err)
	}
}

// Two pointers sharing a staging location never share a run's directory:
// a Check whose migration id another pointer's run already owns there is
// refused (StagingTaken) before the lock is taken; a retried Check of the
// same pointer finds its own.
func TestStagingBelongsToOnePointer(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	id := "m-shared"
	st := layout.Staging{Root: f.Env.Staging, MigrationID: id}
	if _, err := f.Env.Store.Put(ctx, st.Owner(), []byte(`{"pointer":"s3://rocklake/other/CURRENT","migration_id":"m-shared"}`)); err != nil {
		t.Fatal(err)
	}
	_, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, MigrationID: id})
	if !errors.Is(err, runstate.ErrStagingTaken) || !strings.Contains(err.Error(), "s3://rocklake/other/CURRENT") {
		t.Fatalf("Check with another pointer's staging: %v, want StagingTaken naming it", err)
	}
	if l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, ""); err != nil || l.Held(time.Now()) {
		t.Fatalf("a refused Check took the lock: %+v (%v)", l, err)
	}
	if _, err := f.Env.Store.Put(ctx, st.Owner(), []byte(`{"pointer":"`+f.Pointer+`","migration_id":"m-shared"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, MigrationID: id}); err != nil {
		t.Fatalf("Check of the pointer that owns the staging: %v", err)
	}
}

// A reader copy a supervisor left when it died (its presence record gone
// stale) is drift, and cleanup removes it and its claim; a live
// supervisor's copy is neither.
func TestCleanupRemovesADeadSupervisorsCopy(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	copyFor := func(sup string) string {
		url, err := layout.ReaderCopy(f.Source, sup, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := claim.Create(ctx, f.Env.Store, claim.Claim{Pointer: f.Pointer, Catalog: url, Kind: claim.KindReaderCopy, Source: f.Source,
			MigrationID: path.Base(url), Created: time.Now(), CreatedBy: sup}); err != nil {
			t.Fatal(err)
		}
		v, err := slatedb.TakeView(ctx, f.Source, slatedb.CheckpointOptions{Lifetime: time.Minute}, slatedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := slatedb.CopyView(ctx, f.Source, v, url, slatedb.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := slatedb.DeleteCheckpoint(ctx, f.Source, v.Checkpoint, slatedb.Options{}); err != nil {
			t.Fatal(err)
		}
		return url
	}
	dead, live := copyFor("dead"), copyFor("live")
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "dead", Role: presence.Reader, Catalog: dead, StaleAfterSeconds: 0.1}); err != nil {
		t.Fatal(err)
	}
	if err := presence.Put(ctx, f.Env.Store, f.Pointer, presence.Record{ID: "live", Role: presence.Reader, Catalog: live}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	out, err := operator.Cleanup(ctx, f.Env, operator.CleanupInput{Pointer: f.Pointer, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 || out.Items[0].Kind != drift.KindOrphanReaderCopy || out.Items[0].Catalog != dead || out.Items[0].Action != operator.CleanupDeleted {
		t.Fatalf("cleanup: %+v, want the dead supervisor's copy %s deleted", out.Items, dead)
	}
	if objs, _ := f.Env.Store.List(ctx, dead+"/"); len(objs) != 0 {
		t.Fatalf("%d objects left of the dead supervisor's copy", len(objs))
	}
	if _, err := claim.Read(ctx, f.Env.Store, f.Pointer, path.Base(dead)); !errors.Is(err, claim.ErrNoClaim) {
		t.Fatalf("the dead copy's claim: %v, want it withdrawn", err)
	}
	if objs, _ := f.Env.Store.List(ctx, live+"/manifest/"); len(objs) == 0 {
		t.Fatal("the live supervisor's copy was touched")
	}
}

// Import confirms the lock between shards: a run whose lock was taken over
// while it imports stops within one shard (LockLost), not at its next call.
func TestImportStopsWithinAShardOfLosingTheLock(t *testing.T) {
	ctx, f := seeded.Setup(t, 4000)
	const shards = 16
	m := frozen(t, ctx, f, shards)
	for i := range shards {
		if _, err := workflow.ExportTransformShard(ctx, f.Env, workflow.ShardInput{MigrationID: m.MigrationID, Index: i}); err != nil {
			t.Fatal(err)
		}
	}
	env := f.Env
	env.Progress.Import = new(shard.Progress)
	go func() {
		for ctx.Err() == nil && env.Progress.Import.ShardsDone.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		// Taken over: the lease ran out, another run took it.
		_, _ = runstate.Unlock(ctx, f.Env, f.Pointer, m.MigrationID)
	}()
	out, err := workflow.Import(ctx, env, m)
	done := env.Progress.Import.ShardsDone.Load()
	if !errors.Is(err, lock.ErrLost) || out.Done {
		t.Fatalf("Import after its lock was lost: %+v, %v; want LockLost", out, err)
	}
	if done >= shards-1 {
		t.Fatalf("Import went on for %d of %d shards after losing its lock", done, shards)
	}
	t.Logf("stopped after %d of %d shards: %v", done, shards, err)
}
