package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// committer commits a new schema through srv every interval until stopped,
// counting what RockLake acknowledged and what it refused.
type committer struct {
	mu      sync.Mutex
	acked   []string
	refused int
	evs     []event // every commit, for its outages (gaps)
	stop    chan struct{}
	done    chan struct{}
}

func commitEvery(ctx context.Context, srv *rocklake.Server, interval time.Duration) *committer {
	c := &committer{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-c.stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			name := fmt.Sprintf("online_%04d", i)
			cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err := rocklake.AddSchema(cctx, srv, name)
			cancel()
			c.mu.Lock()
			c.evs = append(c.evs, event{at: time.Now(), write: true, ok: err == nil})
			if err == nil {
				c.acked = append(c.acked, name)
			} else {
				c.refused++
			}
			c.mu.Unlock()
		}
	}()
	return c
}

// longestOutage is the longest span the client saw from a refused commit
// to the next acknowledged one.
func (c *committer) longestOutage() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Max(append(gaps(c.evs, true), 0))
}

// snapshot is what was acknowledged so far.
func (c *committer) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.acked)
}

func (c *committer) halt() (acked []string, refused int) {
	close(c.stop)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked, c.refused
}

// allCommitted checks that the catalog srv serves has a schema of each
// name, every commit acknowledged.
func allCommitted(ctx context.Context, srv *rocklake.Server, names []string) error {
	served, err := schemas(ctx, srv)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, n := range strings.Split(served, ",") {
		have[n] = true
	}
	for _, n := range names {
		if !have[n] {
			return fmt.Errorf("commit %s, acknowledged, is not there", n)
		}
	}
	return nil
}

// servedPointer makes a catalog the real RockLake wrote in
// <dir>/catalogs/prod (servedCatalog), the pointer s3://rocklake/CURRENT at
// it, and `serve` on that pointer (interval 200 ms), whose writer has taken
// a first commit, "before_migration"; cl is a client of the RockLake it
// supervises.
func servedPointer(t *testing.T, ctx context.Context, dir string) (ptr, src string, sv *supervisor, cl *rocklake.Server) {
	t.Helper()
	ptr, src = pointedCatalog(t, ctx, dir)
	sv, cl = servedWriter(t, ctx, ptr, "before_migration")
	return ptr, src, sv, cl
}

// pointedCatalog makes a catalog the real RockLake wrote in
// <dir>/catalogs/prod (servedCatalog, stopped) and the pointer
// s3://rocklake/CURRENT at it.
func pointedCatalog(t *testing.T, ctx context.Context, dir string) (ptr, src string) {
	t.Helper()
	src = filepath.Join(dir, "catalogs", "prod")
	if err := servedCatalog(t, ctx, src).Stop(); err != nil {
		t.Fatal(err)
	}
	return pointAt(t, src), src
}

// servedCatalog makes a catalog in dir with the real RockLake (its sample
// DuckLake workload) and serves it again, as a catalog in service for a
// while: most of it in SSTs its manifest names (RockLake's memtable reaches
// L0 at 64 MiB or after 4096 WAL flushes; a passive writer's checkpoint
// puts it there at once), its next commits in its WAL.
func servedCatalog(t *testing.T, ctx context.Context, dir string) *rocklake.Server {
	t.Helper()
	sampleCatalog(t, ctx, dir)
	w, err := slatedb.OpenWriter(ctx, "file://"+dir, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Minute}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// An online migration while the real RockLake serves the source and a
// client commits through it every 100 ms: the copy runs from a snapshot,
// rounds catch up with the commits, the fence refuses the rest. Every
// commit RockLake acknowledged is in the new catalog, which equals byte for
// byte an offline migration of the frozen source, and RockLake serves it.
// A rebuild (format 1 to format 1), so that RockLake v0.47.11, which serves
// format 1 only, can serve the result.
func TestRealRockLakeOnlineMigration(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	src := filepath.Join(dir, "catalogs", "prod")
	srv := servedCatalog(t, ctx, src)
	defer srv.Stop()
	ptr := pointAt(t, src)

	w := commitEvery(ctx, srv, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond) // commits before the snapshot too
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "online")+"/",
		"--online", "--shards", "2", "--freeze-grace", "0s", "--read-replica=false", "--json")
	time.Sleep(500 * time.Millisecond) // commits after the fence, refused
	acked, refused := w.halt()
	if err := srv.Stop(); err != nil {
		t.Logf("rocklake serve (fenced) stopped: %v", err)
	}
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "rebuilt" || rep.Online == nil {
		t.Fatalf("migrate --online report %q: %v", r.stdout, err)
	}
	o := rep.Online
	if len(o.Rounds) < 2 || !o.Rounds[len(o.Rounds)-1].Last || o.FreezeSeconds <= 0 {
		t.Fatalf("online report %+v: want rounds before the fence and the last one after it, and the freeze", o)
	}
	// RockLake's commits since it opened sit in its WAL: the fence
	// fetched them ahead.
	if b := o.Backlog; b == nil || b.WALSSTs == 0 || b.Bytes == 0 {
		t.Fatalf("online report %+v: want RockLake's WAL backlog fetched ahead of the fence", o)
	}
	if _, ok := rep.StateSeconds["VerifyCatchUp"]; !ok {
		t.Fatalf("no VerifyCatchUp before the fence: states %v", rep.StateSeconds)
	}
	carried := 0
	for _, rd := range o.Rounds {
		carried += rd.Keys
	}
	t.Logf("%d commits acknowledged, %d refused; %d rounds carried %d keys; write freeze %.2f s; rounds %+v", len(acked), refused, len(o.Rounds), carried, o.FreezeSeconds, o.Rounds)
	if carried == 0 || refused == 0 || len(acked) < 5 {
		t.Fatalf("the rounds carried %d keys, RockLake acknowledged %d commits and refused %d: the writer did not commit across the migration", carried, len(acked), refused)
	}

	// The offline migration of the frozen source, by the same tool.
	other := "s3://rocklake/OFFLINE"
	cli(t, "init-pointer", "--pointer", other, "--catalog", "file://"+src).want(t, exitOK)
	off := cli(t, "migrate", "--pointer", other, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "offline")+"/",
		"--offline", "--shards", "3", "--freeze-grace", "0s", "--read-replica=false", "--json")
	off.want(t, exitOK)
	var offRep localrun.Report
	if err := json.Unmarshal([]byte(off.stdout), &offRep); err != nil {
		t.Fatal(err)
	}
	kvscan.Same(t, "online against offline migration of the frozen source", kvscan.Dump(t, offRep.Target), kvscan.Dump(t, rep.Target))

	target := strings.TrimPrefix(rep.Target, "file://")
	rocklakeVerify(t, ctx, target)
	served := servesEveryCommit(t, ctx, target, "the new catalog "+rep.Target, acked)
	// A commit on the new catalog after the flip: rollback carries it back
	// into the source, which RockLake then serves with every commit.
	if _, err := rocklake.AddSchema(ctx, served, "after_the_flip"); err != nil {
		t.Fatalf("commit on the new catalog: %v\n%s", err, served.Logs())
	}
	if err := served.Stop(); err != nil {
		t.Fatal(err)
	}
	back := cli(t, "rollback", "--pointer", ptr, "--json")
	back.want(t, exitOK)
	var rb localrun.Report
	if err := json.Unmarshal([]byte(back.stdout), &rb); err != nil || rb.Outcome != "rolled back" || rb.Target != "file://"+src || rb.CarriedKeys == 0 {
		t.Fatalf("rollback report %q: %v", back.stdout, err)
	}
	rocklakeVerify(t, ctx, src)
	servesEveryCommit(t, ctx, src, "the source after the rollback", append(acked, "after_the_flip"))
}

// A catalog the real RockLake made and has served since without flushing
// lies wholly in its WAL, which a snapshot (a detached checkpoint) does not
// hold: an online run migrates it offline, says why in its report, and
// loses no acknowledged commit.
func TestRealRockLakeOnlineMigratesAnUnflushedCatalogOffline(t *testing.T) {
	ctx, _ := s3Stack(t, 3*time.Minute)
	dir := t.TempDir()
	src := filepath.Join(dir, "catalogs", "prod")
	srv, err := rocklake.Serve(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	if _, err := rocklake.WriteSampleCatalog(ctx, srv); err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
	ptr := pointAt(t, src)
	w := commitEvery(ctx, srv, 100*time.Millisecond)
	time.Sleep(300 * time.Millisecond)
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "new")+"/",
		"--online", "--shards", "2", "--freeze-grace", "0s", "--read-replica=false", "--json")
	acked, refused := w.halt()
	if err := srv.Stop(); err != nil {
		t.Logf("rocklake serve (fenced) stopped: %v", err)
	}
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "rebuilt" {
		t.Fatalf("migrate --online report %q: %v", r.stdout, err)
	}
	if rep.Online == nil || !strings.Contains(rep.Online.Offline, "WAL") || len(rep.Online.Rounds) != 0 || rep.Online.FreezeSeconds <= 0 {
		t.Fatalf("online report %+v: want the run migrated offline, with the reason and its freeze", rep.Online)
	}
	if _, ok := rep.StateSeconds["Snapshot"]; !ok {
		t.Fatalf("states %v: want Snapshot", rep.StateSeconds)
	}
	if len(acked) == 0 {
		t.Fatalf("RockLake acknowledged no commit before the run (%d refused)", refused)
	}
	servesEveryCommit(t, ctx, strings.TrimPrefix(rep.Target, "file://"), "the new catalog "+rep.Target, acked)
}

// An online run interrupted before its fence (in Fence's grace) cleans up
// after itself: no checkpoint of the run left on the source (Snapshot's,
// the rounds'), the pointer where it was, and RockLake, never fenced, still
// commits.
func TestRealRockLakeOnlineInterruptedBeforeTheFence(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	src := filepath.Join(t.TempDir(), "catalogs", "prod")
	srv := servedCatalog(t, ctx, src)
	defer srv.Stop()
	ptr := pointAt(t, src)
	w := commitEvery(ctx, srv, 100*time.Millisecond)
	// A live supervisor that does not acknowledge holds Fence in its
	// grace, where the interruption comes.
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := presence.Put(ctx, store, ptr, presence.Record{ID: "slow", Role: presence.Follower, Catalog: "file://" + src, Mode: "writer"}); err != nil {
		t.Fatal(err)
	}

	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	stderr := &cancelOn{state: "Fence", cancel: interrupt}
	var stdout strings.Builder
	code := run(runCtx, &env{stdout: &stdout, stderr: stderr}, []string{"migrate", "--pointer", ptr, "--rebuild", "--online",
		"--migration-id", "m-online-interrupted", "--shards", "2", "--freeze-grace", "5s", "--read-replica=false"})
	acked, refused := w.halt()
	if code == exitOK || !strings.Contains(stderr.buf.String(), "cleaned up after the interruption") {
		t.Fatalf("interrupted migrate --online: exit %d\n%s", code, stderr.buf.String())
	}
	if refused != 0 || len(acked) == 0 {
		t.Fatalf("RockLake refused %d commits and acknowledged %d through an online run that never fenced", refused, len(acked))
	}
	if _, err := rocklake.AddSchema(ctx, srv, "after_the_interruption"); err != nil {
		t.Fatalf("RockLake no longer commits after the interrupted run: %v\n%s", err, srv.Logs())
	}
	cps, err := slatedb.ListCheckpoints(ctx, "file://"+src, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if layout.OfRun(cp.Name, "m-online-interrupted") {
			t.Fatalf("checkpoint %s (%s) of the interrupted run is left on the source", cp.ID, cp.Name)
		}
	}
	if st := cli(t, "status", "--pointer", ptr); st.code != exitOK || !strings.Contains(st.stdout, "file://"+src) {
		t.Fatalf("status after the interrupted run:\n%s\n%s", st.stdout, st.stderr)
	}
}

// The last mile, online: `rocklake-migrate serve` runs the real RockLake on
// the pointer's catalog while a client commits through it every 100 ms;
// `migrate --online` copies while those commits go on (the supervisor keeps
// the writer under an online lock), fences, flips, and the supervisor
// restarts the writer on the new catalog, where every acknowledged commit
// is, and where the client's writes go on.
func TestRealRockLakeServeFollowsOnlineMigration(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	ptr, _, sv, cl := servedPointer(t, ctx, dir)
	errOut := &sv.errOut

	w := commitEvery(ctx, cl, 100*time.Millisecond)
	time.Sleep(500 * time.Millisecond)
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "online")+"/",
		"--online", "--shards", "2", "--freeze-grace", "20s", "--read-replica=false", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Online == nil {
		t.Fatalf("migrate --online report %q: %v", r.stdout, err)
	}
	during := len(w.snapshot())
	eventually(t, "the writer on the new catalog", func() error { return writeSchema(ctx, cl, "after_flip") })
	time.Sleep(500 * time.Millisecond)
	acked, refused := w.halt()
	t.Logf("%d commits acknowledged (%d by the flip), %d refused, the longest outage the client saw %s; write freeze %.2f s, %d rounds", len(acked), during, refused, w.longestOutage().Round(time.Millisecond), rep.Online.FreezeSeconds, len(rep.Online.Rounds))
	if during < 5 || len(acked) <= during {
		t.Fatalf("%d commits acknowledged during the run, %d in all: the writes did not go on through it and after", during, len(acked))
	}
	if err := allCommitted(ctx, cl, append(acked, "before_migration", "after_flip")); err != nil {
		t.Fatalf("the catalog served after the flip, %s: %v", rep.Target, err)
	}
	// The run's record, as `history` prints it, names the rounds and the
	// freeze.
	if h := cli(t, "history", "--pointer", ptr); h.code != exitOK || !strings.Contains(h.stdout, "online: ") || !strings.Contains(h.stdout, "after the fence") {
		t.Fatalf("history:\n%s\n%s", h.stdout, h.stderr)
	}
	if !strings.Contains(errOut.String(), "mode=writer catalog="+rep.Target) {
		t.Fatalf("the supervisor's health lines do not name the writer on %s:\n%s", rep.Target, errOut.String())
	}
}
