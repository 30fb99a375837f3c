package drift_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// orphanEnv is a pointer that migration mig-2 flipped from cat-v1 to
// v2-mig-2, while mig-run holds the lock, with what a dead run mig-dead left
// on the previous catalog, in staging and beside the catalogs.
type orphanEnv struct {
	*env
	v1, v2, deadTarget string
	deadCheckpoint     slatedb.Checkpoint
}

func newOrphanEnv(t *testing.T) orphanEnv {
	e := orphanEnv{env: newEnv(t)}
	ctx := testenv.Context(t)
	e.v1 = e.seedCatalog("cat-v1", format.V1)
	e.v2 = e.seedCatalog("v2-mig-2", format.V2)
	e.point(pointer.Pointer{Catalog: e.v1, FormatVersion: format.V1, MigrationID: "initial"})
	cur, ref, err := pointer.Read(ctx, e.store, e.pointer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Flip(ctx, e.store, e.pointer, cur.Next(e.v2, format.V2, "mig-2"), ref); err != nil {
		t.Fatal(err)
	}
	// Checkpoints: the dead run's on the previous catalog, the running
	// one's on the current, another tool's, and an export's that expires.
	for _, c := range []struct {
		url string
		o   slatedb.CheckpointOptions
	}{
		{e.v1, slatedb.CheckpointOptions{Name: layout.FreezeCheckpoint("mig-dead")}},
		{e.v2, slatedb.CheckpointOptions{Name: layout.FreezeCheckpoint("mig-run")}},
		{e.v1, slatedb.CheckpointOptions{Name: "backup"}},
		{e.v2, slatedb.CheckpointOptions{Name: layout.ExportCheckpoint, Lifetime: 6 * time.Hour}},
	} {
		cp, err := slatedb.CreateCheckpoint(ctx, c.url, c.o, slatedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.o.Name == layout.FreezeCheckpoint("mig-dead") {
			e.deadCheckpoint = cp
		}
	}
	for _, k := range []string{"mig-2/plan.json", "initial/x", "mig-run/plan.json", "mig-dead/plan.json", "mig-dead/v1/shard-00000-of-00001.ndjson.zst",
		"decisions/mig-dead", "decisions/mig-2", "decisions/mig-ancient"} {
		if _, err := e.store.Put(ctx, e.staging+"/"+k, []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	// Targets: the dead run's (a real catalog) and the running one's, each
	// claimed by its run as Import claims it; directories that only look
	// alike; and directories of the target's very shape that no run of
	// this pointer claimed (an operator's backup, another pointer's target).
	e.deadTarget = e.base + "/v2-mig-dead"
	if _, err := seed.Seed(ctx, e.deadTarget, seed.Options{Rows: 10, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"v2-mig-run/manifest/x", "v2x-mig/x", "vx-1/x", "v2-/x", "v1-backup/manifest/x", "v2-mig-elsewhere/manifest/x"} {
		if _, err := e.store.Put(ctx, e.base+"/"+k, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"mig-dead", "mig-run"} {
		e.claim(id, e.base+"/v2-"+id, claim.KindTarget)
	}
	return e
}

// claim writes the claim a run of migration id makes before it creates
// catalog.
func (e *env) claim(id, catalog string, k claim.Kind) {
	e.t.Helper()
	if _, err := claim.Create(testenv.Context(e.t), e.store, claim.Claim{Pointer: e.pointer, Catalog: catalog, Kind: k, MigrationID: id, Created: time.Now()}); err != nil {
		e.t.Fatal(err)
	}
}

// Orphans of any age are told from what the pointer, its history and the
// lock's holder use; decisions/ is never one.
func TestOrphans(t *testing.T) {
	e := newOrphanEnv(t)
	r := e.check(drift.Options{Expect: format.V2, Staging: e.staging, Active: "mig-run"})
	wantKinds(t, r, drift.KindOrphanCheckpoint, drift.KindOrphanStaging, drift.KindUnclaimedTarget)
	cp, st, tg := r.Findings[0], r.Findings[1], r.Findings[2]
	if cp.Catalog != e.v1 || cp.CheckpointID != e.deadCheckpoint.ID || cp.MigrationID != "mig-dead" || !strings.Contains(cp.Message, e.deadCheckpoint.ID) {
		t.Fatalf("orphan checkpoint %+v", cp)
	}
	if st.Prefix != e.staging+"/mig-dead/" || st.MigrationID != "mig-dead" || st.Objects != 2 || st.Bytes != 20 || !strings.Contains(st.Message, st.Prefix) {
		t.Fatalf("orphan staging %+v", st)
	}
	if tg.Catalog != e.deadTarget || tg.MigrationID != "mig-dead" || tg.Objects == 0 || !strings.Contains(tg.Message, e.deadTarget) {
		t.Fatalf("unclaimed target %+v", tg)
	}
	for _, f := range r.Findings {
		if !f.Kind.Removable() || strings.Contains(f.Prefix, "decisions") {
			t.Fatalf("finding %+v", f)
		}
	}

	// Without a running migration, its things are orphans too.
	r = e.check(drift.Options{Expect: format.V2, Staging: e.staging})
	wantKinds(t, r, drift.KindOrphanCheckpoint, drift.KindOrphanCheckpoint, drift.KindOrphanStaging, drift.KindOrphanStaging, drift.KindUnclaimedTarget, drift.KindUnclaimedTarget)
	var ids []string
	for _, f := range r.Findings {
		ids = append(ids, f.MigrationID)
	}
	if !slices.Equal(ids, []string{"mig-run", "mig-dead", "mig-dead", "mig-run", "mig-dead", "mig-run"}) {
		t.Fatalf("migrations of the findings: %v\n%s", ids, r.Text())
	}
}

// When the lock or the pointer's history cannot be read, or a version of the
// pointer is not one, the check says so and reports no orphan (but still
// the leftovers it tells by age).
func TestUndecided(t *testing.T) {
	e := newOrphanEnv(t)
	r := e.check(drift.Options{Expect: format.V2, Staging: e.staging, ActiveUnknown: "access denied"})
	wantKinds(t, r, drift.KindUndecided)
	if !strings.Contains(r.Findings[0].Message, "access denied") {
		t.Fatalf("undecided: %s", r.Findings[0].Message)
	}

	// A version that is not a pointer: what it named is unknown.
	ctx := testenv.Context(t)
	good, _, err := e.store.Get(ctx, e.pointer)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range [][]byte{[]byte(`{"catalog":"hand-written"}`), good} {
		if _, err := e.store.Put(ctx, e.pointer, body); err != nil {
			t.Fatal(err)
		}
	}
	wantKinds(t, e.check(drift.Options{Expect: format.V2, Staging: e.staging, Active: "mig-run"}), drift.KindUndecided)

	// A pointer without history (a bucket without versioning).
	plain := newEnv(t)
	plain.pointer = newURL(t, unversioned)
	if _, err := plain.store.Put(ctx, plain.pointer, good); err != nil {
		t.Fatal(err)
	}
	r = plain.check(drift.Options{Expect: format.V2, Staging: e.staging})
	wantKinds(t, r, drift.KindUndecided)
	if !strings.Contains(r.Findings[0].Message, "history") {
		t.Fatalf("undecided: %s", r.Findings[0].Message)
	}
}
