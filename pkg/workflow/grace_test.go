package workflow_test

import (
	"errors"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Freeze reads the lock again after its grace: a run aborted and replaced
// within the grace fences nothing of the source the next run is using
// (LockLost, the source's SlateDB state as it was).
func TestFreezeAfterTheGraceRereadsTheLock(t *testing.T) {
	ctx, f := setup(t, 300)
	grace := 1.5
	m, err := workflow.Check(ctx, f.env, workflow.CheckInput{Online: offline(), Pointer: f.pointer, TargetVersion: 2, FreezeGrace: &grace})
	if err != nil {
		t.Fatal(err)
	}
	before, err := inplace.EngineState(ctx, f.env.Store, f.source)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := workflow.Freeze(ctx, f.env, m)
		done <- err
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := workflow.Unlock(ctx, f.env, f.pointer, m.MigrationID); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Check(ctx, f.env, workflow.CheckInput{Online: online(), Pointer: f.pointer, TargetVersion: 2}); err != nil {
		t.Fatal(err)
	}
	var ferr error
	select {
	case ferr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Freeze did not return within 30 s")
	}
	if !errors.Is(ferr, workflow.ErrLockLost) {
		t.Fatalf("Freeze of a run replaced within its grace: %v, want LockLost", ferr)
	}
	if after, err := inplace.EngineState(ctx, f.env.Store, f.source); err != nil || after != before {
		t.Fatalf("the replaced run's Freeze moved the source's SlateDB state: %s → %s (%v)", before, after, err)
	}
}
