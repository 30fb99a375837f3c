package operator

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Issue 24 item 4: an in-place run killed after its batch (before the
// pointer write) leaves the catalog in format 2 behind a pointer that says
// format 1, and its way back. The drift check and cleanup keep the way
// back (while the dead run holds the lock, and after unlock), and restore
// brings the catalog back from it: format 1, the digest the catalog had
// before the migration, the pointer as it was. The way back stays after.
//
// The crash: the step stops for good right after the batch (the hook never
// returns to it until the test is over), so its lock stays held, its record
// in progress, and nothing of its undo runs, as when a Lambda is killed.
func TestInPlaceCrashAfterTheBatchKeepsTheWayBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, ptr, src, before, pointerBefore := crashedInPlace(t, ctx, "m-crash")
	store := env.Store

	wayBack := "s3://rocklake/catalogs/v1-m-crash"
	if st, err := readState(ctx, env, src, true); err != nil || st.version != format.V2 {
		t.Fatalf("after the batch the catalog is %v (%v), want format 2", st.version, err)
	}
	if got, _, err := store.Get(ctx, ptr); err != nil || string(got) != string(pointerBefore) {
		t.Fatalf("the pointer moved before the crash: %s, %v", got, err)
	}
	cl, err := claim.Read(ctx, store, ptr, "m-crash")
	if err != nil || cl.Kind != claim.KindWayBack || cl.Catalog != wayBack || cl.Source != src {
		t.Fatalf("the way back's claim: %+v, %v", cl, err)
	}
	wayBackObjects := listing(t, ctx, store, wayBack+"/")
	if len(wayBackObjects) == 0 {
		t.Fatal("no way back")
	}
	keeps := func(when string) {
		t.Helper()
		if got := listing(t, ctx, store, wayBack+"/"); !slices.Equal(got, wayBackObjects) {
			t.Fatalf("%s: the way back changed:\n%v\n→\n%v", when, wayBackObjects, got)
		}
	}

	// The dead run holds the lock: drift reports no way back of it, and
	// cleanup refuses.
	d, err := workflow.Drift(ctx, env, workflow.DriftInput{Pointer: ptr, Expect: 1})
	if err != nil || slices.Contains(d.Report.Kinds(), drift.KindWayBackKept) || d.Report.ActiveMigration != "m-crash" {
		t.Fatalf("drift while the dead run holds the lock: %v, %v", d.Report.Kinds(), err)
	}
	if _, err := Cleanup(ctx, env, CleanupInput{Pointer: ptr, Apply: true}); !errors.Is(err, lock.ErrInProgress) {
		t.Fatalf("cleanup while the dead run holds the lock: %v", err)
	}
	// Restore too waits for the lock.
	if _, err := Restore(ctx, env, RestoreInput{Pointer: ptr, MigrationID: "m-crash"}); !errors.Is(err, lock.ErrInProgress) {
		t.Fatalf("restore while the dead run holds the lock: %v", err)
	}
	keeps("while locked")

	if _, err := runstate.Unlock(ctx, env, ptr, "m-crash"); err != nil {
		t.Fatal(err)
	}
	d, err = workflow.Drift(ctx, env, workflow.DriftInput{Pointer: ptr, Expect: 1})
	if err != nil {
		t.Fatal(err)
	}
	var wb *drift.Finding
	for i, f := range d.Report.Findings {
		if f.Kind.Removable() {
			t.Fatalf("drift after the crash reports a removable %s: %s", f.Kind, f.Message)
		}
		if f.Kind == drift.KindWayBackKept {
			wb = &d.Report.Findings[i]
		}
	}
	if wb == nil || wb.Catalog != wayBack || !strings.Contains(wb.Message, "restore --pointer "+ptr+" --migration-id m-crash") {
		t.Fatalf("drift after the crash: %s", d.Report.Text())
	}
	out, err := Cleanup(ctx, env, CleanupInput{Pointer: ptr, Apply: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range out.Items {
		if it.Action != CleanupKept {
			t.Fatalf("cleanup after the crash: %s", out.Text())
		}
	}
	keeps("after cleanup --apply")

	// A dry run says what it would do and changes nothing.
	dry, err := Restore(ctx, env, RestoreInput{Pointer: ptr, MigrationID: "m-crash", DryRun: true})
	if err != nil || dry.From != format.V2 || dry.To != format.V1 || dry.Catalog != src || dry.WayBack != wayBack {
		t.Fatalf("restore --dry-run: %+v, %v", dry, err)
	}
	if st, err := readState(ctx, env, src, true); err != nil || st.version != format.V2 {
		t.Fatalf("the dry run changed the catalog: %v, %v", st.version, err)
	}

	res, err := Restore(ctx, env, RestoreInput{Pointer: ptr, MigrationID: "m-crash"})
	if err != nil {
		t.Fatal(err)
	}
	after, err := readState(ctx, env, src, true)
	if err != nil || after.version != format.V1 || after.digest.Sum() != before.digest.Sum() || res.Digest != before.digest.Sum() {
		t.Fatalf("after the restore: format %v, digest %s (restore said %s), want format 1 and %s (%v)", after.version, after.digest.Sum(), res.Digest, before.digest.Sum(), err)
	}
	if got, _, err := store.Get(ctx, ptr); err != nil || string(got) != string(pointerBefore) {
		t.Fatalf("restore moved the pointer: %s, %v", got, err)
	}
	if _, rec, err := history.Find(ctx, store, ptr, res.RunID); err != nil || rec.Kind != history.KindRestore || rec.Outcome != history.Succeeded {
		t.Fatalf("the restore's record: %+v, %v", rec, err)
	}
	if cl, err := claim.Read(ctx, store, ptr, "m-crash"); err != nil || cl.Restored == nil || cl.Released != nil {
		t.Fatalf("the claim after the restore: %+v, %v", cl, err)
	}
	// The catalog is healthy again; the way back is still kept.
	d, err = workflow.Drift(ctx, env, workflow.DriftInput{Pointer: ptr, Expect: 1})
	if err != nil || !slices.Equal(d.Report.Kinds(), []drift.Kind{drift.KindWayBackKept}) || !strings.Contains(d.Report.Findings[0].Message, "restored") {
		t.Fatalf("drift after the restore: %s (%v)", d.Report.Text(), err)
	}
	if _, err := Cleanup(ctx, env, CleanupInput{Pointer: ptr, Apply: true}); err != nil {
		t.Fatal(err)
	}
	keeps("after the restore and cleanup")
	// A second restore has nothing to do; the way back cannot be released
	// (no pointer version named the migrated catalog).
	if again, err := Restore(ctx, env, RestoreInput{Pointer: ptr, MigrationID: "m-crash"}); err != nil || !again.NothingToDo {
		t.Fatalf("second restore: %+v, %v", again, err)
	}
	if _, err := Cleanup(ctx, env, CleanupInput{Pointer: ptr, Apply: true, ReleaseWayBack: "m-crash"}); !errors.Is(err, ErrReleaseRefused) {
		t.Fatalf("releasing a way back no pointer version passed: %v", err)
	}
	keeps("after the refused release")
}

// crashedInPlace seeds a catalog behind a pointer and runs in-place
// migration id until its batch landed, then stops it for good (the hook
// never returns to it until the test is over), so its lock stays held, its
// record in progress, and nothing of its undo runs, as when a Lambda is
// killed. It returns the catalog's state and the pointer's bytes before.
func crashedInPlace(t *testing.T, ctx context.Context, id string) (env runstate.Env, ptr, src string, before catalogState, pointerBefore []byte) {
	t.Helper()
	env = localEnv(t, "crash test")
	store := env.Store
	var err error
	ptr, src = "s3://rocklake/CURRENT", "s3://rocklake/catalogs/prod"
	if _, err := seed.Seed(ctx, src, seed.Options{Rows: 400, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Create(ctx, store, ptr, pointer.Pointer{Catalog: src, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	if before, err = readState(ctx, env, src, true); err != nil {
		t.Fatal(err)
	}
	if pointerBefore, _, err = store.Get(ctx, ptr); err != nil {
		t.Fatal(err)
	}
	m, err := workflow.Check(ctx, env, workflow.CheckInput{Online: offline(), Pointer: ptr, TargetVersion: 2, InPlace: true, MigrationID: id})
	if err != nil {
		t.Fatal(err)
	}
	reached, release := make(chan struct{}), make(chan struct{})
	workflow.AfterInPlaceBatch = func() {
		close(reached)
		<-release
		runtime.Goexit() // the process is gone: nothing after the batch runs
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = workflow.MigrateInPlace(ctx, env, m)
	}()
	// The dead step's goroutine ends before the S3 stack stops.
	t.Cleanup(func() { close(release); wg.Wait(); workflow.AfterInPlaceBatch = nil })
	select {
	case <-reached:
	case <-ctx.Done():
		t.Fatal("the in-place step never reached its batch")
	}
	return env, ptr, src, before, pointerBefore
}

// localEnv is an Env on a versitygw of the test's own with a versioned
// bucket "rocklake", staging in it.
func localEnv(t *testing.T, createdBy string) runstate.Env {
	t.Helper()
	s3server.StartWith(t, map[string]bool{"rocklake": true})
	return runstate.Env{Store: testenv.Store(t), Staging: "s3://rocklake/migrations", CreatedBy: createdBy}
}

// listing is every object under prefix with its ETag.
func listing(t *testing.T, ctx context.Context, store *blob.Store, prefix string) []string {
	t.Helper()
	infos, err := store.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		out = append(out, in.URL+" "+in.ETag)
	}
	return out
}

// A pointer write that failed but landed (here: the pointer already names
// the migrated catalog when the step writes it, so the step's own write is
// refused): the undo must not restore the old format behind a pointer that
// says the new one, nor drop the way back rollback needs.
func TestInPlaceUndoKeepsAPointerThatMoved(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env := localEnv(t, "undo test")
	store := env.Store
	ptr, src := "s3://rocklake/CURRENT", "s3://rocklake/catalogs/prod"
	if _, err := seed.Seed(ctx, src, seed.Options{Rows: 200, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Create(ctx, store, ptr, pointer.Pointer{Catalog: src, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	m, err := workflow.Check(ctx, env, workflow.CheckInput{Online: offline(), Pointer: ptr, TargetVersion: 2, InPlace: true, MigrationID: "m-landed"})
	if err != nil {
		t.Fatal(err)
	}
	workflow.AfterInPlaceBatch = func() {
		cur, ref, err := pointer.Read(ctx, store, ptr)
		if err == nil {
			_, err = pointer.Flip(ctx, store, ptr, cur.Next(src, format.V2, "m-landed"), ref)
		}
		if err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { workflow.AfterInPlaceBatch = nil })
	out, err := workflow.MigrateInPlace(ctx, env, m)
	if err != nil || out.Warning == "" || out.PointerVersionID == "" {
		t.Fatalf("in place whose pointer moved to it: %+v, %v; want the migration's success, with a warning", out, err)
	}
	if st, err := readState(ctx, env, src, true); err != nil || st.version != format.V2 {
		t.Fatalf("the catalog: format %v (%v), want the migrated format 2, as the pointer says", st.version, err)
	}
	if objs := listing(t, ctx, store, "s3://rocklake/catalogs/v1-m-landed/"); len(objs) == 0 {
		t.Fatal("the way back was deleted")
	}
	if cl, err := claim.Read(ctx, store, ptr, "m-landed"); err != nil || cl.Kind != claim.KindWayBack || cl.Named == nil || cl.Landed == nil {
		t.Fatalf("the way back's claim: %+v, %v; want it named by the pointer version and the batch's marks on it", cl, err)
	}
	if _, err := workflow.Rollback(ctx, env, workflow.RollbackInput{Pointer: ptr, DiscardNewerCommits: true}); err != nil {
		t.Fatalf("rollback to the way back: %v", err)
	}
}

// offline is an input's online setting for the offline path (online is the
// default).
func offline() *bool { v := false; return &v }

// Issue 36, 3: an in-place run killed after its batch, then a format-2
// writer commits to the migrated catalog (a new release opened it by URL)
// before the operator restores: the restore carries that commit into what
// it restores (from the run's pin right after the batch, taken down to
// format 1) instead of refusing. The catalog is format 1 again, with the
// commit, and says so.
func TestRestoreCarriesCommitsMadeAfterTheBatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, ptr, src, before, _ := crashedInPlace(t, ctx, "m-commit")
	if _, err := runstate.Unlock(ctx, env, ptr, "m-commit"); err != nil {
		t.Fatal(err)
	}
	w, err := catalog.OpenWriter(ctx, src, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put(format.CounterKey(format.V2, format.NameNextSnapshotID), format.EncodeCounter(format.V2, 900001))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, env, RestoreInput{Pointer: ptr, MigrationID: "m-commit"})
	if err != nil || res.Carried == 0 || res.Newer == "" {
		t.Fatalf("restore over a commit made after the batch: %+v, %v; want it carried", res, err)
	}
	after, err := readState(ctx, env, src, true)
	if err != nil || after.version != format.V1 || after.marks.NextSnapshotID != 900001 {
		t.Fatalf("after the restore: format %v, marks %+v (%v); want format 1 with the commit's next_snapshot_id 900001", after.version, after.marks, err)
	}
	if after.digest.Sum() == before.digest.Sum() {
		t.Fatal("the restore dropped the commit: the catalog reads as before the migration")
	}
}
