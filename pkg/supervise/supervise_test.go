package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/supervise"
)

// fixture: a versioned bucket on versitygw holding the pointer, catalogs as
// directories (a SlateDB manifest/ is what makes one), stand-in binaries.
type fixture struct {
	ctx   context.Context
	store *blob.Store
	ptr   string
	dir   string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	s3server.StartWith(t, map[string]bool{"rocklake": true})
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return fixture{ctx: ctx, store: store, ptr: "s3://rocklake/CURRENT", dir: t.TempDir()}
}

// catalog makes an empty SlateDB database (what the supervisor checks
// for, and what its copies copy) and returns its file:// URL.
func (f fixture) catalog(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(f.dir, "catalogs", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	w, err := slatedb.OpenWriter(f.ctx, "file://"+dir, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return "file://" + dir
}

// pointed is a format-1 catalog "prod" (catalog) with the pointer
// created at it, as init-pointer does.
func (f fixture) pointed(t *testing.T) string {
	t.Helper()
	src := f.catalog(t, "prod")
	if _, err := pointer.Create(f.ctx, f.store, f.ptr, pointer.Pointer{Catalog: src, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	return src
}

func (f fixture) flip(t *testing.T, catalog string, v format.Version, id string) {
	t.Helper()
	cur, ref, err := pointer.Read(f.ctx, f.store, f.ptr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Flip(f.ctx, f.store, f.ptr, cur.Next(catalog, v, id), ref); err != nil {
		t.Fatal(err)
	}
}

// lock takes the pointer's lock as Check does (a migration's id, lease and
// the time it may fence the source, grace from now); unlock frees it as
// Flip and Abort do.
func (f fixture) lock(t *testing.T, id string, grace time.Duration) {
	t.Helper()
	now := time.Now().UTC()
	b, _ := json.Marshal(lock.Lock{MigrationID: id, Owner: "test", AcquiredAt: now, ExpiresAt: now.Add(24 * time.Hour), FenceAt: now.Add(grace)})
	if _, err := f.store.Put(f.ctx, layout.Lock(f.ptr), b); err != nil {
		t.Fatal(err)
	}
}

func (f fixture) unlock(t *testing.T) {
	t.Helper()
	b, _ := json.Marshal(lock.Lock{ReleasedBy: "test"})
	if _, err := f.store.Put(f.ctx, layout.Lock(f.ptr), b); err != nil {
		t.Fatal(err)
	}
}

// running is a Supervisor's Run in the background, with its health lines.
type running struct {
	mu     sync.Mutex
	health []supervise.Health
	alerts []string
	cancel context.CancelFunc
	done   chan error
}

func (f fixture) run(t *testing.T, bins map[format.Version]string, extra ...string) *running {
	t.Helper()
	return f.runWith(t, bins, nil, extra...)
}

// runWith is run with the options changed by set first.
func (f fixture) runWith(t *testing.T, bins map[format.Version]string, set func(*supervise.Options), extra ...string) *running {
	t.Helper()
	r := &running{done: make(chan error, 1)}
	opts := supervise.Options{
		Pointer: f.ptr, Binaries: bins, Extra: extra, Store: f.store,
		Interval: 100 * time.Millisecond, StopTimeout: 5 * time.Second, MaxRestarts: 2, StableAfter: 5 * time.Second,
		Health: func(h supervise.Health) {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.health = append(r.health, h)
		},
		Alert: func(_ context.Context, subject, body string) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.alerts = append(r.alerts, subject+": "+body)
			return nil
		},
	}
	if set != nil {
		set(&opts)
	}
	s, err := supervise.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	r.cancel = cancel
	go func() { r.done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(30 * time.Second):
			t.Error("the supervisor did not stop within 30 s")
		}
	})
	return r
}

// stop ends the supervisor and returns Run's error.
func (r *running) stop(t *testing.T) error {
	t.Helper()
	r.cancel()
	select {
	case err := <-r.done:
		r.done <- err // for the cleanup
		return err
	case <-time.After(30 * time.Second):
		t.Fatal("the supervisor did not stop within 30 s")
		return nil
	}
}

// waitLaunch waits until the stand-ins have been launched n times and
// returns the last launch.
func waitLaunch(t *testing.T, log string, n int) launch {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if ls := launches(t, log); len(ls) >= n {
			if len(ls) > n {
				t.Fatalf("%d launches, want %d: %+v", len(ls), n, ls)
			}
			return ls[n-1]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no launch %d within 20 s: %+v", n, launches(t, log))
	return launch{}
}

func (r *running) waitState(t *testing.T, s supervise.State) supervise.Health {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		for _, h := range r.health {
			if h.State == s {
				r.mu.Unlock()
				return h
			}
		}
		r.mu.Unlock()
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no %s state within 20 s", s)
	return supervise.Health{}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func path(url string) string { return strings.TrimPrefix(url, "file://") }

// The supervisor follows a migration and a rollback: the writer on the
// source; reader mode on the source once the lock is taken (before any
// fence); the writer on the new catalog only once the flip is done and the
// lock free; the writer on the source again after a rollback; and on a flip
// to a format it has no binary for, the last good server in reader mode, a
// loud health line and alert, and the exit status (ErrNoBinary) when stopped.
func TestSupervisorFollowsThePointer(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	src, dst := f.pointed(t), f.catalog(t, "prod-next")
	r := f.run(t, map[format.Version]string{format.V1: bins["v1"]}, "--bind", freeAddr(t), "--drain-timeout", "1")
	if l := waitLaunch(t, log, 1); l.Name != "v1" || l.Catalog != path(src) || l.Mode != "writer" || !strings.Contains(strings.Join(l.Args, " "), "--drain-timeout 1") {
		t.Fatalf("first server: %+v, want the v1 writer on %s with the extra flags", l, path(src))
	}

	f.lock(t, "m-1", 3*time.Second)
	if l := waitLaunch(t, log, 2); !copyOf(l, src) || l.Mode != "reader" {
		t.Fatalf("with the lock taken: %+v, want a reader on a copy of the source", l)
	}
	r.waitState(t, supervise.Migrating)
	// The flip, with the lock still held: no writer on the new catalog;
	// the reader on the source until Flip frees the lock, then one restart.
	f.flip(t, dst, format.V1, "m-1")
	time.Sleep(500 * time.Millisecond)
	if ls := launches(t, log); len(ls) != 2 {
		t.Fatalf("flipped, lock held: %+v, want the reader on the source kept", ls[2:])
	}
	f.unlock(t)
	if l := waitLaunch(t, log, 3); l.Catalog != path(dst) || l.Mode != "writer" {
		t.Fatalf("flipped, lock free: %+v, want the writer on %s", l, path(dst))
	}

	// Rollback: the previous pointer's catalog, as a writer.
	if _, _, err := pointer.Rollback(f.ctx, f.store, f.ptr, pointer.RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if l := waitLaunch(t, log, 4); l.Catalog != path(src) || l.Mode != "writer" {
		t.Fatalf("after the rollback: %+v, want the writer on the source", l)
	}

	// A migration whose fence time has come (the supervisor saw its lock
	// too late, or a lock that names none): nothing is opened on the
	// frozen source, what runs keeps running.
	f.lock(t, "m-late", 0)
	r.waitState(t, supervise.Migrating)
	time.Sleep(500 * time.Millisecond)
	if ls := launches(t, log); len(ls) != 4 {
		t.Fatalf("a lock past its fence time restarted RockLake: %+v", ls[4:])
	}
	// The migration ends (an abort): the writer Freeze fenced is restarted.
	f.unlock(t)
	if l := waitLaunch(t, log, 5); l.Catalog != path(src) || l.Mode != "writer" {
		t.Fatalf("after a migration that froze the writer: %+v, want the writer restarted on the source", l)
	}
	// A dry run's lock fences nothing: the writer stays.
	now := time.Now().UTC()
	b, _ := json.Marshal(lock.Lock{MigrationID: "m-dry", AcquiredAt: now, ExpiresAt: now.Add(time.Hour), DryRun: true})
	if _, err := f.store.Put(f.ctx, layout.Lock(f.ptr), b); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if ls := launches(t, log); len(ls) != 5 {
		t.Fatalf("a dry run's lock restarted RockLake: %+v", ls[5:])
	}
	f.unlock(t)

	// A v2 migration: reader on the source, then a flip to v2 with no v2
	// binary: the reader on the source stays, loudly.
	// A grace the switch and the flip fit in on a loaded machine: past
	// it, the reader would count as fenced and be restarted once the lock
	// is free (a restart this step does not look at).
	f.lock(t, "m-2", 10*time.Second)
	if l := waitLaunch(t, log, 6); !copyOf(l, src) || l.Mode != "reader" {
		t.Fatalf("with the lock taken: %+v, want a reader on a copy of the source", l)
	}
	v2 := f.catalog(t, "v2-m-2")
	f.flip(t, v2, format.V2, "m-2")
	f.unlock(t)
	h := r.waitState(t, supervise.Degraded)
	if !strings.Contains(h.Reason, supervise.ErrNoBinary.ErrorName()) {
		t.Fatalf("degraded health line %+v names no %s", h, supervise.ErrNoBinary.ErrorName())
	}
	time.Sleep(500 * time.Millisecond) // several rounds: nothing restarts
	if ls := launches(t, log); len(ls) != 6 {
		t.Fatalf("with no v2 binary the supervisor restarted RockLake: %+v", ls[6:])
	}
	r.mu.Lock()
	alerts := strings.Join(r.alerts, "\n")
	r.mu.Unlock()
	if !strings.Contains(alerts, supervise.ErrNoBinary.ErrorName()) {
		t.Fatalf("no alert names %s: %q", supervise.ErrNoBinary.ErrorName(), alerts)
	}
	if err := r.stop(t); !errors.Is(err, supervise.ErrNoBinary) {
		t.Fatalf("stopped while degraded: %v, want ErrNoBinary", err)
	}
}

// With a v2 binary, a v1→v2 migration ends with the v2 binary writing the
// new catalog; readers (--mode reader) follow the pointer as readers
// of copies, never as writers: to v2, and back on a rollback.
func TestSupervisorV2BinaryAndReader(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1", "v2")
	src, v2 := f.pointed(t), f.catalog(t, "v2-m-1")
	both := map[format.Version]string{format.V1: bins["v1"], format.V2: bins["v2"]}
	r := f.run(t, both)
	if l := waitLaunch(t, log, 1); l.Name != "v1" || l.Mode != "writer" {
		t.Fatalf("first: %+v, want the v1 writer", l)
	}
	f.lock(t, "m-1", 3*time.Second)
	if l := waitLaunch(t, log, 2); l.Name != "v1" || l.Mode != "reader" {
		t.Fatalf("under the lock: %+v, want the v1 reader", l)
	}
	f.flip(t, v2, format.V2, "m-1")
	f.unlock(t)
	if l := waitLaunch(t, log, 3); l.Name != "v2" || l.Catalog != path(v2) || l.Mode != "writer" {
		t.Fatalf("after the flip to v2: %+v, want the v2 binary writing %s", l, path(v2))
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	r = f.run(t, both, "--mode", "reader")
	if l := waitLaunch(t, log, 4); l.Name != "v2" || l.Mode != "reader" || strings.Count(strings.Join(l.Args, " "), "--mode") != 1 {
		t.Fatalf("reader: %+v, want the v2 binary with one --mode reader", l)
	}
	if _, _, err := pointer.Rollback(f.ctx, f.store, f.ptr, pointer.RollbackOptions{}); err != nil {
		t.Fatal(err)
	}
	if l := waitLaunch(t, log, 5); l.Name != "v1" || !copyOf(l, src) || l.Mode != "reader" {
		t.Fatalf("reader after the rollback: %+v, want the v1 binary reading a copy of %s", l, path(src))
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
}

// A pointer to a catalog that is not there (RockLake would create an empty
// one) keeps the last good server reading, PointerDangling; resolve names
// it, and a missing pointer.
func TestDanglingAndMissingPointer(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	if _, err := supervise.Resolve(f.ctx, f.store, f.ptr); !errors.Is(err, pointer.ErrPointerMissing) {
		t.Fatalf("resolve with no pointer: %v, want PointerMissing", err)
	}
	if _, err := f.store.Put(f.ctx, f.ptr+"-garbage", []byte("not a pointer")); err != nil {
		t.Fatal(err)
	}
	if _, err := supervise.Resolve(f.ctx, f.store, f.ptr+"-garbage"); !errors.Is(err, pointer.ErrBadPointer) {
		t.Fatalf("resolve of a malformed pointer: %v, want BadPointer", err)
	}
	if _, err := supervise.New(supervise.Options{Pointer: f.ptr, Store: f.store, Binaries: map[format.Version]string{format.V1: bins["v1"]}, Extra: []string{"--catalog", "/x"}}); err == nil {
		t.Fatal("--catalog among RockLake's flags accepted")
	}
	src := f.pointed(t)
	res, err := supervise.Resolve(f.ctx, f.store, f.ptr)
	if err != nil || res.ServeCatalog != path(src) || res.Catalog != src || res.FormatVersion != format.V1 {
		t.Fatalf("resolve: %+v %v", res, err)
	}
	r := f.run(t, map[format.Version]string{format.V1: bins["v1"]})
	waitLaunch(t, log, 1)
	gone := "file://" + filepath.Join(f.dir, "catalogs", "gone")
	f.flip(t, gone, format.V1, "m-typo")
	if _, err := supervise.Resolve(f.ctx, f.store, f.ptr); !errors.Is(err, supervise.ErrPointerDangling) {
		t.Fatalf("resolve of a dangling pointer: %v, want PointerDangling", err)
	}
	if l := waitLaunch(t, log, 2); l.Catalog != path(src) || l.Mode != "reader" {
		t.Fatalf("dangling pointer: %+v, want the reader on the last good catalog", l)
	}
	if _, err := os.Stat(path(gone)); !os.IsNotExist(err) {
		t.Fatalf("the dangling catalog's place was created: %v", err)
	}
	if err := r.stop(t); !errors.Is(err, supervise.ErrPointerDangling) || !supervise.StoppedDegraded(err) {
		t.Fatalf("stopped while dangling: %v, want PointerDangling, degraded", err)
	}
}

// A RockLake that keeps exiting is restarted with backoff, a bounded number
// of times, then the supervisor gives up (ServerFailing) and says so.
func TestBoundedRestarts(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	t.Setenv("STANDIN_CRASH", "1")
	f.pointed(t)
	r := f.run(t, map[format.Version]string{format.V1: bins["v1"]})
	start := time.Now()
	var err error
	select {
	case err = <-r.done:
		r.done <- err
	case <-time.After(30 * time.Second):
		t.Fatal("a crashing RockLake was restarted for 30 s")
	}
	took := time.Since(start)
	if !errors.Is(err, supervise.ErrServerFailing) {
		t.Fatalf("gave up with %v, want ServerFailing", err)
	}
	// Three launches (MaxRestarts 2), 1 s and 2 s apart.
	if n := len(launches(t, log)); n != 3 || took < 3*time.Second {
		t.Fatalf("%d launches in %s, want 3 with 1 s and 2 s of backoff", n, took)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.alerts) == 0 || !strings.Contains(r.alerts[len(r.alerts)-1], supervise.ErrServerFailing.ErrorName()) {
		t.Fatalf("alerts %q name no ServerFailing", r.alerts)
	}
}

// Decide never gives a writer while a migration holds the lock (a dry run
// aside) or while the lock is unknown, nor a writer to a reader; a
// reader on the source only while the migration's fence is still ahead;
// otherwise it holds: what runs keeps running, nothing starts.
func TestDecideNeverWritesUnderTheLock(t *testing.T) {
	bins := map[format.Version]string{format.V1: "/bin/v1"}
	p := pointer.Pointer{Catalog: "s3://b/prod", FormatVersion: format.V1, Generation: 3}
	writer := &supervise.Child{Format: format.V1, Binary: "/bin/v1", Catalog: "s3://b/prod", Mode: supervise.Writer}
	now := time.Now()
	soon, past := now.Add(5*time.Second), now.Add(-time.Second)
	flipped := p
	flipped.MigrationID, flipped.UpdatedAt = "m-1", now
	for i, c := range []struct {
		obs     supervise.Observation
		last    *supervise.Child
		readers bool
		want    supervise.Mode
		state   supervise.State
	}{
		{supervise.Observation{Pointer: p, LockKnown: true}, nil, false, supervise.Writer, supervise.Serving},
		{supervise.Observation{Pointer: p, LockKnown: true}, nil, true, supervise.Reader, supervise.Serving},
		{supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: soon, OnSource: true}, writer, false, supervise.Reader, supervise.Migrating},
		{supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: soon, OnSource: true}, writer, true, supervise.Reader, supervise.Migrating},
		{supervise.Observation{Pointer: flipped, LockKnown: true, LockHolder: "m-1", Now: now.Add(supervise.FlipSettle), FenceAt: past}, writer, false, supervise.Reader, supervise.Migrating},
		{supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-dry", LockDryRun: true, Now: now}, writer, false, supervise.Writer, supervise.Serving},
		// An online migration that has not named its fence: writes go on.
		{supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-on", LockWritesGoOn: true, Now: now, FenceAt: now.Add(24 * time.Hour)}, writer, false, supervise.Writer, supervise.Migrating},
		{supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-on", LockWritesGoOn: true, Now: now, FenceAt: now.Add(24 * time.Hour)}, writer, true, supervise.Reader, supervise.Migrating},
	} {
		d := supervise.Decide(c.obs, c.last, bins, c.readers)
		if d.Child == nil || d.Hold || d.Child.Mode != c.want || d.State != c.state {
			t.Errorf("case %d: %+v, want %s (%s)", i, d, c.want, c.state)
		}
	}
	// A fence named and no server of this supervisor on the source (it
	// started, or its server died, since): nothing is opened there, since
	// the holder may fence as soon as the supervisors it saw acknowledged.
	for _, readers := range []bool{false, true} {
		obs := supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: soon}
		if d := supervise.Decide(obs, writer, bins, readers); d.Child != nil || d.Hold || d.State != supervise.Migrating {
			t.Errorf("a fence named, nothing on the source (readers only %v): %+v, want no server", readers, d)
		}
	}
	// Past the fence time, just flipped (the lock about to be freed), or
	// with the lock unknown: hold, whatever ran.
	for i, obs := range []supervise.Observation{
		{Pointer: flipped, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: past},
		{Pointer: p, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: past},
		{Pointer: p, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: now.Add(supervise.OpenMargin / 2)},
		{Pointer: p},
	} {
		for _, last := range []*supervise.Child{nil, writer} {
			if d := supervise.Decide(obs, last, bins, false); !d.Hold || d.Child != nil {
				t.Errorf("hold case %d (last %v): %+v, want a hold", i, last, d)
			}
		}
	}
	// Past the fence with a read replica named in the lock: a reader on
	// the replica, never on the source, whoever asks; just flipped, hold
	// (the replica's reader goes on until the lock is freed).
	for _, readers := range []bool{false, true} {
		obs := supervise.Observation{Pointer: p, LockKnown: true, LockHolder: "m-1", Now: now, FenceAt: past, Replica: "s3://b/replica-m-1"}
		d := supervise.Decide(obs, writer, bins, readers)
		if d.Hold || d.Child == nil || d.Child.Mode != supervise.Reader || d.Child.Catalog != "s3://b/replica-m-1" || d.State != supervise.Migrating || !d.OpenBy.IsZero() {
			t.Errorf("replica (readers only %v): %+v, want a reader on the replica", readers, d)
		}
		obs.Pointer = flipped
		if d := supervise.Decide(obs, d.Child, bins, readers); !d.Hold {
			t.Errorf("replica, just flipped (readers only %v): %+v, want a hold", readers, d)
		}
	}
	v2 := p
	v2.FormatVersion = format.V2
	if d := supervise.Decide(supervise.Observation{Pointer: v2, LockKnown: true}, nil, bins, false); d.Child != nil || !errors.Is(d.Err, supervise.ErrNoBinary) {
		t.Errorf("v2 with no binary and no earlier server: %+v", d)
	}
}

// SIGUSR1 reaches RockLake; a stop is SIGTERM, and SIGKILL for a RockLake
// that does not exit within StopTimeout, said in the health line.
func TestSignalsAndGracefulStop(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	f.pointed(t)
	t.Setenv("STANDIN_IGNORE_TERM", "1")
	var mu sync.Mutex
	var health []supervise.Health
	opts := supervise.Options{Pointer: f.ptr, Store: f.store, Binaries: map[format.Version]string{format.V1: bins["v1"]}, Interval: 100 * time.Millisecond, StopTimeout: time.Second,
		Health: func(h supervise.Health) { mu.Lock(); health = append(health, h); mu.Unlock() }}
	s, err := supervise.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	waitLaunch(t, log, 1)
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.Signal(syscall.SIGUSR1)
		if b, _ := os.ReadFile(log + ".notes"); strings.Contains(string(b), "v1 got SIGUSR1") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("SIGUSR1 never reached RockLake")
		}
		time.Sleep(100 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < time.Second || took > 10*time.Second {
		t.Fatalf("a RockLake ignoring SIGTERM stopped in %s, want the 1 s stop timeout and a kill", took)
	}
	mu.Lock()
	defer mu.Unlock()
	last := health[len(health)-1]
	if last.Event != "stopped" || !strings.Contains(last.Reason, "killed") {
		t.Fatalf("last health line %+v, want stopped ... killed", last)
	}
}

// A writer whose drain would outlast the migration's grace is killed in
// time for the reader to open the source before the fence.
func TestDrainCutShortBeforeTheFence(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	t.Setenv("STANDIN_IGNORE_TERM", "1")
	f.pointed(t)
	s, err := supervise.New(supervise.Options{Pointer: f.ptr, Store: f.store, Binaries: map[format.Version]string{format.V1: bins["v1"]}, Interval: 100 * time.Millisecond, StopTimeout: 6 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	waitLaunch(t, log, 1)
	grace := 2500 * time.Millisecond
	fenceAt := time.Now().Add(grace)
	f.lock(t, "m-1", grace)
	if l := waitLaunch(t, log, 2); l.Mode != "reader" || time.Now().After(fenceAt) {
		t.Fatalf("%+v at %s, want a reader before the fence at %s", l, time.Now().Format("15:04:05.000"), fenceAt.Format("15:04:05.000"))
	}
}

// The address probed for readiness is RockLake's --bind, on loopback when
// it binds every interface, and RockLake's default without one; a stop is
// degraded only for a missing binary or catalog.
func TestListenAddrAndStoppedDegraded(t *testing.T) {
	for _, c := range []struct {
		extra []string
		want  string
	}{
		{nil, "127.0.0.1:5432"},
		{[]string{"--drain-timeout", "3"}, "127.0.0.1:5432"},
		{[]string{"--bind", "0.0.0.0:6543"}, "127.0.0.1:6543"},
		{[]string{"-b", "10.1.2.3:5433"}, "10.1.2.3:5433"},
		{[]string{"--bind=127.0.0.1:7000", "--mode", "reader"}, "127.0.0.1:7000"},
		{[]string{"--bind"}, "127.0.0.1:5432"},
	} {
		if got := supervise.ListenAddr(c.extra); got != c.want {
			t.Errorf("ListenAddr(%q) = %s, want %s", c.extra, got, c.want)
		}
	}
	for err, want := range map[error]bool{
		nil: false,
		fmt.Errorf("run: %w", supervise.ErrNoBinary): true,
		supervise.ErrPointerDangling:                 true,
		supervise.ErrServerFailing:                   false,
		supervise.ErrPointerUnreadable:               true,
		errors.New("something else"):                 false,
	} {
		if got := supervise.StoppedDegraded(err); got != want {
			t.Errorf("StoppedDegraded(%v) = %v, want %v", err, got, want)
		}
	}
}

// A writer may run whenever the lock's holder says writes go on: a
// supervisor started while a dry run or an online run copies (no fence_at
// named yet) starts the writer, and when that writer exits by itself it is
// restarted as a writer; once the online run names its fence, the next
// start is a reader.
func TestWriterUnderALockWhoseWritesGoOn(t *testing.T) {
	for _, c := range []struct {
		name string
		lock lock.Lock
	}{
		{"dry run", lock.Lock{DryRun: true}},
		{"online copy", lock.Lock{Online: true}},
		{"cleanup", lock.Lock{Kind: history.KindCleanup}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			bins, log := standins(t, "v1")
			src := f.pointed(t)
			now := time.Now().UTC()
			l := c.lock
			l.MigrationID, l.Owner, l.AcquiredAt, l.ExpiresAt = "m-copying", "test", now, now.Add(time.Hour)
			b, _ := json.Marshal(l)
			if _, err := f.store.Put(f.ctx, layout.Lock(f.ptr), b); err != nil {
				t.Fatal(err)
			}
			f.run(t, map[format.Version]string{format.V1: bins["v1"]}, "--bind", freeAddr(t))
			if got := waitLaunch(t, log, 1); got.Catalog != path(src) || got.Mode != "writer" {
				t.Fatalf("started under a lock whose writes go on: %+v, want the writer on %s", got, path(src))
			}
			if !c.lock.Online {
				return
			}
			// The run names its fence: the supervisor switches to reader
			// mode before it.
			l.FenceAt = time.Now().UTC().Add(3 * time.Second)
			b, _ = json.Marshal(l)
			if _, err := f.store.Put(f.ctx, layout.Lock(f.ptr), b); err != nil {
				t.Fatal(err)
			}
			if got := waitLaunch(t, log, 2); !copyOf(got, src) || got.Mode != "reader" {
				t.Fatalf("the fence named: %+v, want a reader on a copy of %s", got, path(src))
			}
		})
	}
}

// copyOf reports whether l serves a supervisor's copy of catalog: a
// reader-<id>-<n> directory beside it (layout.ReaderCopy).
func copyOf(l launch, catalog string) bool {
	return filepath.Dir(l.Catalog) == filepath.Dir(path(catalog)) && strings.HasPrefix(filepath.Base(l.Catalog), "reader-")
}
