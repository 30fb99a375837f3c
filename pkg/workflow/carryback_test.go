package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// flipped runs an online migration of f's catalog (a rebuild when to is
// the source's format) and returns the new catalog the pointer names,
// checking that the flip pinned both catalogs.
func flipped(t *testing.T, ctx context.Context, f seeded.Fixture, in workflow.CheckInput) (string, string) {
	t.Helper()
	in.Pointer = f.Pointer
	out, _, err := runDefinition(t, ctx, f, in, nil)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	var state localrun.FinalState
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatal(err)
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != state.Migration.Target || p.FlipPoint == nil {
		t.Fatalf("pointer after the flip %+v: %v; want the target, pinned", p, err)
	}
	for _, url := range []string{f.Source, p.Catalog} {
		if !hasCheckpoint(t, ctx, url, layout.FlipCheckpoint(state.Migration.MigrationID)) {
			t.Fatalf("%s has no flip pin", url)
		}
	}
	return p.Catalog, state.Migration.MigrationID
}

func hasCheckpoint(t *testing.T, ctx context.Context, url, name string) bool {
	t.Helper()
	cps, err := slatedb.ListCheckpoints(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if cp.Name == name {
			return true
		}
	}
	return false
}

// deleteSome deletes one data key of the catalog at url (a passive writer:
// it fences the last one, as RockLake's open would).
func deleteSome(t *testing.T, ctx context.Context, url string) string {
	t.Helper()
	var key string
	for k := range kvscan.Dump(t, url) {
		if k[0] != 0xFF && (key == "" || k < key) {
			key = k
		}
	}
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	var b slatedb.Batch
	b.Delete([]byte(key))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return key
}

// A rollback after a rebuild carries back every change the new catalog
// took since the flip (before the rollback and during its rounds): the
// previous catalog ends equal to the new one key for key, the pointer
// names it again saying what it carried, and the flip's pins and the run's
// checkpoints are gone.
func TestRollbackCarriesCommitsBack(t *testing.T) {
	ctx, f := seeded.Setup(t, 2000)
	cur, fwd := flipped(t, ctx, f, workflow.CheckInput{Rebuild: true, Shards: 2})
	commitCounter(t, ctx, cur, 500001)
	gone := deleteSome(t, ctx, cur)
	// A record of a tag this binary does not know (a newer writer's):
	// carried back byte for byte.
	w, err := slatedb.OpenWriter(ctx, cur, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put([]byte{0x30, 'n', 'e', 'w'}, []byte("a newer writer's record"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	out, pub, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, Rollback: true}, func(e asl.StateEvent) {
		if e.Output != nil && e.Name == "CatchUp" && !strings.Contains(string(e.Output), `"fenced":true`) {
			commitCounter(t, ctx, cur, 500002) // RockLake goes on committing before the fence
		}
	})
	if err != nil {
		t.Fatalf("rollback: %v", err)
	}
	var state localrun.FinalState
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatal(err)
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != f.Source || p.RolledBack == nil || p.RolledBack.Of != fwd || p.RolledBack.By != state.Migration.MigrationID || p.RolledBack.Keys < 2 || p.FlipPoint != nil {
		t.Fatalf("pointer after the rollback %+v (rolled back %+v): %v; want the source again, saying it rolled back %s", p, p.RolledBack, err, fwd)
	}
	want, got := kvscan.Dump(t, cur), kvscan.Dump(t, f.Source)
	kvscan.Same(t, "the previous catalog after the rollback", want, got)
	if _, ok := got[gone]; ok {
		t.Fatalf("key %x deleted after the flip is back in the previous catalog", gone)
	}
	if got["\x30new"] != "a newer writer's record" {
		t.Fatalf("the unknown tag's record in the previous catalog: %q", got["\x30new"])
	}
	raw := got[string(format.CounterKey(format.V1, format.NameNextSnapshotID))]
	if n, err := format.DecodeCounter(format.V1, []byte(raw)); err != nil || n != 500002 {
		t.Fatalf("next_snapshot_id in the previous catalog: %d (%v), want the last commit's 500002", n, err)
	}
	if state.Verify.Flip.CarriedKeys != p.RolledBack.Keys || len(pub.Bodies) != 1 {
		t.Fatalf("flip output %+v, messages %v", state.Verify.Flip, pub.Bodies)
	}
	_, rec, err := history.Find(ctx, f.Env.Store, f.Pointer, state.Migration.MigrationID)
	if err != nil || rec.Kind != history.KindRollback || rec.Outcome != history.Succeeded || !strings.Contains(strings.Join(rec.Notes, ";"), "rollback of migration "+fwd) {
		t.Fatalf("record %+v: %v", rec, err)
	}
	for _, url := range []string{f.Source, cur} {
		cps, err := slatedb.ListCheckpoints(ctx, url, slatedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range cps {
			if strings.Contains(cp.Name, fwd) || strings.Contains(cp.Name, state.Migration.MigrationID) {
				t.Fatalf("checkpoint %s left on %s", cp.Name, url)
			}
		}
	}
	l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, "")
	if err != nil || l.MigrationID != "" {
		t.Fatalf("lock after the rollback %+v: %v", l, err)
	}
}

// A previous catalog that took a write since the flip is never written:
// the rollback run refuses (PreviousCatalogChanged) before it writes, the
// pointer and both catalogs stay as they were, and the lock is free.
func TestRollbackRefusesAChangedPreviousCatalog(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	cur, _ := flipped(t, ctx, f, workflow.CheckInput{Rebuild: true})
	commitCounter(t, ctx, f.Source, 424242)
	before := kvscan.Dump(t, f.Source)
	_, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, Rollback: true}, nil)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != workflow.ErrPreviousCatalogChanged.ErrorName() {
		t.Fatalf("rollback: %v, want %s", err, workflow.ErrPreviousCatalogChanged.ErrorName())
	}
	kvscan.Same(t, "the previous catalog after a refused rollback", before, kvscan.Dump(t, f.Source))
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != cur {
		t.Fatalf("pointer %+v: %v", p, err)
	}
	l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, "")
	if err != nil || l.MigrationID != "" {
		t.Fatalf("lock after a refused rollback %+v: %v", l, err)
	}
}

// A rollback that fails after its rounds wrote (a commit after its fence:
// Flip refuses) is aborted: the previous catalog is put back as its pin,
// the pointer stays on the current catalog, and a rollback run again
// carries everything back.
func TestRollbackAbortedStartsOver(t *testing.T) {
	ctx, f := seeded.Setup(t, 1000)
	cur, _ := flipped(t, ctx, f, workflow.CheckInput{Rebuild: true})
	atFlip := kvscan.Dump(t, f.Source)
	commitCounter(t, ctx, cur, 600001)
	_, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, Rollback: true}, func(e asl.StateEvent) {
		if e.Output != nil && e.Name == "Fence" {
			commitCounter(t, ctx, cur, 600002)
		}
	})
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != workflow.ErrSourceChanged.ErrorName() {
		t.Fatalf("rollback: %v, want %s", err, workflow.ErrSourceChanged.ErrorName())
	}
	kvscan.Same(t, "the previous catalog after an aborted rollback", atFlip, kvscan.Dump(t, f.Source))
	if p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer); err != nil || p.Catalog != cur {
		t.Fatalf("pointer after an aborted rollback %+v: %v", p, err)
	}
	if _, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, Rollback: true}, nil); err != nil {
		t.Fatalf("rollback again: %v", err)
	}
	kvscan.Same(t, "the previous catalog after the second rollback", kvscan.Dump(t, cur), kvscan.Dump(t, f.Source))
}

// The rollback of a format change carries the format-2 catalog's commits
// back in format 1: after a v1→v2 migration (and after an in-place one, to
// its way back), a commit on the v2 catalog is in the v1 catalog the
// pointer names after the rollback, which equals the v2 catalog taken down
// to v1 key for key (DigestCanonical: the keys the rounds never wrote keep
// their format-1 bytes).
func TestRollbackOfAFormatChange(t *testing.T) {
	for _, c := range []struct {
		name string
		in   workflow.CheckInput
	}{
		{"export-import", workflow.CheckInput{TargetVersion: 2, Shards: 2}},
		{"in-place", workflow.CheckInput{TargetVersion: 2, InPlace: true, Online: seeded.Offline()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, f := seeded.Setup(t, 1500)
			c.in.Pointer = f.Pointer
			out, _, err := runDefinition(t, ctx, f, c.in, nil)
			if err != nil {
				t.Fatalf("migrate: %v", err)
			}
			cur, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
			if err != nil || cur.FormatVersion != format.V2 || cur.FlipPoint == nil {
				t.Fatalf("pointer after the migration %+v: %v (%s)", cur, err, out)
			}
			commitCounterIn(t, ctx, cur.Catalog, format.V2, 700001)
			back, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Pointer: f.Pointer, Rollback: true}, nil)
			if err != nil {
				t.Fatalf("rollback: %v", err)
			}
			var state localrun.FinalState
			if err := json.Unmarshal(back, &state); err != nil {
				t.Fatal(err)
			}
			want := f.Source
			if c.in.InPlace {
				want, _ = layout.WayBackOf(cur)
			}
			p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
			if err != nil || p.Catalog != want || p.FormatVersion != format.V1 || p.RolledBack == nil {
				t.Fatalf("pointer after the rollback %+v: %v; want %s in v1", p, err, want)
			}
			raw := kvscan.Dump(t, want)[string(format.CounterKey(format.V1, format.NameNextSnapshotID))]
			if n, err := format.DecodeCounter(format.V1, []byte(raw)); err != nil || n != 700001 {
				t.Fatalf("next_snapshot_id in %s: %d (%v), want the v2 commit's 700001", want, n, err)
			}
			opts := shard.CatchUpOptions{From: format.V2, To: format.V1}
			got, err := shard.DigestCanonical(ctx, want, opts)
			if err != nil {
				t.Fatal(err)
			}
			c, err := catalog.Open(ctx, cur.Catalog, catalog.Options{Expect: format.V2})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			down, err := shard.DigestTransformed(ctx, c, format.V1, migration.UnknownFail)
			if err != nil {
				t.Fatal(err)
			}
			if cmp := shard.Compare(got, down); !cmp.Match {
				t.Fatalf("%s after the rollback is not the v2 catalog taken down to v1: %v", want, cmp.Diff)
			}
		})
	}
}

// The rollback state machine carries commits back: its one-step Rollback
// says carry, and its child execution of the migration definition (the
// rollback run) carries the new catalog's commit into the previous catalog
// and flips back; the notice goes out.
func TestRollbackDefinitionCarries(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	cur, fwd := flipped(t, ctx, f, workflow.CheckInput{Rebuild: true})
	commitCounter(t, ctx, cur, 800001)
	pub := &seeded.Published{}
	out, states, err := runRollback(t, ctx, f, workflow.RollbackInput{Pointer: f.Pointer}, pub.Publish)
	if err != nil {
		t.Fatalf("rollback definition: %v", err)
	}
	if !slices.Contains(states, "CarryBack") {
		t.Fatalf("states %v: want CarryBack", states)
	}
	p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != f.Source || p.RolledBack == nil || p.RolledBack.Of != fwd {
		t.Fatalf("pointer after the rollback definition %+v: %v (%s)", p, err, out)
	}
	kvscan.Same(t, "the previous catalog after the rollback definition", kvscan.Dump(t, cur), kvscan.Dump(t, f.Source))
	if len(pub.Subjects) == 0 || !strings.Contains(pub.Subjects[len(pub.Subjects)-1], "rollback done") {
		t.Fatalf("notices %v", pub.Subjects)
	}
}
