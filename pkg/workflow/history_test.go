package workflow_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Every run is recorded beside the pointer, through the definition as the
// CLI and AWS run it: a dry run, a run Check refuses (an occupied target), a
// run that fails after Freeze (a write to the source makes Flip refuse, and
// Abort records the error's name), a success and a rollback; the listing is
// newest first.
func TestRunsAreRecorded(t *testing.T) {
	ctx, f := seeded.Setup(t, 1500)
	in := workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 3, Trigger: "cli:tester"}

	dry := in
	dry.DryRun = true
	if _, _, err := runDefinition(t, ctx, f, dry, nil); err != nil {
		t.Fatalf("dry run: %v", err)
	}

	occupied := in
	occupied.MigrationID = "m-occupied"
	if _, err := seed.Seed(ctx, "s3://rocklake/catalogs/v2-m-occupied", seed.Options{Rows: 20, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runDefinition(t, ctx, f, occupied, nil); err == nil {
		t.Fatal("a run onto an occupied target succeeded")
	}

	wrote := false
	_, _, err := runDefinition(t, ctx, f, in, func(ev asl.StateEvent) {
		if ev.Name == "Verify" && !wrote {
			wrote = true
			if err := seeded.Commit(ctx, f.Source); err != nil {
				t.Error(err)
			}
		}
	})
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != workflow.ErrSourceChanged.ErrorName() {
		t.Fatalf("a run whose source moved: %v", err)
	}

	if _, _, err := runDefinition(t, ctx, f, in, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	rb, err := workflow.Rollback(ctx, f.Env, workflow.RollbackInput{Pointer: f.Pointer, Trigger: "cli:tester"})
	if err != nil || rb.HistoryError != "" {
		t.Fatalf("rollback: %+v, %v", rb, err)
	}

	runs, err := history.List(ctx, f.Env.Store, f.Pointer, 0)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		kind    history.Kind
		outcome history.Outcome
		errName string
	}
	wants := []want{ // newest first
		{history.KindRollback, history.Succeeded, ""},
		{history.KindMigrate, history.Succeeded, ""},
		{history.KindMigrate, history.Failed, workflow.ErrSourceChanged.ErrorName()},
		{history.KindMigrate, history.Failed, catalog.ErrTargetNotEmpty.ErrorName()},
		{history.KindDryRun, history.DryRunOK, ""},
	}
	if len(runs) != len(wants) {
		t.Fatalf("%d runs recorded, want %d: %+v", len(runs), len(wants), runs)
	}
	for i, w := range wants {
		r := runs[i]
		if r.ReadError != "" || r.Kind != w.kind || r.Outcome != w.outcome || r.ErrorName != w.errName || r.Trigger != "cli:tester" {
			t.Errorf("run %d: %s %s %s by %s (%s), want %s %s %s", i, r.Kind, r.Outcome, r.ErrorName, r.Trigger, r.ReadError, w.kind, w.outcome, w.errName)
		}
		if r.End.Before(r.Start) || r.End.IsZero() || (i > 0 && r.Start.After(runs[i-1].Start)) {
			t.Errorf("run %d: start %s, end %s (previous started %s)", i, r.Start, r.End, runs[i-1].Start)
		}
		if r.StateSeconds["Check"] == 0 && r.Kind != history.KindRollback {
			t.Errorf("run %d has no Check time: %v", i, r.StateSeconds)
		}
	}
	// The runs that got past Check have their work and time per state.
	for _, i := range []int{1, 2, 4} {
		r := runs[i]
		for _, s := range []string{"Freeze", "ExportTransformShard", "Import", "Finalize", "Verify"} {
			if r.StateSeconds[s] <= 0 {
				t.Errorf("run %d (%s %s): no time for %s: %v", i, r.Kind, r.Outcome, s, r.StateSeconds)
			}
		}
		if r.Rows < 1500 || r.Bytes == 0 || r.Shards != 3 || r.From != format.V1 || r.To != format.V2 || r.Source != f.Source || !strings.Contains(r.Target, "/v2-") {
			t.Errorf("run %d: %+v", i, r.Record)
		}
	}
	if runs[1].PointerVersionID == "" || runs[1].State != "Flip" {
		t.Errorf("the success: %+v", runs[1].Record)
	}
	if runs[2].State != "Flip" || !strings.Contains(runs[2].Error, "since Freeze") {
		t.Errorf("the failure does not say why: %+v", runs[2].Record)
	}
	if runs[3].State != "Check" || runs[3].ID != "m-occupied" || !strings.Contains(runs[3].Error, "v2-m-occupied") {
		t.Errorf("the refused run: %+v", runs[3].Record)
	}
	if rbRec := runs[0]; rbRec.ID != rb.RunID || rbRec.Source != runs[1].Target || rbRec.Target != f.Source || rbRec.From != format.V2 || rbRec.To != format.V1 || rbRec.PointerVersionID != rb.PointerVersionID {
		t.Errorf("the rollback: %+v, rolled back %+v", rbRec.Record, rb)
	}
	// No run is left in progress, and the lock is free.
	st, err := operator.Status(ctx, f.Env, f.Pointer)
	if err != nil || st.Running {
		t.Fatalf("status after the runs: %+v, %v", st, err)
	}
}

// A flip whose record cannot be finished still stands: the pointer moved,
// the step succeeds, and FlipOutput says what was not recorded.
func TestFlipStandsWhenItsRecordIsGone(t *testing.T) {
	ctx, f := seeded.Setup(t, 200)
	m := runUntilVerify(t, ctx, f, 1)
	if _, err := f.Env.Store.DeletePrefix(ctx, layout.HistoryDir(f.Pointer)); err != nil {
		t.Fatal(err)
	}
	out, err := workflow.Flip(ctx, f.Env, m)
	if err != nil || out.PointerVersionID == "" || !strings.Contains(out.HistoryError, "no such record") {
		t.Fatalf("flip without its record: %+v, %v", out, err)
	}
}

// Check refuses to start a run it cannot record, before anything is
// touched, and leaves the lock free.
func TestCheckRefusesAnUnrecordableRun(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	// An object named like the records' directory: on versitygw's posix
	// backend no key can go under it, so every record write fails.
	if _, err := f.Env.Store.Put(ctx, strings.TrimSuffix(layout.HistoryDir(f.Pointer), "/"), []byte("in the way")); err != nil {
		t.Fatal(err)
	}
	_, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, MigrationID: "m-blocked"})
	if !errors.Is(err, runstate.ErrHistoryUnwritable) || runstate.ErrorName(err) != runstate.ErrHistoryUnwritable.ErrorName() {
		t.Fatalf("check that cannot write its record: %v (%s)", err, runstate.ErrorName(err))
	}
	if st, err := operator.Status(ctx, f.Env, f.Pointer); err != nil || st.Running {
		t.Fatalf("the refused run kept the lock: %+v, %v", st, err)
	}
	if cps, err := slatedb.ListCheckpoints(ctx, f.Source, slatedb.Options{}); err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints: %v, %v", cps, err)
	}
}

// status of a migration in progress: the lock's holder, the run's record,
// the state from staging, the shards done and the frozen source; an
// operator's abort then ends the run as aborted.
func TestStatusShowsTheRunInProgress(t *testing.T) {
	ctx, f := seeded.Setup(t, 600)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, Trigger: "release:ev-1"})
	if err != nil {
		t.Fatal(err)
	}
	run := func(step string, in any) json.RawMessage {
		t.Helper()
		raw, _ := json.Marshal(in)
		out, err := workflow.Run(ctx, f.Env, step, raw)
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		return out
	}
	if err := json.Unmarshal(run("Freeze", m), &m); err != nil {
		t.Fatal(err)
	}
	run("ExportShard", workflow.ShardInput{MigrationID: m.MigrationID, Index: 1})
	st, err := operator.Status(ctx, f.Env, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Running || st.Lock.MigrationID != m.MigrationID || st.Record == nil || st.Record.Outcome != history.InProgress || st.Record.Trigger != "release:ev-1" {
		t.Fatalf("status: %+v (record %+v)", st, st.Record)
	}
	if st.FrozenSource != f.Source || st.Checkpoint == "" || st.ShardsTotal != 2 || st.Exported != 1 || st.Transformed != 0 ||
		!strings.Contains(st.State, "exported 1/2") || st.LastStep != "ExportShard" || len(st.Pending) != 2 {
		t.Fatalf("progress: %+v", st)
	}
	run("TransformShard", workflow.ShardInput{MigrationID: m.MigrationID, Index: 1})
	if st, err = operator.Status(ctx, f.Env, f.Pointer); err != nil || st.Transformed != 1 || len(st.Pending) != 1 || st.Pending[0] != 0 {
		t.Fatalf("after shard 1's transform: %+v, %v", st, err)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatal(err)
	}
	if st, err := operator.Status(ctx, f.Env, f.Pointer); err != nil || st.Running {
		t.Fatalf("status after the abort: %+v, %v", st, err)
	}
	runs, err := history.List(ctx, f.Env.Store, f.Pointer, 1)
	if err != nil || len(runs) != 1 || runs[0].Outcome != history.Aborted || runs[0].StateSeconds["Freeze"] <= 0 || runs[0].StateSeconds["Abort"] <= 0 {
		t.Fatalf("the aborted run: %+v, %v", runs, err)
	}
}

// InitPointer points a new pointer at a catalog in the format the catalog
// opens as, once; StatusOf shows a pointer with its versions, the run in
// progress (none) and the startup check of its catalog, whose failure is a
// status, not an error.
func TestInitPointerAndStatusOf(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	other := "s3://rocklake/OTHER"
	p, ref, err := operator.InitPointer(ctx, f.Env, other, f.Source)
	if err != nil || p.Catalog != f.Source || p.FormatVersion != format.V1 || p.MigrationID != "initial" || ref.VersionID == "" {
		t.Fatalf("init: %+v %+v, %v", p, ref, err)
	}
	if _, _, err := operator.InitPointer(ctx, f.Env, other, f.Source); err == nil {
		t.Fatal("a second init of the same pointer succeeded")
	}
	if _, _, err := operator.InitPointer(ctx, f.Env, "s3://rocklake/NONE", "s3://rocklake/catalogs/none"); err == nil {
		t.Fatal("init to a missing catalog succeeded")
	}
	st, err := operator.StatusOf(ctx, f.Env, other)
	if err != nil || st.Check != "ok" || st.Pointer.Catalog != f.Source || st.Pointer.FormatVersion != format.V1 || st.Ref.VersionID != ref.VersionID || len(st.History) != 1 || !st.History[0].Current || st.Migration.Running {
		t.Fatalf("status: %+v, %v", st, err)
	}
	gone := "s3://rocklake/GONE"
	if _, err := pointer.Create(ctx, f.Env.Store, gone, pointer.Pointer{Catalog: "s3://rocklake/catalogs/gone", FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	if st, err := operator.StatusOf(ctx, f.Env, gone); err != nil || st.Check == "ok" || st.Check == "" {
		t.Fatalf("status of a pointer to no catalog: check %q, %v", st.Check, err)
	}
	if _, err := operator.StatusOf(ctx, f.Env, "s3://rocklake/MISSING"); err == nil {
		t.Fatal("status of a missing pointer succeeded")
	}
}

// A run whose lock the operator breaks (it died) ends in the history as
// failed, Unlocked, instead of staying in progress.
func TestUnlockEndsTheDeadRunsRecord(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runstate.Unlock(ctx, f.Env, f.Pointer, m.MigrationID); err != nil {
		t.Fatal(err)
	}
	runs, err := history.List(ctx, f.Env.Store, f.Pointer, 0)
	if err != nil || len(runs) != 1 || runs[0].ID != m.MigrationID || runs[0].Outcome != history.Failed || runs[0].ErrorName != runstate.NameUnlocked || runs[0].End.IsZero() {
		t.Fatalf("the unlocked run: %+v, %v", runs, err)
	}
}

// A run whose lease ran out and whose lock the next run took over ends in
// the history as failed, LockExpired.
func TestTakeOverEndsTheExpiredRunsRecord(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	in := workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2}
	dead, err := workflow.Check(ctx, f.Env, in)
	if err != nil {
		t.Fatal(err)
	}
	stale, _ := json.Marshal(lock.Lock{MigrationID: dead.MigrationID, Owner: "dead", AcquiredAt: dead.StartedAt, ExpiresAt: time.Now().Add(-time.Minute)})
	if _, err := f.Env.Store.Put(ctx, layout.Lock(f.Pointer), stale); err != nil {
		t.Fatal(err)
	}
	next, err := workflow.Check(ctx, f.Env, in)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := history.List(ctx, f.Env.Store, f.Pointer, 0)
	if err != nil || len(runs) != 2 || runs[0].ID != next.MigrationID || runs[0].Outcome != history.InProgress ||
		runs[1].ID != dead.MigrationID || runs[1].Outcome != history.Failed || runs[1].ErrorName != runstate.NameLockExpired {
		t.Fatalf("runs: %+v, %v", runs, err)
	}
}
