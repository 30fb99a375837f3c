package main

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// cleanupSetup is a pointer in a versioned bucket on versitygw, on a seeded
// v1 catalog.
type cleanupSetup struct {
	ctx                context.Context
	store              *blob.Store
	env                runstate.Env
	src, ptr, stagingR string
}

func newCleanupSetup(t *testing.T) cleanupSetup {
	ctx, _ := s3Stack(t, 4*time.Minute)
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := cleanupSetup{ctx: ctx, store: store, src: "s3://rocklake/catalogs/prod", ptr: "s3://rocklake/CURRENT", stagingR: "s3://rocklake/migrations"}
	c.env = runstate.Env{Store: store, Staging: c.stagingR, CreatedBy: "cleanup test"}
	cli(t, "seed", "--catalog", c.src, "--rows", "300").want(t, exitOK)
	cli(t, "init-pointer", "--pointer", c.ptr, "--catalog", c.src).want(t, exitOK)
	return c
}

// crash runs migration id up to its Import and stops there, as a run whose
// every step died would: its lock, the checkpoint on the source, its staging
// and a target it claimed stay behind.
func (c cleanupSetup) crash(t *testing.T, id string) runstate.Migration {
	t.Helper()
	m, err := workflow.Check(c.ctx, c.env, workflow.CheckInput{Online: offline(), Pointer: c.ptr, TargetVersion: uint64(format.V2), MigrationID: id, Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = workflow.Freeze(c.ctx, c.env, m); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.ExportShard(c.ctx, c.env, workflow.ShardInput{MigrationID: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.TransformShard(c.ctx, c.env, workflow.ShardInput{MigrationID: id}); err != nil {
		t.Fatal(err)
	}
	if out, err := workflow.Import(c.ctx, c.env, m); err != nil || !out.Done {
		t.Fatalf("import: %+v, %v", out, err)
	}
	return m
}

// objects is every object in the bucket by URL, with its ETag.
func (c cleanupSetup) objects(t *testing.T) map[string]string {
	t.Helper()
	return seeded.Objects(t, c.ctx, c.store, "s3://rocklake/")
}

// checkpoints names the checkpoints of a catalog.
func (c cleanupSetup) checkpoints(t *testing.T, url string) []string {
	t.Helper()
	cps, err := slatedb.ListCheckpoints(c.ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cp := range cps {
		names = append(names, cp.Name)
	}
	slices.Sort(names)
	return names
}

func driftKinds(t *testing.T, r result) []drift.Kind {
	t.Helper()
	var rep drift.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("drift --json: %v\n%s", err, r.stdout)
	}
	return rep.Kinds()
}

// What a dead run leaves (a checkpoint on what is now the previous catalog,
// its staging, its target and its read replica, each claimed) is drift
// (exit 4); cleanup's dry run deletes
// nothing; --apply deletes exactly that, and drift is clean after. The
// current and previous catalogs, the live migration's staging and every
// decision marker stay.
func TestCleanupRemovesLeftovers(t *testing.T) {
	c := newCleanupSetup(t)
	dead := c.crash(t, "m-dead")
	cli(t, "unlock", "--pointer", c.ptr, "--migration-id", "m-dead").want(t, exitOK)
	cli(t, "migrate", "--pointer", c.ptr, "--to", "v2", "--shards", "2", "--dry-run", "--migration-id", "m-dry").want(t, exitOK)
	cli(t, "migrate", "--pointer", c.ptr, "--to", "v2", "--shards", "2", "--migration-id", "m-live").want(t, exitOK)
	live := strings.Replace(dead.Target, "m-dead", "m-live", 1)
	cli(t, "check", "--catalog", live, "--expect", "v2").want(t, exitOK)

	d := cli(t, "drift", "--pointer", c.ptr, "--expect", "v2", "--json")
	d.want(t, exitDrift)
	if got, want := driftKinds(t, d), []drift.Kind{drift.KindOrphanCheckpoint, drift.KindOrphanStaging, drift.KindUnclaimedTarget, drift.KindOrphanReplica}; !slices.Equal(got, want) {
		t.Fatalf("drift found %v, want %v\n%s", got, want, d.stdout)
	}
	for _, s := range []string{"rocklake-migrate-m-dead", "s3://rocklake/migrations/m-dead/", dead.Target} {
		if !strings.Contains(d.stdout, s) {
			t.Fatalf("drift does not name %s:\n%s", s, d.stdout)
		}
	}
	before := c.objects(t)
	srcDump, liveDump := rawDump(t, c.src), rawDump(t, live)
	srcCheckpoints := c.checkpoints(t, c.src)
	if !slices.Contains(srcCheckpoints, "rocklake-migrate-m-dead") {
		t.Fatalf("the dead run's checkpoint is not on the source: %v", srcCheckpoints)
	}
	for _, m := range []string{"m-dry", "m-live"} {
		if _, ok := before["s3://rocklake/migrations/decisions/"+m]; !ok {
			t.Fatalf("no decision marker of %s", m)
		}
	}

	// The dry run says what it would delete, and deletes nothing.
	r := cli(t, "cleanup", "--pointer", c.ptr)
	r.want(t, exitOK)
	if n := strings.Count(r.stdout, "would delete"); n != 4 {
		t.Fatalf("dry run lists %d items, want 4:\n%s", n, r.stdout)
	}
	if after := c.objects(t); !maps.Equal(before, after) {
		t.Fatalf("the dry run changed objects: %s", diffObjects(before, after))
	}
	if got := c.checkpoints(t, c.src); !slices.Equal(got, srcCheckpoints) {
		t.Fatalf("the dry run changed the source's checkpoints: %v → %v", srcCheckpoints, got)
	}

	r = cli(t, "cleanup", "--pointer", c.ptr, "--apply", "--json")
	r.want(t, exitOK)
	var out operator.CleanupOutput
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("cleanup --json: %v\n%s", err, r.stdout)
	}
	if len(out.Items) != 4 || !out.Apply || out.LockID == "" {
		t.Fatalf("cleanup: %+v", out)
	}
	for _, it := range out.Items {
		if it.Action != operator.CleanupDeleted || it.Deleted == 0 {
			t.Fatalf("item %+v not deleted", it)
		}
	}

	// Exactly those are gone: the staging and target prefixes (and the
	// target's claim), the checkpoint. Besides them only the lock (taken and freed) and the
	// source's manifest (the checkpoint's removal) changed.
	after := c.objects(t)
	// The dead run's read replica (issue 25) goes, by its claim.
	replica, _ := layout.Replica(c.src, "m-dead")
	if !slices.ContainsFunc(slices.Collect(maps.Keys(before)), func(u string) bool { return strings.HasPrefix(u, replica+"/manifest/") }) {
		t.Fatalf("the dead run left no read replica %s", replica)
	}
	gone := []string{"s3://rocklake/migrations/m-dead/", dead.Target + "/", layout.Claim(c.ptr, "m-dead"), replica + "/", layout.Claim(c.ptr, claim.ReplicaID("m-dead"))}
	for url, etag := range before {
		removed := slices.ContainsFunc(gone, func(p string) bool { return strings.HasPrefix(url, p) })
		_, still := after[url]
		switch {
		case removed && still:
			t.Errorf("%s left", url)
		case !removed && url != layout.Lock(c.ptr) && after[url] != etag:
			t.Errorf("%s changed or deleted", url)
		}
	}
	records := 0
	for url := range after {
		switch _, ok := before[url]; {
		case ok, strings.HasPrefix(url, c.src+"/manifest/"):
		case strings.HasPrefix(url, layout.HistoryDir(c.ptr)):
			records++ // the cleanup's record, checked below
		default:
			t.Errorf("new object %s", url)
		}
	}
	_, rec, err := history.Find(c.ctx, c.store, c.ptr, out.LockID)
	if err != nil || records != 1 || rec.Kind != history.KindCleanup || rec.Outcome != history.Succeeded ||
		!slices.Contains(rec.Notes, operator.CleanupDeleted+": 4") {
		t.Fatalf("the cleanup's record (%d new records): %+v, %v", records, rec, err)
	}
	want := slices.DeleteFunc(slices.Clone(srcCheckpoints), func(n string) bool { return n == "rocklake-migrate-m-dead" })
	if got := c.checkpoints(t, c.src); !slices.Equal(got, want) {
		t.Fatalf("source checkpoints %v, want %v", got, want)
	}
	if rawDump(t, c.src) != srcDump || rawDump(t, live) != liveDump {
		t.Fatal("the current or the previous catalog's keys changed")
	}
	lock, _, err := c.store.Get(c.ctx, layout.Lock(c.ptr))
	if err != nil || !strings.Contains(string(lock), `"released_by":"migration `+out.LockID) {
		t.Fatalf("lock after cleanup: %s, %v", lock, err)
	}

	cli(t, "drift", "--pointer", c.ptr, "--expect", "v2").want(t, exitOK)
	cli(t, "check", "--catalog", c.src, "--expect", "v1").want(t, exitOK)
	// Nothing left: a second cleanup has nothing to do, and a rollback to
	// the previous catalog still works.
	if r := cli(t, "cleanup", "--pointer", c.ptr, "--apply"); r.code != exitOK || !strings.Contains(r.stdout, "nothing left over") {
		t.Fatalf("second cleanup: %+v", r)
	}
	cli(t, "rollback", "--pointer", c.ptr).want(t, exitOK)
}

// While a migration holds the lock, cleanup refuses, in a dry run too, and
// touches nothing; once the lock is free it goes ahead.
func TestCleanupRefusesWhileMigrationRuns(t *testing.T) {
	c := newCleanupSetup(t)
	if _, err := c.store.Put(c.ctx, c.stagingR+"/m-old/plan.json", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	if _, err := workflow.Check(c.ctx, c.env, workflow.CheckInput{Online: offline(), Pointer: c.ptr, TargetVersion: uint64(format.V2), MigrationID: "m-running"}); err != nil {
		t.Fatal(err)
	}
	before := c.objects(t)
	// No pointer there (a typo): refused, and no lock object is left.
	cli(t, "cleanup", "--pointer", c.ptr+"-typo", "--apply").want(t, exitError, "CleanupUndecided", "PointerMissing")
	cli(t, "cleanup", "--pointer", c.ptr, "--apply").want(t, exitError, "MigrationInProgress", "m-running")
	cli(t, "cleanup", "--pointer", c.ptr).want(t, exitError, "MigrationInProgress", "m-running")
	if after := c.objects(t); !maps.Equal(before, after) {
		t.Fatalf("a refused cleanup changed objects: %s", diffObjects(before, after))
	}
	// drift sees the running migration and leaves its things alone.
	d := cli(t, "drift", "--pointer", c.ptr, "--expect", "v1", "--json")
	d.want(t, exitDrift)
	if got := driftKinds(t, d); !slices.Equal(got, []drift.Kind{drift.KindOrphanStaging}) || !strings.Contains(d.stdout, `"active_migration": "m-running"`) {
		t.Fatalf("drift while m-running runs: %v\n%s", got, d.stdout)
	}

	// A target whose migration decided to flip was live once, even if no
	// pointer version kept says so: cleanup keeps it. (Its run claimed it,
	// as Import does: without that claim it is nobody's leftover.)
	flipped := "s3://rocklake/catalogs/v2-m-flipped"
	for url, body := range map[string]string{flipped + "/manifest/x": "x", c.stagingR + "/decisions/m-flipped": "flip"} {
		if _, err := c.store.Put(c.ctx, url, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := claim.Create(c.ctx, c.store, claim.Claim{Pointer: c.ptr, Catalog: flipped, Kind: claim.KindTarget, MigrationID: "m-flipped", Created: time.Now()}); err != nil {
		t.Fatal(err)
	}

	cli(t, "unlock", "--pointer", c.ptr, "--migration-id", "m-running").want(t, exitOK)
	r := cli(t, "cleanup", "--pointer", c.ptr, "--apply")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "deleted OrphanStaging: staging "+c.stagingR+"/m-old/") ||
		!strings.Contains(r.stdout, "kept UnclaimedTarget: "+flipped+" (its migration flipped the pointer to it once)") {
		t.Fatalf("cleanup after unlock:\n%s", r.stdout)
	}
	if objs, err := c.store.List(c.ctx, flipped+"/"); err != nil || len(objs) != 1 {
		t.Fatalf("%s after cleanup: %d objects, %v", flipped, len(objs), err)
	}
	d = cli(t, "drift", "--pointer", c.ptr, "--expect", "v1", "--json")
	d.want(t, exitDrift)
	if got := driftKinds(t, d); !slices.Equal(got, []drift.Kind{drift.KindUnclaimedTarget}) {
		t.Fatalf("drift after cleanup: %v", got)
	}
}

func diffObjects(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "-"+k)
		} else if w != v {
			d = append(d, "~"+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "+"+k)
		}
	}
	slices.Sort(d)
	return strings.Join(d, " ")
}

// Issue 24: two deployments whose catalogs live side by side under one
// prefix (catalogs/prod behind CURRENT, catalogs/dev behind DEV). Once dev
// migrated, its live catalog catalogs/v2-<id> has the shape of a target
// beside prod's catalog; so has an operator's catalogs/v1-backup. Neither is
// prod's: drift for prod reports neither, and cleanup --apply for prod
// deletes nothing of them, nor of dev's staging (both pointers' default
// staging is …/migrations). A target prod's own dead run claimed is still
// prod's leftover, but not while another pointer beside prod's names it.
func TestCleanupKeepsAnotherDeploymentsCatalogs(t *testing.T) {
	c := newCleanupSetup(t)
	dev, devPtr := "s3://rocklake/catalogs/dev", "s3://rocklake/DEV"
	backup := "s3://rocklake/catalogs/v1-backup"
	cli(t, "seed", "--catalog", dev, "--rows", "200").want(t, exitOK)
	cli(t, "seed", "--catalog", backup, "--rows", "100").want(t, exitOK)
	cli(t, "init-pointer", "--pointer", devPtr, "--catalog", dev).want(t, exitOK)
	cli(t, "migrate", "--pointer", devPtr, "--to", "v2", "--shards", "2", "--migration-id", "m-dev").want(t, exitOK)
	devLive := "s3://rocklake/catalogs/v2-m-dev"
	cli(t, "check", "--catalog", devLive, "--expect", "v2").want(t, exitOK)
	if cl, err := claim.Read(c.ctx, c.store, devPtr, "m-dev"); err != nil || cl.Catalog != devLive || cl.Kind != claim.KindTarget || cl.Named == nil {
		t.Fatalf("dev's claim of its target: %+v, %v", cl, err)
	}

	before := c.objects(t)
	keep := func(when string) {
		t.Helper()
		after := c.objects(t)
		for url, etag := range before {
			for _, p := range []string{devLive + "/", backup + "/", dev + "/", devPtr, c.stagingR + "/m-dev/"} {
				if strings.HasPrefix(url, p) && after[url] != etag {
					t.Fatalf("%s: %s changed or deleted", when, url)
				}
			}
		}
	}
	d := cli(t, "drift", "--pointer", c.ptr, "--expect", "v1", "--json")
	d.want(t, exitOK)
	r := cli(t, "cleanup", "--pointer", c.ptr, "--apply")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "nothing left over") {
		t.Fatalf("cleanup of prod:\n%s", r.stdout)
	}
	keep("after prod's cleanup")
	cli(t, "check", "--catalog", devLive, "--expect", "v2").want(t, exitOK)
	cli(t, "drift", "--pointer", devPtr, "--expect", "v2").want(t, exitOK)

	// prod's dead run left a target it claimed; a third pointer beside
	// prod's was pointed at it by hand: cleanup keeps it, naming why.
	dead := c.crash(t, "m-dead")
	cli(t, "unlock", "--pointer", c.ptr, "--migration-id", "m-dead").want(t, exitOK)
	other := "s3://rocklake/OTHER"
	if _, err := pointer.Create(c.ctx, c.store, other, pointer.Pointer{Catalog: dead.Target, FormatVersion: format.V2, MigrationID: "by-hand"}); err != nil {
		t.Fatal(err)
	}
	if _, err := history.Create(c.ctx, c.store, history.Record{ID: "by-hand", Kind: history.KindMigrate, Pointer: other, Start: time.Now(), Outcome: history.Succeeded}); err != nil {
		t.Fatal(err)
	}
	targetObjects := c.objects(t)
	r = cli(t, "cleanup", "--pointer", c.ptr, "--apply")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "kept UnclaimedTarget: "+dead.Target+" (pointer "+other+" names it)") {
		t.Fatalf("cleanup with another pointer on the target:\n%s", r.stdout)
	}
	for url, etag := range targetObjects {
		if strings.HasPrefix(url, dead.Target+"/") && c.objects(t)[url] != etag {
			t.Fatalf("%s deleted", url)
		}
	}
	// Once that pointer is gone, the target is prod's leftover, and goes.
	if err := c.store.Delete(c.ctx, other); err != nil {
		t.Fatal(err)
	}
	r = cli(t, "cleanup", "--pointer", c.ptr, "--apply")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "deleted UnclaimedTarget: "+dead.Target) {
		t.Fatalf("cleanup of prod's own leftover:\n%s", r.stdout)
	}
	if left, err := c.store.List(c.ctx, layout.Claim(c.ptr, "m-dead")); err != nil || len(left) != 0 {
		t.Fatalf("the deleted target's claim: %v, %v", left, err)
	}
	keep("after the second cleanup")
	cli(t, "check", "--catalog", devLive, "--expect", "v2").want(t, exitOK)
	cli(t, "check", "--catalog", backup, "--expect", "v1").want(t, exitOK)
}

// Issue 25: a run that died right after Freeze (its target never written,
// so no UnclaimedTarget) leaves its read replica beside the source; cleanup
// removes it with the run's staging, whose plan names it. The source stays.
func TestCleanupRemovesADeadRunsReplica(t *testing.T) {
	c := newCleanupSetup(t)
	m, err := workflow.Check(c.ctx, c.env, workflow.CheckInput{Online: offline(), Pointer: c.ptr, TargetVersion: uint64(format.V2), MigrationID: "m-dead", Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = workflow.Freeze(c.ctx, c.env, m); err != nil {
		t.Fatal(err)
	}
	replica, _ := layout.Replica(c.src, "m-dead")
	count := func() int {
		t.Helper()
		objs, err := c.store.List(c.ctx, replica+"/")
		if err != nil {
			t.Fatal(err)
		}
		return len(objs)
	}
	if m.Replica != replica || count() == 0 {
		t.Fatalf("Freeze made no replica at %s: %q", replica, m.Replica)
	}
	cli(t, "unlock", "--pointer", c.ptr, "--migration-id", "m-dead").want(t, exitOK)
	srcDump := rawDump(t, c.src)
	cli(t, "cleanup", "--pointer", c.ptr).want(t, exitOK)
	if count() == 0 {
		t.Fatal("cleanup's dry run removed the replica")
	}
	r := cli(t, "cleanup", "--pointer", c.ptr, "--apply")
	r.want(t, exitOK)
	if n := count(); n != 0 {
		t.Fatalf("%d objects left under the dead run's replica %s\n%s", n, replica, r.stdout)
	}
	if rawDump(t, c.src) != srcDump {
		t.Fatal("the source's keys changed")
	}
}

// offline is an input's online setting for the offline path (online is the
// default).
func offline() *bool { v := false; return &v }
