package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/operator"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// commitCounter sets the source's next_snapshot_id to n, as its writer's
// next commit would (a passive writer: it opens, which fences the last
// one, and writes).
func commitCounter(t *testing.T, ctx context.Context, url string, n uint64) {
	t.Helper()
	commitCounterIn(t, ctx, url, format.V1, n)
}

// commitCounterIn is commitCounter on a catalog in format v.
func commitCounterIn(t *testing.T, ctx context.Context, url string, v format.Version, n uint64) {
	t.Helper()
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b slatedb.Batch
	b.Put(format.CounterKey(v, format.NameNextSnapshotID), format.EncodeCounter(v, n))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// An online run of the definition (the default: the input says nothing of
// online) carries into the new catalog what the source's writer committed
// during the copy and during VerifyCatchUp, and reports its rounds and
// write freeze in its output, the outcome message and its record.
func TestDefinitionOnline(t *testing.T) {
	ctx, f := seeded.Setup(t, 3000)
	next := uint64(900000)
	// status says the source takes writes before the fence, and is frozen
	// after it.
	var before, after operator.RunStatus
	out, pub, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, TargetVersion: 2, Shards: 4}, func(e asl.StateEvent) {
		if e.Output != nil && (e.Name == "Snapshot" || e.Name == "VerifyCatchUp") {
			next++
			commitCounter(t, ctx, f.Source, next)
		}
		var err error
		switch {
		case e.Output != nil && e.Name == "Snapshot":
			before, err = operator.Status(ctx, f.Env, f.Pointer)
		case e.Output != nil && e.Name == "Fence":
			after, err = operator.Status(ctx, f.Env, f.Pointer)
		}
		if err != nil {
			t.Errorf("status at %s: %v", e.Name, err)
		}
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if before.OnlineSource != f.Source || before.FrozenSource != "" || after.FrozenSource != f.Source || after.OnlineSource != "" {
		t.Fatalf("status after Snapshot: online %q, frozen %q; after Fence: online %q, frozen %q; want the source online, then frozen",
			before.OnlineSource, before.FrozenSource, after.OnlineSource, after.FrozenSource)
	}
	var state localrun.FinalState
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatal(err)
	}
	o := state.Verify.Flip.Online
	if o == nil || len(o.Rounds) < 3 || !o.Rounds[len(o.Rounds)-1].Last || o.FreezeSeconds <= 0 || !state.Migration.Verified {
		t.Fatalf("online report %+v (migration %+v): want rounds before and after VerifyCatchUp, the last after the fence, and the freeze", o, state.Migration)
	}
	if state.Migration.Replica != "" {
		t.Fatalf("an online run left read_replica out made replica %s: its copy would be in the freeze", state.Migration.Replica)
	}
	if len(pub.Bodies) != 1 || !strings.Contains(pub.Bodies[0], `"freeze_seconds"`) || !strings.Contains(pub.Bodies[0], `"rounds"`) {
		t.Fatalf("outcome message %v: want the rounds and the freeze", pub.Bodies)
	}
	_, rec, err := history.Find(ctx, f.Env.Store, f.Pointer, state.Migration.MigrationID)
	if err != nil || rec.Online == nil || len(rec.Online.Rounds) != len(o.Rounds) || rec.Outcome != history.Succeeded {
		t.Fatalf("record %+v: %v", rec, err)
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != state.Migration.Target {
		t.Fatalf("pointer %+v: %v", p, err)
	}
	dst, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	raw, err := dst.GetRaw(ctx, format.CounterKey(format.V2, format.NameNextSnapshotID))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := format.DecodeCounter(format.V2, raw); err != nil || got != next {
		t.Fatalf("next_snapshot_id in the new catalog: %d (%v), the source's writer committed %d last", got, err, next)
	}
	// The run's checkpoints are gone from the source.
	cps, err := slatedb.ListCheckpoints(ctx, f.Source, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if strings.Contains(cp.Name, state.Migration.MigrationID) && cp.Name != layout.FlipCheckpoint(state.Migration.MigrationID) {
			t.Fatalf("checkpoint %s (%s) left on the source", cp.ID, cp.Name)
		}
	}
}

// A commit to the source after the fence (a writer that opened past it) is
// in no round: Flip refuses (SourceChangedDuringMigration) and the pointer
// stays.
func TestDefinitionOnlineRefusesAWriteAfterTheFence(t *testing.T) {
	ctx, f := seeded.Setup(t, 1000)
	_, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, TargetVersion: 2, Shards: 2, Online: online()}, func(e asl.StateEvent) {
		if e.Output != nil && e.Name == "Fence" {
			commitCounter(t, ctx, f.Source, 777777)
		}
	})
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != workflow.ErrSourceChanged.ErrorName() {
		t.Fatalf("run: %v, want %s", err, workflow.ErrSourceChanged.ErrorName())
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != f.Source {
		t.Fatalf("pointer %+v: %v", p, err)
	}
}

// Online is the default: an input that says nothing of it plans an online
// run, but for in place (Strategy A, always offline) and a dry run (which
// fences nothing); online asked for in place is refused.
func TestOnlineIsTheDefault(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	for _, c := range []struct {
		name string
		in   workflow.CheckInput
		want bool
	}{
		{"left out", workflow.CheckInput{}, true},
		{"online", workflow.CheckInput{Online: online()}, true},
		{"offline", workflow.CheckInput{Online: seeded.Offline()}, false},
		{"dry run", workflow.CheckInput{DryRun: true}, false},
		{"in place", workflow.CheckInput{InPlace: true}, false},
	} {
		c.in.Pointer, c.in.TargetVersion = f.Pointer, 2
		rep, err := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: c.in})
		if err != nil || rep.Online != c.want {
			t.Errorf("%s: online %v, %v; want %v", c.name, rep.Online, err, c.want)
		}
	}
	in := workflow.CheckInput{Pointer: f.Pointer, TargetVersion: 2, InPlace: true, Online: online()}
	if _, err := operator.Plan(ctx, f.Env, operator.PlanInput{CheckInput: in}); runstate.ErrorName(err) != workflow.ErrBadInput.ErrorName() {
		t.Fatalf("online in place: %v (%s), want BadInput", err, runstate.ErrorName(err))
	}
}

// With --unknown-tags=drop, a record of an unknown tag committed during
// the copy is dropped by a catch-up round, and Verify's output (what the
// CLI, the record and the outcome message say) counts it with the shards'
// drops: no round drops silently.
func TestDefinitionOnlineCountsRoundDrops(t *testing.T) {
	ctx, f := seeded.Setup(t, 1000)
	out, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, TargetVersion: 2, Shards: 2, UnknownTags: "drop"}, func(e asl.StateEvent) {
		if e.Output == nil || e.Name != "Snapshot" {
			return
		}
		w, err := slatedb.OpenWriter(ctx, f.Source, slatedb.Options{Passive: true})
		if err != nil {
			t.Error(err)
			return
		}
		defer w.Close()
		var b slatedb.Batch
		b.Put([]byte{0x30, 'n', 'e', 'w'}, []byte("a newer writer's record"))
		if err := w.Write(ctx, &b); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var state localrun.FinalState
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatal(err)
	}
	if state.Verify.Dropped["tag 0x30"] != 1 {
		t.Fatalf("Verify's drops %v (carried %v): want the round's one record of tag 0x30", state.Verify.Dropped, state.Verify.Carried)
	}
}
