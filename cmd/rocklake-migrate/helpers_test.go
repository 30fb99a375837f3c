package main

// What the tests against the real RockLake share: a catalog served for the
// length of a function, the tests' pointer at a catalog, a supervised
// writer that has taken its first commit, and a flip as a migration's.

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// testPointer is the pointer the tests on s3Stack's bucket use.
const testPointer = "s3://rocklake/CURRENT"

// withRockLake serves dir with the real RockLake while f runs on it, then
// stops it. An error from the start, from f or from the stop fails tb
// (with RockLake's log for f's and the stop's).
func withRockLake(tb testing.TB, ctx context.Context, dir string, f func(srv *rocklake.Server) error) {
	tb.Helper()
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		tb.Fatalf("rocklake serve %s: %v", dir, err)
	}
	err = f(srv)
	if stopErr := srv.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		tb.Fatalf("rocklake on %s: %v\n%s", dir, err, srv.Logs())
	}
}

// sampleCatalog writes RockLake's sample DuckLake catalog in dir through
// the real RockLake (withRockLake) and returns what it wrote.
func sampleCatalog(tb testing.TB, ctx context.Context, dir string) rocklake.Expected {
	tb.Helper()
	var want rocklake.Expected
	withRockLake(tb, ctx, dir, func(srv *rocklake.Server) (err error) {
		want, err = rocklake.WriteSampleCatalog(ctx, srv)
		return err
	})
	return want
}

// addSchema commits a schema named name to the catalog in dir through the
// real RockLake (withRockLake).
func addSchema(tb testing.TB, ctx context.Context, dir, name string) {
	tb.Helper()
	withRockLake(tb, ctx, dir, func(srv *rocklake.Server) error {
		_, err := rocklake.AddSchema(ctx, srv, name)
		return err
	})
}

// rocklakeVerify runs `rocklake verify catalog` on dir and returns its
// report; a failure fails tb.
func rocklakeVerify(tb testing.TB, ctx context.Context, dir string) string {
	tb.Helper()
	out, err := rocklake.Verify(ctx, dir)
	if err != nil {
		tb.Fatalf("rocklake verify catalog %s: %v\n%s", dir, err, out)
	}
	return out
}

// servesEveryCommit checks that the real RockLake serves the catalog in dir
// with a schema of each of names (allCommitted; what names the catalog in
// a failure). It returns the server, stopped when tb ends if not before.
func servesEveryCommit(tb testing.TB, ctx context.Context, dir, what string, names []string) *rocklake.Server {
	tb.Helper()
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.Stop() })
	if err := allCommitted(ctx, srv, names); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	return srv
}

// pointAt points testPointer at the local catalog in dir (init-pointer).
func pointAt(tb testing.TB, dir string) string {
	tb.Helper()
	cli(tb, "init-pointer", "--pointer", testPointer, "--catalog", "file://"+dir).want(tb, exitOK)
	return testPointer
}

// seededS3Pointer seeds a catalog of rows rows at s3://rocklake/catalogs/prod
// and points testPointer at it.
func seededS3Pointer(tb testing.TB, rows int) (src, ptr string) {
	tb.Helper()
	src = "s3://rocklake/catalogs/prod"
	cli(tb, "seed", "--catalog", src, "--rows", strconv.Itoa(rows)).want(tb, exitOK)
	cli(tb, "init-pointer", "--pointer", testPointer, "--catalog", src).want(tb, exitOK)
	return src, testPointer
}

// servedWriter runs `serve` on ptr with the real RockLake
// (superviseRockLake: 16 sessions, interval 200 ms) and waits until its
// writer takes a first commit, a schema named first; it returns the
// supervisor and a client of its RockLake.
func servedWriter(tb testing.TB, ctx context.Context, ptr, first string) (*supervisor, *rocklake.Server) {
	tb.Helper()
	bin, err := rocklake.Binary()
	if err != nil {
		tb.Fatal(err)
	}
	sv := superviseRockLake(tb, ctx, ptr, bin, 16, "--interval", "200ms")
	cl := rocklake.Client(sv.port)
	eventually(tb, "the writer takes a write", func() error { return writeSchema(ctx, cl, first) })
	return sv, cl
}

// readPointer reads the pointer at ptr: the store it read it through, the
// pointer, and the ref a flip from it names.
func readPointer(tb testing.TB, ctx context.Context, ptr string) (*blob.Store, pointer.Pointer, pointer.Ref) {
	tb.Helper()
	store, err := blob.New(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	cur, ref, err := pointer.Read(ctx, store, ptr)
	if err != nil {
		tb.Fatal(err)
	}
	return store, cur, ref
}

// flipTo flips ptr to catalog in format v under migrationID, as a
// migration's Flip would; it returns the store it used.
func flipTo(tb testing.TB, ctx context.Context, ptr, catalog string, v format.Version, migrationID string) *blob.Store {
	tb.Helper()
	store, cur, ref := readPointer(tb, ctx, ptr)
	if _, err := pointer.Flip(ctx, store, ptr, cur.Next(catalog, v, migrationID), ref); err != nil {
		tb.Fatal(err)
	}
	return store
}

// stmt is one statement a client sent (the event), the schema a write
// named and the error.
type stmt struct {
	event
	name string
	err  error
}

// client sends statements through cl until stopped: read every readEvery
// and a write (writeSchema of w0, w1, …) every writeEvery, each on its own
// connection with 5 s to answer, and records every one.
type client struct {
	mu    sync.Mutex
	stmts []stmt
	stop  func() // ends the client and waits for it; again, does nothing
}

func startClient(ctx context.Context, cl *rocklake.Server, read func(context.Context) error, readEvery, writeEvery time.Duration) *client {
	c := &client{}
	clientCtx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	loop := func(write bool, every time.Duration) {
		defer wg.Done()
		for n := 0; clientCtx.Err() == nil; n++ {
			sctx, cancel := context.WithTimeout(clientCtx, 5*time.Second)
			name := fmt.Sprintf("w%d", n)
			var err error
			if write {
				err = writeSchema(sctx, cl, name)
			} else {
				err = read(sctx)
			}
			cancel()
			if clientCtx.Err() != nil {
				return
			}
			c.mu.Lock()
			c.stmts = append(c.stmts, stmt{event{time.Now(), write, err == nil}, name, err})
			c.mu.Unlock()
			time.Sleep(every)
		}
	}
	wg.Add(2)
	go loop(false, readEvery)
	go loop(true, writeEvery)
	var once sync.Once
	c.stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	return c
}

// sent is every statement sent so far.
func (c *client) sent() []stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.stmts)
}

// events are the statements' events (for gaps).
func events(stmts []stmt) []event {
	evs := make([]event, len(stmts))
	for i, s := range stmts {
		evs[i] = s.event
	}
	return evs
}
