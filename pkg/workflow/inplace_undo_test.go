package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// pointerProxy sits between the steps' blob store and versitygw on
// loopback (the SlateDB engine reaches versitygw directly) and acts on the
// requests for one pointer object: onGet runs before the first GET of it
// that it sees once armed; with failPut, the pointer's PUT is forwarded (S3
// applies it) and then answered 500, as is every PUT after it, unforwarded
// (the SDK's retries); with failGets, every GET of it after that PUT is
// answered 500. The Host header is kept, so SigV4 signatures still verify.
type pointerProxy struct {
	key      string // the pointer's path, /bucket/key
	mu       sync.Mutex
	armed    bool
	onGet    func()
	failPut  bool
	failGets bool
	putDone  bool
}

func (p *pointerProxy) arm(onGet func(), failPut, failGets bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed, p.onGet, p.failPut, p.failGets = true, onGet, failPut, failGets
}

// proxiedStore is a blob store whose S3 requests pass through p.
func proxiedStore(t *testing.T, ctx context.Context, f seeded.Fixture, p *pointerProxy) *blob.Store {
	t.Helper()
	u, err := url.Parse(f.Stack.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		host := r.In.Host
		r.SetURL(u)
		r.Out.Host = host
	}}
	internalError := func(w http.ResponseWriter) {
		w.WriteHeader(http.StatusInternalServerError)
		w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`))
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The object itself (the SDK names its operation in x-id), not
		// its versions.
		if q := r.URL.Query(); r.URL.Path != p.key || len(q) > 1 || (len(q) == 1 && !q.Has("x-id")) {
			rp.ServeHTTP(w, r)
			return
		}
		p.mu.Lock()
		armed, putDone := p.armed, p.putDone
		var hook func()
		if armed && r.Method == http.MethodGet && p.onGet != nil {
			hook, p.onGet = p.onGet, nil
		}
		p.mu.Unlock()
		switch {
		case hook != nil:
			hook()
		case armed && r.Method == http.MethodPut && p.failPut && !putDone:
			rec := httptest.NewRecorder()
			rp.ServeHTTP(rec, r)
			if rec.Code != http.StatusOK {
				t.Errorf("the pointer PUT through the proxy: %d %s", rec.Code, rec.Body)
			}
			p.mu.Lock()
			p.putDone = true
			p.mu.Unlock()
			internalError(w)
			return
		case armed && r.Method == http.MethodPut && p.failPut:
			internalError(w)
			return
		case armed && r.Method == http.MethodGet && p.failGets && putDone:
			internalError(w)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	// The store takes its endpoint from the environment when it is made;
	// the engine reads the environment again on each open, without it.
	os.Setenv("AWS_ENDPOINT_URL_S3", srv.URL)
	store, err := blob.New(ctx)
	os.Unsetenv("AWS_ENDPOINT_URL_S3")
	if err != nil {
		t.Fatal(err)
	}
	return store
}

// commitAsV2Writer does what a RockLake binary of format 2 does to the
// migrated catalog, which it opens by URL as soon as the batch landed: it
// opens it as its writer, takes the next writer-epoch and commits a
// snapshot with a row.
func commitAsV2Writer(t *testing.T, ctx context.Context, url string) {
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Errorf("open the migrated catalog as a format-2 writer: %v", err)
		return
	}
	defer w.Close()
	epoch, err := w.SystemValue(ctx, format.SystemWriterEpoch)
	if err != nil && !errors.Is(err, catalog.ErrNotFound) {
		t.Error(err)
		return
	}
	next, err := w.Counter(ctx, format.NameNextSnapshotID)
	if err != nil {
		t.Error(err)
		return
	}
	var b slatedb.Batch
	b.Put(format.SystemKey(format.SystemWriterEpoch), format.EncodeCounter(format.V2, epoch+1))
	b.Put(format.CounterKey(format.V2, format.NameNextSnapshotID), format.EncodeCounter(format.V2, next+1))
	b.Put([]byte{0x30, 'n', 'e', 'w'}, []byte("a commit made after the migration"))
	if err := w.Write(ctx, &b); err != nil {
		t.Errorf("commit: %v", err)
	}
}

// objectCount is the number of objects under url/.
func objectCount(t *testing.T, ctx context.Context, store *blob.Store, url string) int {
	t.Helper()
	objs, err := store.List(ctx, url+"/")
	if err != nil {
		t.Fatal(err)
	}
	return len(objs)
}

// lockHeldBy fails unless the pointer's lock is held by migration id.
func lockHeldBy(t *testing.T, ctx context.Context, f seeded.Fixture, id string) {
	t.Helper()
	body, _, err := f.Env.Store.Get(ctx, layout.Lock(f.Pointer))
	var held lock.Lock
	if err == nil {
		err = json.Unmarshal(body, &held)
	}
	if err != nil || held.MigrationID != id {
		t.Fatalf("the lock after the kept undo: %+v (%v), want it held by %s", held, err, id)
	}
}

// Issue 24, 2, and issue 36, 3: RockLake of the new format opens the
// migrated catalog by URL and commits before the pointer is written; the
// pointer write then fails (someone else moved it). The undo finds the
// catalog moved since the batch and carries what it took since (from the
// run's pin right after the batch) into the restore, taken down to the way
// back's format: the catalog is format 1 again with that commit, the way
// back gone, the lock free.
func TestInPlaceUndoKeepsCommitsMadeAfterTheBatch(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	src, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	_, next0, err := src.Marks(ctx)
	src.Close()
	if err != nil {
		t.Fatal(err)
	}
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, MigrationID: "m-moved"})
	if err != nil {
		t.Fatal(err)
	}
	seeded.MovePointer(t, ctx, f, "someone-else")
	p := &pointerProxy{key: "/rocklake/CURRENT"}
	env := f.Env
	env.Store = proxiedStore(t, ctx, f, p)
	// The step's first read of the pointer comes after the batch landed.
	p.arm(func() { commitAsV2Writer(t, ctx, f.Source) }, false, false)

	_, err = workflow.MigrateInPlace(ctx, env, m)
	wayBack := strings.TrimSuffix(f.Source, "prod") + "v1-m-moved"
	if !errors.Is(err, pointer.ErrPointerConflict) || !strings.Contains(err.Error(), "restored to format v1") {
		t.Fatalf("in place, a commit after the batch, the pointer moved: err = %v (%s), want PointerConflict and the catalog restored with the commit", err, runstate.ErrorName(err))
	}
	c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatalf("the catalog after the undo: %v", err)
	}
	got, err := c.GetRaw(ctx, []byte{0x30, 'n', 'e', 'w'})
	epoch, next, merr := c.Marks(ctx)
	c.Close()
	if err != nil || string(got) != "a commit made after the migration" {
		t.Fatalf("the commit made after the batch: %q, %v; want it carried into the restore", got, err)
	}
	if merr != nil || next != next0+1 {
		t.Fatalf("the marks after the undo: writer-epoch %d, next_snapshot_id %d (%v); want the format-2 commit's %d", epoch, next, merr, next0+1)
	}
	if left, err := f.Env.Store.List(ctx, wayBack+"/"); err != nil || len(left) != 0 {
		t.Fatalf("the way back after the undo: %d objects (%v), want it deleted", len(left), err)
	}
	if l, _, err := lock.Read(ctx, f.Env.Store, f.Pointer, ""); err != nil || l.MigrationID != "" {
		t.Fatalf("the lock after the undo: %+v, %v; want it free", l, err)
	}
}

// Issue 24, 3: the pointer PUT lands in S3 but answers 500 (every retry
// too). The undo reads the pointer again, finds this migration's flip, and
// reports success: the catalog stays in format 2, the way back (the
// rollback's target) is kept, the lock is freed.
func TestInPlaceFlipThatLandedDespiteAnErrorSucceeds(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, MigrationID: "m-landed"})
	if err != nil {
		t.Fatal(err)
	}
	p := &pointerProxy{key: "/rocklake/CURRENT"}
	env := f.Env
	env.Store = proxiedStore(t, ctx, f, p)
	p.arm(nil, true, false)

	out, err := workflow.MigrateInPlace(ctx, env, m)
	if err != nil || out.Warning == "" {
		t.Fatalf("in place, the pointer PUT applied but answered 500: err = %v, warning %q; want success with a warning", err, out.Warning)
	}
	cur, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || cur.Catalog != f.Source || cur.FormatVersion != format.V2 || cur.MigrationID != "m-landed" || ref.VersionID != out.PointerVersionID {
		t.Fatalf("pointer = %+v (%+v, %v), run said version %s", cur, ref, err, out.PointerVersionID)
	}
	if c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the catalog the pointer names in format 2: %v", err)
	} else {
		c.Close()
	}
	if n := objectCount(t, ctx, f.Env.Store, strings.TrimSuffix(f.Source, "prod")+"v1-m-landed"); n == 0 {
		t.Fatal("the way back was deleted: a rollback has nowhere to go")
	}
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, DryRun: true}); err != nil {
		t.Fatalf("the lock after the migration: %v", err)
	}
}

// Issue 24, 3: the pointer PUT lands but answers 500, and the pointer cannot
// be read again: whether it names format 1 or 2 is unknown, so the undo
// restores nothing and deletes nothing (InPlaceUndoUndecided): the catalog
// in format 2 as the batch left it, the way back kept, the lock held.
func TestInPlaceUndoWithAnUnreadablePointerKeepsEverything(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, MigrationID: "m-blind"})
	if err != nil {
		t.Fatal(err)
	}
	p := &pointerProxy{key: "/rocklake/CURRENT"}
	env := f.Env
	env.Store = proxiedStore(t, ctx, f, p)
	p.arm(nil, true, true)

	_, err = workflow.MigrateInPlace(ctx, env, m)
	wayBack := strings.TrimSuffix(f.Source, "prod") + "v1-m-blind"
	if runstate.ErrorName(err) != inplace.ErrUndoUndecided.ErrorName() || !strings.Contains(err.Error(), wayBack) {
		t.Fatalf("in place, the pointer unreadable after an ambiguous write: err = %v (%s), want InPlaceUndoUndecided naming %s", err, runstate.ErrorName(err), wayBack)
	}
	if c, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V2}); err != nil {
		t.Fatalf("the catalog after the undecided undo: %v, want format 2 as the batch left it", err)
	} else {
		c.Close()
	}
	if w, err := catalog.Open(ctx, wayBack, catalog.Options{Expect: format.V1}); err != nil {
		t.Fatalf("the way back after the undecided undo: %v", err)
	} else {
		w.Close()
	}
	lockHeldBy(t, ctx, f, "m-blind")
}
