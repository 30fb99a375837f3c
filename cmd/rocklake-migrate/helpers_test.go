package main

// What the tests against the real RockLake share: a catalog served for the
// length of a function, the tests' pointer at a catalog, a supervised
// writer that has taken its first commit, and a flip as a migration's.

import (
	"context"
	"strconv"
	"testing"

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
