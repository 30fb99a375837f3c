package drift_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// env is one test's corner of the bucket: a pointer, catalogs, staging.
type env struct {
	t       *testing.T
	store   *blob.Store
	base    string
	pointer string
	staging string
}

func newEnv(t *testing.T) *env {
	base := strings.TrimSuffix(newURL(t, versioned), "/CURRENT")
	return &env{t: t, store: testenv.Store(t), base: base, pointer: base + "/CURRENT", staging: base + "/staging"}
}

// seedCatalog writes a small catalog in format v and returns its URL. The
// seed writes format 1; a format-2 catalog is that one migrated: exported,
// transformed and imported as a migration does.
func (e *env) seedCatalog(name string, v format.Version) string {
	e.t.Helper()
	ctx := testenv.Context(e.t)
	url := e.base + "/" + name
	if v == format.V1 {
		if _, err := seed.Seed(ctx, url, seed.Options{Rows: 30, Seed: 1}); err != nil {
			e.t.Fatal(err)
		}
		return url
	}
	if v != format.V2 {
		e.t.Fatalf("cannot make a format %s catalog", v)
	}
	work := e.t.TempDir()
	src := "file://" + filepath.Join(work, "src")
	if _, err := seed.Seed(ctx, src, seed.Options{Rows: 30, Seed: 1}); err != nil {
		e.t.Fatal(err)
	}
	v1, v2 := filepath.Join(work, "v1.ndjson"), filepath.Join(work, "v2.ndjson")
	if _, err := shard.Export(ctx, e.store, src, v1, shard.ExportOptions{Format: format.V1}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := migration.TransformFile(ctx, e.store, v1, v2, format.V2, "drift test", migration.Options{}); err != nil {
		e.t.Fatal(err)
	}
	if res, err := shard.Import(ctx, e.store, v2, url, shard.ImportOptions{Format: format.V2}); err != nil || !res.Done {
		e.t.Fatalf("import %s: %+v, %v", url, res, err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V2})
	if err != nil {
		e.t.Fatalf("the migrated catalog fails the v2 startup check: %v", err)
	}
	c.Close()
	return url
}

func (e *env) point(p pointer.Pointer) {
	e.t.Helper()
	if _, err := pointer.Create(testenv.Context(e.t), e.store, e.pointer, p); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) check(o drift.Options) drift.Report {
	e.t.Helper()
	o.Pointer = e.pointer
	r, err := drift.Find(testenv.Context(e.t), e.store, o)
	if err != nil {
		e.t.Fatal(err)
	}
	if r.Healthy != (len(r.Findings) == 0) || r.Pointer != e.pointer || r.CheckedAt.IsZero() || r.Findings == nil {
		e.t.Fatalf("inconsistent report: %+v", r)
	}
	// Every report survives JSON, and the text names every finding.
	b, err := json.Marshal(r)
	if err != nil {
		e.t.Fatal(err)
	}
	var back drift.Report
	if err := json.Unmarshal(b, &back); err != nil {
		e.t.Fatalf("report JSON does not decode: %v\n%s", err, b)
	}
	if len(back.Findings) != len(r.Findings) || back.Healthy != r.Healthy || back.FoundVersion != r.FoundVersion {
		e.t.Fatalf("report JSON round trip: %s", b)
	}
	text := r.Text()
	for _, f := range r.Findings {
		if !strings.Contains(text, string(f.Kind)+": ") {
			e.t.Fatalf("text rendering lacks %s:\n%s", f.Kind, text)
		}
	}
	return r
}

// kinds are the report's finding kinds, in order.
func kinds(r drift.Report) []drift.Kind {
	var ks []drift.Kind
	for _, f := range r.Findings {
		ks = append(ks, f.Kind)
	}
	return ks
}

func wantKinds(t *testing.T, r drift.Report, want ...drift.Kind) {
	t.Helper()
	got := kinds(r)
	if len(got) != len(want) {
		t.Fatalf("findings %v, want %v\n%s", got, want, r.Text())
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("findings %v, want %v\n%s", got, want, r.Text())
		}
	}
}

func TestHealthy(t *testing.T) {
	e := newEnv(t)
	cat := e.seedCatalog("cat-v2", format.V2)
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V2, MigrationID: "mig-2", PreviousCatalog: e.base + "/cat-v1", PreviousMigrationID: "mig-1"})
	// Staging kept by the current and the previous migrations, and a run
	// in progress: none of it is left over.
	for _, k := range []string{"mig-2/plan.json", "mig-1/plan.json", "mig-3/plan.json"} {
		if _, err := e.store.Put(testenv.Context(t), e.staging+"/"+k, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	// A young checkpoint of a run in progress, and an old one of another tool.
	for _, name := range []string{"rocklake-migrate-mig-3", "backup"} {
		if _, err := slatedb.CreateCheckpoint(testenv.Context(t), cat, slatedb.CheckpointOptions{Name: name}, slatedb.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	r := e.check(drift.Options{Expect: format.V2, Staging: e.staging, Active: "mig-3", CheckpointMaxAge: time.Hour, StagingMaxAge: time.Hour})
	wantKinds(t, r)
	if !r.Healthy || r.FoundVersion != format.V2 || r.Expected != format.V2 || r.Catalog != cat ||
		r.Current == nil || r.Current.MigrationID != "mig-2" || r.PointerVersionID == "" || r.ActiveMigration != "mig-3" {
		t.Fatalf("healthy report: %+v", r)
	}
	if !strings.Contains(r.Text(), "healthy") || !strings.Contains(r.Text(), "held by mig-3") {
		t.Fatalf("text: %s", r.Text())
	}
	// The check only reads: the pointer is where it was.
	if hist, err := pointer.History(testenv.Context(t), e.store, e.pointer); err != nil || len(hist) != 1 {
		t.Fatalf("pointer history after a check: %d, %v", len(hist), err)
	}
}

func TestVersionMismatch(t *testing.T) {
	e := newEnv(t)
	cat := e.seedCatalog("cat-v1", format.V1)
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V1, MigrationID: "initial"})
	r := e.check(drift.Options{Expect: format.V2})
	wantKinds(t, r, drift.KindVersionMismatch)
	f := r.Findings[0]
	if f.Found != format.V1 || f.Expected != format.V2 || f.Catalog != cat || r.FoundVersion != format.V1 || r.Healthy {
		t.Fatalf("mismatch finding %+v in %+v", f, r)
	}
	if !strings.Contains(f.Message, "format v1") || !strings.Contains(f.Message, "expects v2") {
		t.Fatalf("message %q should name both versions", f.Message)
	}
	b, _ := json.Marshal(f)
	if !strings.Contains(string(b), `"kind":"VersionMismatch"`) || !strings.Contains(string(b), `"found_version":1`) {
		t.Fatalf("finding JSON: %s", b)
	}

	// The same catalog checked against a release expecting v1 is healthy.
	wantKinds(t, e.check(drift.Options{Expect: format.V1}))
	// A release newer than this binary is still compared against.
	wantKinds(t, e.check(drift.Options{Expect: 3}), drift.KindVersionMismatch)
}

func TestPointerVersionDisagrees(t *testing.T) {
	e := newEnv(t)
	cat := e.seedCatalog("cat-v1", format.V1)
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V2, MigrationID: "hand-written"})
	r := e.check(drift.Options{Expect: format.V1})
	wantKinds(t, r, drift.KindPointerVersionDisagrees)
	if f := r.Findings[0]; f.Found != format.V1 || f.Expected != format.V2 {
		t.Fatalf("finding %+v", f)
	}
	// Against v2, both the catalog and the pointer are off.
	wantKinds(t, e.check(drift.Options{Expect: format.V2}), drift.KindVersionMismatch, drift.KindPointerVersionDisagrees)
}

func TestDanglingPointer(t *testing.T) {
	e := newEnv(t)
	e.point(pointer.Pointer{Catalog: e.base + "/deleted-catalog", FormatVersion: format.V2})
	r := e.check(drift.Options{Expect: format.V2})
	wantKinds(t, r, drift.KindDanglingPointer)
	if r.FoundVersion != 0 || r.Findings[0].Catalog != e.base+"/deleted-catalog" {
		t.Fatalf("dangling report %+v", r)
	}

	e2 := newEnv(t)
	e2.point(pointer.Pointer{Catalog: "s3://no-such-bucket/catalog", FormatVersion: format.V2})
	wantKinds(t, e2.check(drift.Options{Expect: format.V2}), drift.KindDanglingPointer)
}

func TestMissingVersionKey(t *testing.T) {
	e := newEnv(t)
	cat := e.base + "/half-imported"
	kvscan.Put(t, cat, []byte{0x02, 1}, []byte("row"))
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V2})
	r := e.check(drift.Options{Expect: format.V2})
	wantKinds(t, r, drift.KindMissingVersionKey)
	if r.FoundVersion != 0 {
		t.Fatalf("found version %d for a catalog without one", r.FoundVersion)
	}
}

// A version key in the documentation's protobuf form (not what RockLake
// writes, and not what it reads) is a finding of its own, not a version.
func TestBadVersionKey(t *testing.T) {
	e := newEnv(t)
	cat := e.base + "/documented-form"
	documented, err := proto.Marshal(wrapperspb.UInt64(2))
	if err != nil {
		t.Fatal(err)
	}
	kvscan.Put(t, cat, format.FormatVersionKey(), format.EncodeEnvelope(format.V1, documented))
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V2})
	r := e.check(drift.Options{Expect: format.V2})
	wantKinds(t, r, drift.KindBadVersionKey)
	if r.FoundVersion != 0 || r.Findings[0].Catalog != cat {
		t.Fatalf("bad version key report %+v", r)
	}
}

func TestLeftoverCheckpoint(t *testing.T) {
	e := newEnv(t)
	cat := e.seedCatalog("cat-v2", format.V2)
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V2})
	ctx := testenv.Context(t)
	left, err := slatedb.CreateCheckpoint(ctx, cat, slatedb.CheckpointOptions{Name: "rocklake-migrate-mig-aborted", Lifetime: 7 * 24 * time.Hour}, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []slatedb.CheckpointOptions{
		{Name: "someone-else"}, // not ours
		{Name: "rocklake-migrate-export", Lifetime: 30 * time.Minute}, // ours, but expires by itself
	} {
		if _, err := slatedb.CreateCheckpoint(ctx, cat, o, slatedb.Options{}); err != nil {
			t.Fatal(err)
		}
	}

	// Young, of the migration holding the lock: nothing to report.
	wantKinds(t, e.check(drift.Options{Expect: format.V2, Active: "mig-aborted", CheckpointMaxAge: time.Hour}))
	// Young, and no migration runs: an orphan; the export's is left to expire.
	r := e.check(drift.Options{Expect: format.V2, CheckpointMaxAge: time.Hour})
	wantKinds(t, r, drift.KindOrphanCheckpoint)
	if f := r.Findings[0]; f.CheckpointID != left.ID || f.MigrationID != "mig-aborted" || f.Catalog != cat {
		t.Fatalf("orphan checkpoint finding %+v", f)
	}

	// Two hours later, a leftover, whoever holds the lock.
	r = e.check(drift.Options{Expect: format.V2, Active: "mig-aborted", CheckpointMaxAge: time.Hour, Now: time.Now().Add(2 * time.Hour)})
	wantKinds(t, r, drift.KindLeftoverCheckpoint)
	f := r.Findings[0]
	if f.CheckpointID != left.ID || f.CheckpointName != "rocklake-migrate-mig-aborted" || f.Catalog != cat ||
		f.AgeSeconds < 7000 || f.CreatedAt == nil || f.ExpiresAt == nil {
		t.Fatalf("checkpoint finding %+v (made %+v)", f, left)
	}
	if !strings.Contains(f.Message, left.ID) {
		t.Fatalf("message should name the checkpoint: %s", f.Message)
	}
	// The default age is a day.
	wantKinds(t, e.check(drift.Options{Expect: format.V2, Active: "mig-aborted", Now: time.Now().Add(2 * time.Hour)}))
}

// The way back an in-place migration keeps beside its catalog (the catalog
// as it was, a v<N>-<id> directory) is a catalog the pointer names, not an
// unclaimed target, while and after its pointer is current; another
// migration's directory of that shape is unclaimed only if a run of this
// pointer claimed it.
func TestInPlaceWayBackIsNamed(t *testing.T) {
	e := newEnv(t)
	cat := e.seedCatalog("cat", format.V2)
	wb := e.seedCatalog("v1-m-ip", format.V1)
	e.claim("m-ip", wb, claim.KindWayBack)
	e.claim("m-old", e.seedCatalog("v1-m-old", format.V1), claim.KindTarget)
	e.seedCatalog("v1-m-unclaimed", format.V1)
	p := pointer.Pointer{Catalog: cat, FormatVersion: format.V2, MigrationID: "m-ip", PreviousCatalog: cat, PreviousMigrationID: "initial"}
	if got, ok := layout.WayBackOf(p); !ok || got != wb {
		t.Fatalf("WayBackOf(%+v) = %q, %v; want %s", p, got, ok, wb)
	}
	e.point(p)
	r := e.check(drift.Options{Expect: format.V2, Now: time.Now().Add(48 * time.Hour)})
	wantKinds(t, r, drift.KindUnclaimedTarget)
	if f := r.Findings[0]; f.MigrationID != "m-old" {
		t.Fatalf("finding %+v, want only m-old's directory", f)
	}
	// A pointer that is not in place has no way back.
	if _, ok := layout.WayBackOf(pointer.Pointer{Catalog: cat, FormatVersion: format.V2, MigrationID: "m-b", PreviousCatalog: e.base + "/old"}); ok {
		t.Fatal("a Strategy B pointer has a way back")
	}
}

// Issue 24: two pointers whose catalogs live side by side under one prefix.
// The other pointer's live catalog (v2-<its id>), its way back, and an
// operator's v1-backup all have the shape of a target, and none is this
// pointer's leftover: only what this pointer's runs claimed is. A way back
// of this pointer's that no version names (its run died after the copy) is
// reported, but never as removable, until a run released it.
func TestOnlyThisPointersClaimsAreFindings(t *testing.T) {
	e := newEnv(t)
	prod := e.seedCatalog("catalogs/prod", format.V1)
	devLive := e.seedCatalog("catalogs/v2-m-dev", format.V2)
	e.seedCatalog("catalogs/v1-m-devip", format.V1)
	e.seedCatalog("catalogs/v1-backup", format.V1)
	e.point(pointer.Pointer{Catalog: prod, FormatVersion: format.V1, MigrationID: "initial"})
	dev := &env{t: t, store: e.store, base: e.base, pointer: e.base + "/DEV"}
	dev.point(pointer.Pointer{Catalog: devLive, FormatVersion: format.V2, MigrationID: "m-dev", PreviousCatalog: e.base + "/catalogs/dev"})
	dev.claim("m-dev", devLive, claim.KindTarget)
	dev.claim("m-devip", e.base+"/catalogs/v1-m-devip", claim.KindWayBack)
	wantKinds(t, e.check(drift.Options{Expect: format.V1}))

	// A target of prod's that a pointer version named once (its claim says
	// so) is no leftover, even when no kept version names it any more.
	e.claim("m-was-live", e.seedCatalog("catalogs/v2-m-was-live", format.V2), claim.KindTarget)
	if _, err := claim.Update(testenv.Context(t), e.store, e.pointer, "m-was-live", func(c *claim.Claim) {
		c.Named = &claim.Event{By: "m-was-live", At: time.Now(), PointerVersionID: "expired"}
	}); err != nil {
		t.Fatal(err)
	}
	wantKinds(t, e.check(drift.Options{Expect: format.V1}))

	// prod's own in-place run died after copying its way back.
	wb := e.seedCatalog("catalogs/v1-m-crashed", format.V1)
	e.claim("m-crashed", wb, claim.KindWayBack)
	r := e.check(drift.Options{Expect: format.V1})
	wantKinds(t, r, drift.KindWayBackKept)
	if f := r.Findings[0]; f.Catalog != wb || f.MigrationID != "m-crashed" || f.Kind.Removable() || !strings.Contains(f.Message, "rocklake-migrate restore") {
		t.Fatalf("way back finding %+v", f)
	}
	// While its run holds the lock, it is in use.
	wantKinds(t, e.check(drift.Options{Expect: format.V1, Active: "m-crashed"}))
	// Released by a later run: removable.
	if _, err := claim.Update(testenv.Context(t), e.store, e.pointer, "m-crashed", func(c *claim.Claim) {
		c.Released = &claim.Event{By: "cleanup-x", At: time.Now()}
	}); err != nil {
		t.Fatal(err)
	}
	r = e.check(drift.Options{Expect: format.V1})
	wantKinds(t, r, drift.KindReleasedWayBack)
	if !r.Findings[0].Kind.Removable() {
		t.Fatalf("a released way back is not removable: %+v", r.Findings[0])
	}
}

func TestLeftoverStaging(t *testing.T) {
	e := newEnv(t)
	cat := e.seedCatalog("cat-v2", format.V2)
	e.point(pointer.Pointer{Catalog: cat, FormatVersion: format.V2, MigrationID: "mig-cur", PreviousCatalog: e.base + "/old", PreviousMigrationID: "mig-prev"})
	for _, k := range []string{"mig-cur/plan.json", "mig-prev/plan.json", "mig-aborted/plan.json", "mig-aborted/v1/shard-00000-of-00002.ndjson.zst", "mig-aborted/v1/shard-00001-of-00002.ndjson.zst"} {
		if _, err := e.store.Put(testenv.Context(t), e.staging+"/"+k, []byte("0123456789")); err != nil {
			t.Fatal(err)
		}
	}
	// A sibling that merely shares the prefix's spelling is not staging.
	if _, err := e.store.Put(testenv.Context(t), e.staging+"-other/x", []byte("x")); err != nil {
		t.Fatal(err)
	}
	// Young and of the running migration: nothing; of none, an orphan.
	wantKinds(t, e.check(drift.Options{Expect: format.V2, Staging: e.staging, Active: "mig-aborted"}))
	r := e.check(drift.Options{Expect: format.V2, Staging: e.staging})
	wantKinds(t, r, drift.KindOrphanStaging)
	if f := r.Findings[0]; f.MigrationID != "mig-aborted" || f.Objects != 3 || f.Prefix != e.staging+"/mig-aborted/" {
		t.Fatalf("orphan staging finding %+v", f)
	}
	r = e.check(drift.Options{Expect: format.V2, Staging: e.staging + "/", Active: "mig-aborted", StagingMaxAge: time.Hour, Now: time.Now().Add(2 * time.Hour)})
	wantKinds(t, r, drift.KindLeftoverStaging)
	f := r.Findings[0]
	if f.MigrationID != "mig-aborted" || f.Objects != 3 || f.Bytes != 30 || f.Prefix != e.staging+"/mig-aborted/" || f.LastWritten == nil {
		t.Fatalf("staging finding %+v", f)
	}
}

func TestPointerProblems(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.Put(testenv.Context(t), e.staging+"/mig-x/plan.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(48 * time.Hour)
	// No pointer: reported, and staging is still looked at (no migration is
	// current, so all of it is left over).
	r := e.check(drift.Options{Expect: format.V2, Staging: e.staging, Now: later})
	wantKinds(t, r, drift.KindPointerMissing, drift.KindLeftoverStaging)

	if _, err := e.store.Put(testenv.Context(t), e.pointer, []byte(`{"catalog":"s3://x/y"}`)); err != nil {
		t.Fatal(err)
	}
	r = e.check(drift.Options{Expect: format.V2})
	wantKinds(t, r, drift.KindBadPointer)
	if r.PointerVersionID == "" || !strings.Contains(r.Findings[0].Message, "BadPointer") {
		t.Fatalf("bad pointer report %+v", r)
	}
}

func TestOptionsRequired(t *testing.T) {
	store := testenv.Store(t)
	if _, err := drift.Find(testenv.Context(t), store, drift.Options{Expect: format.V2}); err == nil {
		t.Fatal("no pointer URL accepted")
	}
	if _, err := drift.Find(testenv.Context(t), store, drift.Options{Pointer: "s3://x/y"}); err == nil {
		t.Fatal("no expected version accepted")
	}
}
