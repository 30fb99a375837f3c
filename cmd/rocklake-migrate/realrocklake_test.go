package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
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
	want := sampleCatalog(t, ctx, src)
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
		rocklakeVerify(t, ctx, d)
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
	srv, err := rocklake.Serve(ctx, dst)
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
	out := rocklakeVerify(t, ctx, dir)
	f := rocklake.Fields(out)
	if got := f["Rows checked"]; got != itoa(res.VerifiedRows()) {
		t.Fatalf("rocklake verify checked %q rows, we seeded %d counters+schemas+tables+columns+snapshots\n%s", got, res.VerifiedRows(), out)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// duckdbAnswers serves dir with RockLake and returns DuckDB's answers to
// rocklake.DuckDBQueries, after running stmts.
func duckdbAnswers(t *testing.T, ctx context.Context, dir, data string, stmts []string) string {
	t.Helper()
	var res [][][]*string
	withRockLake(t, ctx, dir, func(srv *rocklake.Server) (err error) {
		if res, err = rocklake.DuckDB(ctx, srv, data, stmts, rocklake.DuckDBQueries); err != nil {
			return fmt.Errorf("duckdb: %w", err)
		}
		return nil
	})
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
	before := duckdbAnswers(t, ctx, src, data, rocklake.DuckDBWorkload)
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

// A bulk load whose every batch goes to L0 (as a large load's do, 8 MiB at a
// time), over many small shards, leaves more L0 SSTs than RockLake's own
// writer allows (8) and compacts them with a wide fan-in, while the progress
// record, flushed after each shard, is one key in many L0 SSTs at once: the
// import must end (a per-key L0 limit below the compaction's minimum left
// the writer waiting for ever), and the real RockLake must verify, serve and
// write to what it leaves, its own compactor taking over.
func TestRealRockLakeServesABulkLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if _, err := seed.Seed(ctx, "file://"+src, seed.Options{Rows: 30000, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	shards := filepath.Join(dir, "shards")
	cli(t, "export", "--catalog", "file://"+src, "--format", "v1", "--output", shards, "--shards", "46").want(t, exitOK)
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "dst")
	opts := shard.ImportOptions{Format: format.V1, Store: slatedb.Options{BulkMemtableBytes: 1}}
	if res, err := shard.Import(ctx, store, shards, "file://"+dst, opts); err != nil || !res.Done {
		t.Fatalf("bulk load: %+v, %v", res, err)
	}
	b, err := slatedb.ProfileBlocks(ctx, "file://"+dst, "", slatedb.Options{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	l0, runs := map[string]bool{}, map[int64]bool{}
	for _, bl := range b.Blocks {
		if bl.SortedRun < 0 {
			l0[bl.SST] = true
		} else {
			runs[bl.SortedRun] = true
		}
	}
	t.Logf("the load left %d L0 SSTs and %d sorted runs", len(l0), len(runs))
	// How many L0 SSTs remain depends on how far the compactor got before
	// the close (20 on a quiet machine, 4 under -race on a busy one); the
	// load must have been compacted and still be wider than RockLake's own
	// L0 limit of 8.
	if len(runs) == 0 || len(l0)+len(runs) <= 8 {
		t.Fatalf("the load left %d L0 SSTs and %d sorted runs: not the shape this test is for", len(l0), len(runs))
	}
	cli(t, "verify", "--catalog", "file://"+dst, "--input", shards).want(t, exitOK)
	want, got := rocklakeVerify(t, ctx, src), rocklakeVerify(t, ctx, dst)
	if w, g := rocklake.Fields(want)["Rows checked"], rocklake.Fields(got)["Rows checked"]; w == "" || w != g {
		t.Fatalf("rocklake verify checked %q rows of the bulk load, %q of its source", g, w)
	}
	srv, err := rocklake.Serve(ctx, dst)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	before, err := rocklake.LatestSnapshotID(ctx, srv)
	if err != nil {
		t.Fatalf("serve the bulk load: %v\n%s", err, srv.Logs())
	}
	after, err := rocklake.AddSchema(ctx, srv, "after_bulk_load")
	if err != nil || after <= before {
		t.Fatalf("write to the bulk load: snapshot %d after %d, %v\n%s", after, before, err, srv.Logs())
	}
}
