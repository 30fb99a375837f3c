package supervise_test

import (
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/supervise"
)

// A supervisor says where it is: a record written before its first server,
// its server in it; a fence named while its writer runs is acknowledged
// once the writer is replaced by a reader (the wait a workflow makes
// returns then, long before the fence time); a supervisor started under a
// named fence opens nothing on the source and acknowledges at once; a
// stopped one leaves no record.
func TestSupervisorAcknowledgesTheFence(t *testing.T) {
	f := newFixture(t)
	bins, log := standins(t, "v1")
	src := f.pointed(t)
	r := f.run(t, map[format.Version]string{format.V1: bins["v1"]})
	if l := waitLaunch(t, log, 1); l.Mode != "writer" {
		t.Fatalf("first launch %+v, want a writer", l)
	}
	live := waitRecord(t, f, func(r presence.Record) bool { return r.Mode == "writer" })
	if live.Role != presence.Follower || live.Catalog != src || live.Acked != "" {
		t.Fatalf("record %+v, want a follower serving %s as writer, acknowledging nothing", live, src)
	}

	grace := 20 * time.Second
	f.lock(t, "m-1", grace)
	waited, err := presence.Await(f.ctx, f.store, f.ptr, grace, "acknowledge", func(r presence.Record) bool { return r.Acked != "m-1" })
	if err != nil {
		t.Fatal(err)
	}
	if waited >= grace-time.Second {
		t.Fatalf("the acknowledgement took %s, the whole grace", waited)
	}
	if l := waitLaunch(t, log, 2); l.Mode != "reader" || !copyOf(l, src) {
		t.Fatalf("second launch %+v, want a reader on a copy of the source", l)
	}
	rec := waitRecord(t, f, func(r presence.Record) bool { return r.Acked == "m-1" })
	if rec.Mode != "reader" || !strings.Contains(rec.Catalog, "/reader-") {
		t.Fatalf("acknowledged with %+v, want its reader on a copy of the source", rec)
	}

	// A second supervisor started under the named fence: nothing opened.
	bins2, log2 := standins(t, "v1")
	r2 := f.run(t, map[format.Version]string{format.V1: bins2["v1"]})
	if _, err := presence.Await(f.ctx, f.store, f.ptr, grace, "acknowledge", func(r presence.Record) bool { return r.Acked != "m-1" }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if ls := launches(t, log2); len(ls) != 0 {
		t.Fatalf("a supervisor started under a named fence launched %+v, want nothing on the source", ls)
	}
	if got := len(liveRecords(t, f)); got != 2 {
		t.Fatalf("%d live records, want 2", got)
	}
	if err := r2.stop(t); err != nil {
		t.Fatal(err)
	}
	if err := r.stop(t); err != nil {
		t.Fatal(err)
	}
	if got := liveRecords(t, f); len(got) != 0 {
		t.Fatalf("records left after both stopped: %+v", got)
	}
}

// A live record that does not acknowledge holds the wait to its bound,
// then ServersNotAcknowledged names it; a stale one is not waited for.
func TestAwaitBoundAndStaleRecords(t *testing.T) {
	f := newFixture(t)
	if err := presence.Put(f.ctx, f.store, f.ptr, presence.Record{ID: "stuck", Role: presence.Follower, Catalog: "s3://b/prod", Mode: "writer"}); err != nil {
		t.Fatal(err)
	}
	_, err := presence.Await(f.ctx, f.store, f.ptr, 600*time.Millisecond, "acknowledge", func(r presence.Record) bool { return r.Acked != "m-1" })
	if !errors.Is(err, presence.ErrNotAcknowledged) || !strings.Contains(err.Error(), "stuck") {
		t.Fatalf("a live record that never acknowledges: %v, want ServersNotAcknowledged naming it", err)
	}
	if err := presence.Put(f.ctx, f.store, f.ptr, presence.Record{ID: "stuck", Role: presence.Follower, StaleAfterSeconds: 0.2}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if waited, err := presence.Await(f.ctx, f.store, f.ptr, 10*time.Second, "acknowledge", func(r presence.Record) bool { return r.Acked != "m-1" }); err != nil || waited > time.Second {
		t.Fatalf("a stale record: waited %s (%v), want no wait", waited, err)
	}
}

func liveRecords(t *testing.T, f fixture) []presence.Record {
	t.Helper()
	live, err := presence.Live(f.ctx, f.store, f.ptr, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return live
}

// waitRecord waits for a live record that ok accepts.
func waitRecord(t *testing.T, f fixture, ok func(presence.Record) bool) presence.Record {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range liveRecords(t, f) {
			if ok(r) {
				return r
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no such presence record within 20 s: %+v", liveRecords(t, f))
	return presence.Record{}
}

// A pointer that can no longer be read (its endpoint stops answering) is a
// degraded state, said within the request limits' bound: what runs keeps
// running, nothing is started or stopped; once it reads again, serving
// (issue 40 item 2).
func TestUnreadablePointerKeepsWhatRuns(t *testing.T) {
	f := newFixture(t)
	proxy := s3server.StartStallProxy(t, os.Getenv("AWS_ENDPOINT_URL"), nil)
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv(awsconfig.EnvStallTimeout, "500ms")
	t.Setenv(awsconfig.EnvAttempts, "2")
	store, err := blob.New(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	f.store = store
	bins, log := standins(t, "v1")
	src := f.pointed(t)
	r := f.run(t, map[format.Version]string{format.V1: bins["v1"]})
	if l := waitLaunch(t, log, 1); l.Mode != "writer" {
		t.Fatalf("first launch %+v", l)
	}
	// The pointer's reads stall from now on (a new pointer version, so
	// that the conditional GET has a body to stall).
	f.flip(t, src, format.V1, "same-catalog")
	proxy.SetStall(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/CURRENT")
	})
	start := time.Now()
	h := r.waitState(t, supervise.Degraded)
	t.Logf("degraded after %s: %s", time.Since(start).Round(time.Millisecond), h.Reason)
	if !strings.Contains(h.Reason, supervise.ErrPointerUnreadable.ErrorName()) {
		t.Fatalf("degraded with %q, want %s", h.Reason, supervise.ErrPointerUnreadable.ErrorName())
	}
	time.Sleep(time.Second)
	if ls := launches(t, log); len(ls) != 1 {
		t.Fatalf("launches while the pointer could not be read: %+v", ls)
	}
	proxy.SetStall(nil)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && !strings.Contains(lastReason(r), "the pointer names") {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(lastReason(r), "the pointer names") {
		t.Fatalf("not serving again once the pointer reads: %q", lastReason(r))
	}
	if ls := launches(t, log); len(ls) != 1 {
		t.Fatalf("the writer was restarted: %+v", ls)
	}
}

// lastReason is the reason of r's last decided health line.
func lastReason(r *running) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := len(r.health) - 1; i >= 0; i-- {
		if r.health[i].Event == "decided" {
			return r.health[i].Reason
		}
	}
	return ""
}
