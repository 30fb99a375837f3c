package main

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// syncBuffer is a bytes.Buffer for several writers (RockLake's output and
// the health lines).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// supervisor is `rocklake-migrate serve` run in this process for a test:
// RockLake's port, the output (RockLake's passes through) and health
// lines, and stop, which ends it and returns its exit code (-1 if it did
// not end within 30 s).
type supervisor struct {
	port        int
	out, errOut syncBuffer
	stop        func() int
}

// superviseRockLake runs `serve --pointer ptr --rocklake 1=bin` with the
// serve flags given, RockLake bound to a free port on 127.0.0.1 with at
// most sessions sessions; it is stopped when tb ends, if not before.
func superviseRockLake(tb testing.TB, ctx context.Context, ptr, bin string, sessions int, flags ...string) *supervisor {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s := &supervisor{port: l.Addr().(*net.TCPAddr).Port}
	l.Close()
	// Flags after a "--" among flags go to RockLake.
	var rl []string
	if i := slices.Index(flags, "--"); i >= 0 {
		flags, rl = flags[:i], flags[i+1:]
	}
	args := append([]string{"serve", "--pointer", ptr, "--rocklake", "1=" + bin}, flags...)
	args = append(args, "--", "--bind", "127.0.0.1:"+strconv.Itoa(s.port), "--drain-timeout", "1", "--max-sessions", strconv.Itoa(sessions))
	args = append(args, rl...)
	serveCtx, cancel := context.WithCancel(ctx)
	done := make(chan int, 1)
	go func() { done <- run(serveCtx, &env{stdout: &s.out, stderr: &s.errOut}, args) }()
	var once sync.Once
	code := -1
	s.stop = func() int {
		once.Do(func() {
			cancel()
			select {
			case code = <-done:
			case <-time.After(30 * time.Second):
				tb.Errorf("serve did not stop within 30 s\n%s", s.errOut.String())
			}
		})
		return code
	}
	tb.Cleanup(func() { s.stop() })
	return s
}

// writeSchema commits a schema over the extended protocol (so that a
// refusal carries its SQLSTATE).
func writeSchema(ctx context.Context, cl *rocklake.Server, name string) error {
	id, err := rocklake.LatestSnapshotID(ctx, cl)
	if err != nil {
		return err
	}
	_, err = cl.ExecExtended(ctx,
		rocklake.Stmt{SQL: "BEGIN"},
		rocklake.Stmt{SQL: fmt.Sprintf("INSERT INTO ducklake_schema VALUES (0, 'a4e3c0de-0000-4000-8000-00000000ffff', %d, NULL, '%s', '%s/', true)", id+1, name, name)},
		rocklake.Stmt{SQL: "COMMIT"})
	return err
}

func schemas(ctx context.Context, cl *rocklake.Server) (string, error) {
	rows, err := cl.Query(ctx, "SELECT schema_name FROM ducklake_schema")
	if err != nil {
		return "", err
	}
	var names []string
	for _, r := range rows {
		names = append(names, r["schema_name"])
	}
	return strings.Join(names, ","), nil
}

// eventually retries f every 100 ms for up to 30 s.
func eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = f(); err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within 30 s: %v", what, err)
}

// The supervisor with the real RockLake and the real workflow: it serves the
// pointer's catalog as a writer; `migrate --to v2 --offline` takes the lock
// and waits for the supervisor's acknowledgement: it restarts RockLake as a
// reader on a copy of the source before Freeze fences the source (reads go
// on, writes are refused with SQLSTATE 57P04); after the flip to v2, with
// no v2 binary, a reader on a copy of the source (degraded, said in a
// health line);
// `rollback` brings the writer back on the source, which takes writes,
// every commit before the migration there. A flip to another format-1
// catalog (as rebuild will make) starts the writer there.
func TestRealRockLakeServeFollowsMigration(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	src, other := filepath.Join(dir, "catalogs", "prod"), filepath.Join(dir, "catalogs", "prod-next")
	for c, name := range map[string]string{src: "first_src", other: "first_next"} {
		withRockLake(t, ctx, c, func(srv *rocklake.Server) error {
			if _, err := rocklake.WriteSampleCatalog(ctx, srv); err != nil {
				return err
			}
			return writeSchema(ctx, srv, name)
		})
	}
	ptr := pointAt(t, src)

	sv, cl := servedWriter(t, ctx, ptr, "before_migration")
	stop, out, errOut := sv.stop, &sv.out, &sv.errOut

	// migrate --to v2, its lock watched: reads go on, writes are refused.
	migrated := make(chan result, 1)
	go func() {
		migrated <- cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--freeze-grace", "20s", "--offline")
	}()
	eventually(t, "writes refused under the lock", func() error {
		err := writeSchema(ctx, cl, "under_lock")
		switch {
		case err == nil:
			return fmt.Errorf("a write was accepted")
		case !strings.Contains(err.Error(), "57P04"):
			return err
		}
		t.Logf("a write under the lock: %v", err)
		return nil
	})
	if names, err := schemas(ctx, cl); err != nil || !strings.Contains(names, "before_migration") {
		t.Fatalf("reads under the lock: %q, %v", names, err)
	}
	r := <-migrated
	r.want(t, exitOK)
	// Flipped to v2; no v2 binary: the source's reader stays, degraded.
	eventually(t, "degraded", func() error {
		if !strings.Contains(errOut.String(), "state=degraded") {
			return fmt.Errorf("no degraded health line")
		}
		return nil
	})
	// The reader on the copy serves the source's reads throughout.
	eventually(t, "reads after the flip to v2", func() error {
		names, err := schemas(ctx, cl)
		if err == nil && !strings.Contains(names, "before_migration") {
			err = fmt.Errorf("schemas %q", names)
		}
		return err
	})
	if err := writeSchema(ctx, cl, "after_flip"); err == nil {
		t.Fatal("the reader on the frozen source took a write")
	}

	// Rollback: the writer on the source again, commits kept.
	cli(t, "rollback", "--pointer", ptr).want(t, exitOK)
	eventually(t, "the writer is back on the source", func() error { return writeSchema(ctx, cl, "after_rollback") })
	if names, err := schemas(ctx, cl); err != nil || !strings.Contains(names, "before_migration") || !strings.Contains(names, "after_rollback") {
		t.Fatalf("after the rollback: %q, %v", names, err)
	}

	// A flip to another format-1 catalog: the writer there once the lock
	// is free (taken and freed as a migration would).
	flipTo(t, ctx, ptr, "file://"+other, format.V1, "m-next")
	eventually(t, "the writer on the new catalog", func() error {
		names, err := schemas(ctx, cl)
		if err != nil {
			return err
		}
		if !strings.Contains(names, "first_next") {
			return fmt.Errorf("schemas %q: not the new catalog's", names)
		}
		return writeSchema(ctx, cl, "on_next")
	})
	if code := stop(); code != exitOK {
		t.Fatalf("serve stopped with exit %d\n%s", code, errOut.String())
	}
	for _, want := range []string{"mode=writer catalog=file://" + src, "mode=reader catalog=file://" + filepath.Dir(src) + "/reader-", "state=degraded", "mode=writer catalog=file://" + other} {
		if !strings.Contains(errOut.String(), want) {
			t.Fatalf("health lines lack %q:\n%s", want, errOut.String())
		}
	}
	// RockLake's own output passes through.
	if !strings.Contains(out.String()+errOut.String(), "Opening catalog in read-only mode") {
		t.Fatalf("RockLake's log is not passed through:\nstdout: %.2000s\nstderr: %.2000s", out.String(), errOut.String())
	}
}

// event is one statement a benchmark client sent.
type event struct {
	at    time.Time
	write bool
	ok    bool
}

// gaps are the spans from a failed statement to the next successful one of
// the same kind.
func gaps(evs []event, write bool) []time.Duration {
	var out []time.Duration
	var failed time.Time
	for _, e := range evs {
		if e.write != write {
			continue
		}
		switch {
		case !e.ok && failed.IsZero():
			failed = e.at
		case e.ok && !failed.IsZero():
			out = append(out, e.at.Sub(failed))
			failed = time.Time{}
		}
	}
	return out
}

// BenchmarkServeSwitch measures what a client of `rocklake-migrate serve`
// sees through `migrate --to v2 --offline` (default grace and interval) of a seeded
// catalog of $ROCKLAKE_BENCH_ROWS rows (100 000 by default) and the
// rollback after it: a read every 20 ms and a write every 100 ms, each on a
// new connection. It reports the read gaps (first failed to first
// successful read: at the switch to reader mode, and at the rollback's
// switch back), the write freeze (first refused write to the flip, when a
// writer for the new format would start) and the rollback's write gap (its
// pointer write to the first accepted write: one restart).
// scripts/bench-serve.sh runs it.
func BenchmarkServeSwitch(b *testing.B) {
	rows := 100000
	if v := os.Getenv("ROCKLAKE_BENCH_ROWS"); v != "" {
		var err error
		if rows, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	bin, err := rocklake.Binary()
	if err != nil {
		b.Fatal(err)
	}
	ctx, _ := s3Stack(b, 20*time.Minute)
	src := filepath.Join(b.TempDir(), "catalogs", "prod")
	mustRun := func(args ...string) {
		b.Helper()
		var o, e bytes.Buffer
		if code := run(ctx, &env{stdout: &o, stderr: &e}, args); code != exitOK {
			b.Fatalf("%v: exit %d\n%s", args, code, e.String())
		}
	}
	mustRun("seed", "--catalog", "file://"+src, "--rows", strconv.Itoa(rows), "--seed", "1")
	ptr := "s3://rocklake/CURRENT"
	mustRun("init-pointer", "--pointer", ptr, "--catalog", "file://"+src)
	sv := superviseRockLake(b, ctx, ptr, bin, 64)
	port, errOut := sv.port, &sv.errOut
	cl := rocklake.Client(port)
	deadline := time.Now().Add(60 * time.Second)
	for writeSchema(ctx, cl, "warm") != nil {
		if time.Now().After(deadline) {
			b.Fatalf("the writer took no write within 60 s\n%s", errOut.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	c := startClient(ctx, cl, func(ctx context.Context) error {
		_, err := rocklake.LatestSnapshotID(ctx, cl)
		return err
	}, 20*time.Millisecond, 100*time.Millisecond)
	defer c.stop()
	b.ResetTimer()
	var mo, me bytes.Buffer
	if code := run(ctx, &env{stdout: &mo, stderr: &me}, []string{"migrate", "--pointer", ptr, "--to", "v2", "--shards", "4", "--offline"}); code != exitOK {
		b.Fatalf("migrate: exit %d\n%s", code, me.String())
	}
	// The flip is the pointer's write (Flip then frees the lock and
	// removes the read replica).
	_, cur, _ := readPointer(b, ctx, ptr)
	flipped := cur.UpdatedAt
	mustRun("rollback", "--pointer", ptr)
	rolledBack := time.Now()
	for {
		var ok bool
		for _, e := range c.sent() {
			if e.write && e.ok && e.at.After(rolledBack) {
				ok = true
			}
		}
		if ok || time.Since(rolledBack) > time.Minute {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	b.StopTimer()
	c.stop()
	evs := c.sent()
	var firstRefused, firstAfter time.Time
	for _, e := range evs {
		if e.write && !e.ok && firstRefused.IsZero() {
			firstRefused = e.at
		}
		if e.write && e.ok && e.at.After(rolledBack) && firstAfter.IsZero() {
			firstAfter = e.at
		}
	}
	reads := gaps(events(evs), false)
	var worst time.Duration
	for _, g := range reads {
		worst = max(worst, g)
	}
	b.ReportMetric(float64(rows), "rows")
	b.ReportMetric(worst.Seconds(), "max-read-gap-s")
	b.ReportMetric(flipped.Sub(firstRefused).Seconds(), "write-freeze-s")
	b.ReportMetric(firstAfter.Sub(rolledBack).Seconds(), "rollback-write-gap-s")
	b.Logf("rows %d: read gaps %v; writes refused from %s to the flip %s (%.2f s); rollback's write gap %.2f s; %d statements",
		rows, reads, firstRefused.Format("15:04:05.000"), flipped.Format("15:04:05.000"), flipped.Sub(firstRefused).Seconds(), firstAfter.Sub(rolledBack).Seconds(), len(evs))
}
