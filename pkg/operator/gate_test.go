package operator_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/gate"
	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// The Gate state's wait fits in the execution, whose timeout the lock's
// lease covers, and its failure (abort, timeout) goes to Abort.
func TestGateStateFitsTheLease(t *testing.T) {
	var def struct {
		States map[string]struct {
			Resource       string
			TimeoutSeconds int
			Catch          []struct {
				ErrorEquals []string
				Next        string
			}
			Next string
		}
	}
	if err := json.Unmarshal(statemachine.Migration, &def); err != nil {
		t.Fatal(err)
	}
	g := def.States["Gate"]
	if !strings.HasSuffix(g.Resource, ".waitForTaskToken") || g.Next != "Flip" {
		t.Fatalf("Gate = %+v", g)
	}
	exec, err := runstate.DefinitionTimeout()
	if err != nil {
		t.Fatal(err)
	}
	lease, err := runstate.Env{}.LockLease()
	if err != nil {
		t.Fatal(err)
	}
	if time.Duration(g.TimeoutSeconds)*time.Second != gate.Timeout || gate.Timeout >= exec || lease <= exec {
		t.Fatalf("the Gate's TimeoutSeconds %d, GateTimeout %v, execution timeout %v, lease %v: the gate must time out within the execution, and the lease outlast it", g.TimeoutSeconds, gate.Timeout, exec, lease)
	}
	if len(g.Catch) != 1 || g.Catch[0].ErrorEquals[0] != "States.ALL" || g.Catch[0].Next != "GateFailed" {
		t.Fatalf("the Gate's Catch = %+v, want States.ALL → GateFailed", g.Catch)
	}
	if f := def.States["GateFailed"]; f.Next != "Abort" {
		t.Fatalf("GateFailed = %+v, want it to go on to Abort", f)
	}
}

// postpone runs a migration with postpone_flip to its gate, as
// `migrate --postpone-flip` does (localrun.Run), which records the suspended
// run there.
func postpone(t *testing.T, ctx context.Context, f seeded.Fixture, pub *seeded.Published) gate.Record {
	t.Helper()
	rep, err := localrun.Run(ctx, f.Env, localrun.Options{
		Check: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, PostponeFlip: true, FreezeGrace: seeded.NoGrace()},
		Topic: seeded.Topic, Publish: pub.Publish,
	})
	if err != nil || rep.Gate == nil || rep.Gate.Suspended == nil || rep.Gate.Suspended.State != "Gate" {
		t.Fatalf("postponed run: %+v, %v, want suspended at Gate", rep, err)
	}
	if rep.Outcome != "waiting at the gate for approve or abort" || !strings.Contains(rep.GateHow, "rocklake-migrate approve "+rep.MigrationID) {
		t.Fatalf("postponed run's report: %+v", rep)
	}
	return *rep.Gate
}

// postpone → the run stops at the gate with the target verified, the
// source frozen (RockLake's writer fenced, the checkpoint held), the
// pointer unchanged and the lock held past the gate's timeout; approve →
// flipped, lock released, one success message; then approve and abort are
// refused, as are an unknown id and another pointer.
func TestGateApproveFlips(t *testing.T) {
	ctx, f := seeded.Setup(t, 400)
	// RockLake's writer, open before the migration.
	rl, err := catalog.OpenWriter(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.Close()
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	pub := &seeded.Published{}
	rec := postpone(t, ctx, f, pub)
	m := rec.Migration

	var b slatedb.Batch
	b.Put([]byte{0x30, 9}, []byte("a commit at the gate"))
	if err := rl.Write(ctx, &b); !errors.Is(err, slatedb.ErrFenced) {
		t.Fatalf("RockLake's writer at the gate: %v, want ErrFenced", err)
	}
	if p, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != f.Source || ref.ETag != before.ETag {
		t.Fatalf("the pointer moved at the gate: %+v", p)
	}
	c, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatalf("the target at the gate: %v", err)
	}
	c.Close()
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 1 {
		t.Fatalf("%d checkpoints on the source at the gate, want Freeze's", n)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != m.MigrationID || l.ExpiresAt.Before(rec.ExpiresAt) {
		t.Fatalf("lock at the gate %+v; the gate expires %v", l, rec.ExpiresAt)
	}
	if !rec.Local || rec.TaskToken == "" || rec.Suspended == nil || rec.ExpiresAt.Sub(rec.OpenedAt) != gate.Timeout {
		t.Fatalf("gate record = %+v", rec)
	}
	how := gate.Instructions(rec)
	if !strings.Contains(how, "rocklake-migrate approve "+m.MigrationID+" --pointer "+f.Pointer) || strings.Contains(how, "send-task-success") {
		t.Fatalf("instructions of a local gate:\n%s", how)
	}
	if len(pub.Subjects) != 1 || pub.Subjects[0] != gate.Subject(m.MigrationID) || pub.Bodies[0] != how {
		t.Fatalf("notifications at the gate: %v, want the gate's message", pub.Subjects)
	}

	opts := operator.GateOptions{By: "ops", Pointer: f.Pointer, Publish: pub.Publish}
	if _, err := operator.Approve(ctx, f.Env, "m-unknown", opts); !errors.Is(err, gate.ErrNotAtGate) {
		t.Fatalf("approve of an unknown migration: %v", err)
	}
	other := opts
	other.Pointer = "s3://rocklake/OTHER"
	if _, err := operator.Approve(ctx, f.Env, m.MigrationID, other); !errors.Is(err, gate.ErrNotAtGate) {
		t.Fatalf("approve through another pointer: %v", err)
	}
	res, err := operator.Approve(ctx, f.Env, m.MigrationID, opts)
	if err != nil {
		t.Fatalf("approve: %v", err)
	}
	var out struct {
		Gate struct {
			ApprovedBy string `json:"approved_by"`
		} `json:"gate"`
		localrun.FinalState
	}
	if err := json.Unmarshal(res.Output, &out); err != nil || out.Gate.ApprovedBy != "ops" || out.Verify.Flip.PointerVersionID == "" {
		t.Fatalf("approve output %s: %v", res.Output, err)
	}
	p, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != m.Target || ref.VersionID != out.Verify.Flip.PointerVersionID {
		t.Fatalf("pointer after approve: %+v %+v, %v", p, ref, err)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
		t.Fatalf("lock after approve: %+v", l)
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left after approve", n)
	}
	if len(pub.Subjects) != 2 || pub.Subjects[1] != "rocklake-migrate: migration succeeded" {
		t.Fatalf("notifications = %v", pub.Subjects)
	}
	for _, again := range []func(context.Context, runstate.Env, string, operator.GateOptions) (operator.GateResult, error){operator.Approve, operator.AbortGate} {
		if _, err := again(ctx, f.Env, m.MigrationID, opts); !errors.Is(err, runstate.ErrDecided) || !strings.Contains(err.Error(), "approved") {
			t.Fatalf("after approve: %v, want MigrationDecided", err)
		}
	}
	if p2, ref2, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p2.Catalog != m.Target || ref2 != ref {
		t.Fatal("a refused command moved the pointer")
	}
}

// postpone → abort: the new catalog, staging and checkpoint removed, the
// pointer unchanged, the lock released, the source open to RockLake's
// writes again, one failure message; approve or abort after it refused.
func TestGateAbortCleansUp(t *testing.T) {
	ctx, f := seeded.Setup(t, 400)
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	pub := &seeded.Published{}
	rec := postpone(t, ctx, f, pub)
	m := rec.Migration
	opts := operator.GateOptions{By: "ops", Pointer: f.Pointer, Publish: pub.Publish}
	res, err := operator.AbortGate(ctx, f.Env, m.MigrationID, opts)
	if err != nil {
		t.Fatalf("abort: %v", err)
	}
	if res.Abort == nil || res.Abort.TargetObjects == 0 || res.Abort.StagingObjects == 0 {
		t.Fatalf("abort removed %+v", res.Abort)
	}
	if p, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != f.Source || ref.ETag != before.ETag {
		t.Fatalf("abort moved the pointer: %+v", p)
	}
	if _, err := catalog.Open(ctx, m.Target, catalog.Options{}); !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("target after abort: %v", err)
	}
	if objs, err := f.Env.Store.List(ctx, layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}.Prefix()); err != nil || len(objs) != 0 {
		t.Fatalf("staging after abort: %d objects, %v", len(objs), err)
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left after abort", n)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
		t.Fatalf("lock after abort: %+v", l)
	}
	if len(pub.Subjects) != 2 || pub.Subjects[1] != "rocklake-migrate: migration failed" || !strings.Contains(pub.Bodies[1], gate.NameAbortedByOperator) {
		t.Fatalf("notifications = %v %v", pub.Subjects, pub.Bodies)
	}
	// Unfrozen: RockLake's next writer commits.
	w, err := catalog.OpenWriter(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatalf("RockLake's writer after abort: %v", err)
	}
	var b slatedb.Batch
	b.Put([]byte{0x30, 9}, []byte("a commit after the abort"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatalf("a write after abort: %v", err)
	}
	w.Close()
	for _, again := range []func(context.Context, runstate.Env, string, operator.GateOptions) (operator.GateResult, error){operator.Approve, operator.AbortGate} {
		if _, err := again(ctx, f.Env, m.MigrationID, opts); !errors.Is(err, runstate.ErrDecided) || !strings.Contains(err.Error(), "aborted") {
			t.Fatalf("after abort: %v, want MigrationDecided", err)
		}
	}
	// The Gate step refuses a migration without its lock.
	if _, err := workflow.Gate(ctx, f.Env, workflow.GateInput{Migration: runstate.Migration{Run: runstate.Run{MigrationID: "m-lockless", Pointer: f.Pointer}}, TaskToken: "t"}); !errors.Is(err, lock.ErrLost) || runstate.ErrorName(err) != "LockLost" {
		t.Fatalf("a gate without the lock: %v", err)
	}
}

// A write to the source while the migration waits makes approve refuse
// (Flip: SourceChangedDuringMigration) and the definition abort; an
// approve after the gate's timeout aborts instead of flipping.
func TestGateApproveRefusedAfterAWriteOrTheTimeout(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	pub := &seeded.Published{}
	opts := operator.GateOptions{By: "ops", Pointer: f.Pointer, Publish: pub.Publish}

	rec := postpone(t, ctx, f, pub)
	if err := seeded.Commit(ctx, f.Source); err != nil {
		t.Fatal(err)
	}
	res, err := operator.Approve(ctx, f.Env, rec.Migration.MigrationID, opts)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != workflow.ErrSourceChanged.ErrorName() {
		t.Fatalf("approve after a write at the gate: %v", err)
	}
	if res.Abort == nil || res.Abort.TargetObjects == 0 {
		t.Fatalf("the refused flip did not abort: %+v", res.Abort)
	}
	if p, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != f.Source || ref.ETag != before.ETag {
		t.Fatalf("the pointer moved: %+v", p)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
		t.Fatalf("lock after the refused flip: %+v", l)
	}

	// The gate's TimeoutSeconds passed (its state entered 21 hours ago).
	expired := func() gate.Record {
		t.Helper()
		rec := postpone(t, ctx, f, pub)
		rec.Suspended.EnteredTime = rec.Suspended.EnteredTime.Add(-21 * time.Hour)
		body, _ := json.Marshal(rec)
		if _, err := f.Env.Store.Put(ctx, layout.Staging{Root: f.Env.Staging, MigrationID: rec.Migration.MigrationID}.Gate(), body); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	// An abort then is what was asked for.
	rec = expired()
	if res, err := operator.AbortGate(ctx, f.Env, rec.Migration.MigrationID, opts); err != nil || res.Abort == nil || res.Abort.TargetObjects == 0 {
		t.Fatalf("abort after the gate's timeout: %+v, %v", res.Abort, err)
	}
	rec = expired()
	st := layout.Staging{Root: f.Env.Staging, MigrationID: rec.Migration.MigrationID}
	res, err = operator.Approve(ctx, f.Env, rec.Migration.MigrationID, opts)
	if !errors.Is(err, gate.ErrGateTimedOut) || runstate.ErrorName(err) != "GateTimedOut" {
		t.Fatalf("approve after the gate's timeout: %v", err)
	}
	if res.Abort == nil || res.Abort.TargetObjects == 0 {
		t.Fatalf("the timed-out gate did not abort: %+v", res.Abort)
	}
	if p, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != f.Source || ref.ETag != before.ETag {
		t.Fatalf("the pointer moved: %+v", p)
	}
	if _, _, err := f.Env.Store.Get(ctx, st.Gate()); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the gate record after the abort: %v", err)
	}
}

// Issue 24 item 5: the pointer moved while the run waited at the gate (a
// rollback, an operator): approve's Flip refuses before it decides, the
// definition's Abort removes the target and frees the lock, abort then has
// nothing left to do, and the next migration starts at once.
func TestGateApproveAfterThePointerMovedEndsTheRun(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	pub := &seeded.Published{}
	opts := operator.GateOptions{By: "ops", Pointer: f.Pointer, Publish: pub.Publish}
	rec := postpone(t, ctx, f, pub)
	m := rec.Migration
	seeded.MovePointer(t, ctx, f, "operator")
	res, err := operator.Approve(ctx, f.Env, m.MigrationID, opts)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != "PointerConflict" {
		t.Fatalf("approve after the pointer moved: %v", err)
	}
	if res.Abort == nil || res.Abort.TargetObjects == 0 {
		t.Fatalf("the refused flip did not abort: %+v (%v)", res.Abort, err)
	}
	if objs, err := f.Env.Store.List(ctx, m.Target+"/"); err != nil || len(objs) != 0 {
		t.Fatalf("the target after the refused approve: %d objects, %v", len(objs), err)
	}
	if l := seeded.LockHolder(t, ctx, f); l.MigrationID != "" {
		t.Fatalf("lock after the refused approve: %+v", l)
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left", n)
	}
	if _, err := operator.AbortGate(ctx, f.Env, m.MigrationID, opts); !errors.Is(err, runstate.ErrDecided) || !strings.Contains(err.Error(), "aborted") {
		t.Fatalf("abort after the refused approve: %v", err)
	}
	next, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 1})
	if err != nil {
		t.Fatalf("a migration right after: %v", err)
	}
	if _, err := workflow.Abort(ctx, f.Env, workflow.AbortInput{Migration: next}); err != nil {
		t.Fatal(err)
	}
}
