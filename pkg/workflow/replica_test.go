package workflow_test

import (
	"context"
	"maps"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// replicaObjects counts what is under migration m's read replica.
func replicaObjects(t *testing.T, ctx context.Context, f seeded.Fixture, m runstate.Migration) int {
	t.Helper()
	url, err := layout.Replica(f.Source, m.MigrationID)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := f.Env.Store.List(ctx, url+"/")
	if err != nil {
		t.Fatal(err)
	}
	return len(objs)
}

// Issue 25: Freeze copies the frozen source into a read replica beside it
// (layout.Replica, where the servers' supervisors look), holding exactly
// the source's keys; Flip and Abort remove it, and a run asked for
// none (read_replica false) makes none.
func TestReadReplicaMadeAtFreezeAndRemovedByFlipAndAbort(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	before := dumpSource(t, ctx, f.Source)
	for _, end := range []string{"abort", "none", "flip"} {
		in := workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1, FreezeGrace: seeded.NoGrace()}
		if end == "none" {
			no := false
			in.ReadReplica = &no
		}
		m, err := workflow.Check(ctx, f.Env, in)
		if err != nil {
			t.Fatalf("%s: check: %v", end, err)
		}
		if m, err = workflow.Freeze(ctx, f.Env, m); err != nil {
			t.Fatalf("%s: freeze: %v", end, err)
		}
		want, _ := layout.Replica(f.Source, m.MigrationID)
		if end == "none" {
			if m.Replica != "" || replicaObjects(t, ctx, f, m) != 0 {
				t.Fatalf("read_replica false: replica %q made", m.Replica)
			}
			if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if m.Replica != want {
			t.Fatalf("%s: replica %q, want %s", end, m.Replica, want)
		}
		if got := dumpSource(t, ctx, want); !maps.Equal(got, before) {
			t.Fatalf("%s: the replica holds %d keys, the source %d (or they differ)", end, len(got), len(before))
		}
		switch end {
		case "flip":
			// Flip's checks read the plan Freeze wrote; the steps between
			// are runUntilVerify's, on this run.
			m = finishToVerify(t, ctx, f, m)
			out, err := workflow.Flip(ctx, f.Env, m)
			if err != nil || out.CleanupError != "" {
				t.Fatalf("flip: %+v, %v", out, err)
			}
		case "abort":
			if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
				t.Fatal(err)
			}
		}
		if n := replicaObjects(t, ctx, f, m); n != 0 {
			t.Fatalf("%s: %d objects left under the replica %s", end, n, want)
		}
		if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
			t.Fatalf("%s: the lock after: %+v", end, l)
		}
	}
}
