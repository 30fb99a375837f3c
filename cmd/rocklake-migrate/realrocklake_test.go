package main

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// The real RockLake writes a catalog through its PostgreSQL interface; our
// check, inspect and export read it; export v1 → import v1 gives a catalog
// equal key by key and byte by byte, which RockLake verifies, inspects
// identically, serves and writes to.
func TestRealRockLakeCatalogRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	srv, err := rocklake.Serve(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rocklake.WriteSampleCatalog(ctx, srv)
	if stopErr := srv.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		t.Fatal(err)
	}
	srcURL := "file://" + src
	cli(t, "check", "--catalog", srcURL, "--expect", "v1").want(t, exitOK)
	r := cli(t, "inspect", "--catalog", srcURL)
	r.want(t, exitOK)
	for _, s := range []string{"catalog format version 1", "ducklake_data_file", "next_snapshot_id", "writer-epoch", "writer-nonce"} {
		if !strings.Contains(r.stdout, s) {
			t.Fatalf("inspect of RockLake's catalog lacks %q:\n%s", s, r.stdout)
		}
	}
	// Our check refuses it as format 2, with the startup check's exit code.
	cli(t, "check", "--catalog", srcURL, "--expect", "v2").want(t, exitMismatch, "FormatVersionMismatch (SQLSTATE 0A000)", "found catalog format version 1, expected 2")

	shards := filepath.Join(dir, "shards")
	cli(t, "export", "--catalog", srcURL, "--format", "v1", "--output", shards, "--shards", "3").want(t, exitOK)
	dst := filepath.Join(dir, "copy")
	cli(t, "import", "--format", "v1", "--input", shards, "--catalog", "file://"+dst).want(t, exitOK)
	cli(t, "verify", "--catalog", "file://"+dst, "--input", shards).want(t, exitOK)
	if a, b := rawDump(t, srcURL), rawDump(t, "file://"+dst); a != b {
		t.Fatalf("the imported copy differs from RockLake's catalog:\nsource:\n%s\ncopy:\n%s", a, b)
	}

	for _, d := range []string{src, dst} {
		if out, err := rocklake.Verify(ctx, d); err != nil {
			t.Fatalf("rocklake verify catalog %s: %v\n%s", d, err, out)
		}
	}
	a, err := rocklake.InspectSnapshot(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rocklake.InspectSnapshot(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	// Everything but the writer epoch, which each open of RockLake moves.
	fa, fb := rocklake.Fields(a), rocklake.Fields(b)
	delete(fa, "Writer epoch")
	delete(fb, "Writer epoch")
	if len(fa) < 10 || !maps.Equal(fa, fb) {
		t.Fatalf("rocklake inspect snapshot differs:\nsource: %s\ncopy: %s", a, b)
	}
	if fa["Data files"] != strconv.Itoa(want.DataFiles) {
		t.Fatalf("rocklake inspect snapshot counts %s data files, the workload wrote %d", fa["Data files"], want.DataFiles)
	}

	// The copy is served, and accepts writes.
	srv, err = rocklake.Serve(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	latest, err := rocklake.LatestSnapshotID(ctx, srv)
	if err != nil || latest != want.LatestSnapshotID {
		t.Fatalf("the copy serves latest snapshot %d (%v), want %d", latest, err, want.LatestSnapshotID)
	}
	if _, err := rocklake.AddSchema(ctx, srv, "after_copy"); err != nil {
		t.Fatalf("write to the copy: %v\n%s", err, srv.Logs())
	}
}

// A catalog from our seed generator passes `rocklake verify catalog`, with
// the rows we seeded.
func TestSeededCatalogPassesRockLakeVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "seeded")
	res, err := seed.Seed(ctx, "file://"+dir, seed.Options{Rows: 20000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	out, err := rocklake.Verify(ctx, dir)
	if err != nil {
		t.Fatalf("rocklake verify catalog: %v\n%s", err, out)
	}
	f := rocklake.Fields(out)
	if got := f["Rows checked"]; got != itoa(res.VerifiedRows()) {
		t.Fatalf("rocklake verify checked %q rows, we seeded %d counters+schemas+tables+columns+snapshots\n%s", got, res.VerifiedRows(), out)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// duckdbWorkload is what a DuckDB user does to a DuckLake catalog served by
// RockLake: schemas, tables, inserts, deletes, schema changes and drops
// (UPDATE and non-ASCII names fail in this RockLake release; they are left
// out). duckdbQueries read it all back.
var (
	duckdbWorkload = []string{
		"CREATE SCHEMA lake.sales",
		"CREATE TABLE lake.sales.orders (id BIGINT, customer VARCHAR, amount DECIMAL(18,3), placed TIMESTAMP)",
		"INSERT INTO lake.sales.orders SELECT i, 'c' || (i % 17), i * 1.25, TIMESTAMP '2025-01-01' + INTERVAL (i) MINUTE FROM range(500) r(i)",
		"INSERT INTO lake.sales.orders VALUES (10000, 'late', 1.5, TIMESTAMP '2025-06-01 12:00:00')",
		"DELETE FROM lake.sales.orders WHERE id % 50 = 0",
		"ALTER TABLE lake.sales.orders ADD COLUMN note VARCHAR",
		"INSERT INTO lake.sales.orders VALUES (10001, 'noted', 2.5, TIMESTAMP '2025-06-02 08:00:00', 'with a note')",
		"CREATE TABLE lake.main.customers (id INTEGER, name VARCHAR)",
		"INSERT INTO lake.main.customers SELECT i, 'customer ' || i FROM range(40) r(i)",
		"CREATE TABLE lake.main.scratch (x INTEGER)",
		"INSERT INTO lake.main.scratch VALUES (1), (2)",
		"DROP TABLE lake.main.scratch",
	}
	duckdbQueries = []string{
		"SELECT count(*), sum(id), sum(amount), min(placed), max(placed), count(note) FROM lake.sales.orders",
		"SELECT customer, count(*), sum(amount) FROM lake.sales.orders GROUP BY customer ORDER BY customer",
		"SELECT * FROM lake.sales.orders ORDER BY id DESC LIMIT 3",
		"SELECT count(*), max(name) FROM lake.main.customers",
		"SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY ALL",
		"SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE database_name = 'lake' ORDER BY ALL",
	}
)

// duckdbAnswers serves dir with RockLake and returns DuckDB's answers to
// duckdbQueries, after running stmts.
func duckdbAnswers(t *testing.T, ctx context.Context, dir, data string, stmts []string) string {
	t.Helper()
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rocklake.DuckDB(ctx, srv, data, stmts, duckdbQueries)
	if stopErr := srv.Stop(); err == nil {
		err = stopErr
	}
	if err != nil {
		t.Fatalf("duckdb on %s: %v\n%s", dir, err, srv.Logs())
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// DuckDB, the real client, writes a lake through RockLake; after export →
// import v1 and `rocklake serve` on the copy, the same queries give the same
// answers.
func TestDuckDBAnswersTheSameAfterCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src, data := filepath.Join(dir, "src"), filepath.Join(dir, "data")+"/"
	before := duckdbAnswers(t, ctx, src, data, duckdbWorkload)
	if !strings.Contains(before, `"40","customer 9"`) || !strings.Contains(before, "with a note") {
		t.Fatalf("DuckDB did not read back what it wrote: %s", before)
	}
	shards := filepath.Join(dir, "shards")
	cli(t, "export", "--catalog", "file://"+src, "--format", "v1", "--output", shards, "--shards", "2").want(t, exitOK)
	dst := filepath.Join(dir, "copy")
	cli(t, "import", "--format", "v1", "--input", shards, "--catalog", "file://"+dst).want(t, exitOK)
	if after := duckdbAnswers(t, ctx, dst, data, nil); after != before {
		t.Fatalf("DuckDB answers differ on the copy:\nsource: %s\ncopy:   %s", before, after)
	}
}
