package slatedb_test

// Compatibility with the real RockLake v0.47.11, whose SlateDB is 0.13
// (DESIGN.md 2.5): what this binding writes into a catalog (Freeze's fence and
// checkpoint, an imported catalog, detached checkpoints) must stay a catalog
// RockLake opens, serves, writes and verifies, and what RockLake writes must be
// readable here. These tests run the `rocklake` binary itself (internal/testenv/rocklake;
// scripts/install-rocklake.sh builds it), which takes a catalog as a plain
// directory.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// needRockLake fails the test, saying how to get it, without the binary.
func needRockLake(t *testing.T) {
	t.Helper()
	if _, err := rocklake.Binary(); err != nil {
		t.Fatalf("these tests need the real RockLake v0.47.11 binary: %v", err)
	}
}

func serve(t *testing.T, ctx context.Context, dir string) *rocklake.Server {
	t.Helper()
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

// compactionsIdle waits until RockLake's compactor runs no compaction: its
// log names none in flight, or the last one it names has finished since.
// `rocklake serve` exits without closing its database, and a compaction
// still running then is cut short (its SlateDB 0.13 panics in that task, and
// the next open resumes it); the tests stop a server only when it is idle.
func compactionsIdle(t *testing.T, srv *rocklake.Server) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs := srv.Logs()
		inFlight := strings.LastIndex(logs, "in-flight compaction")
		if inFlight < 0 || strings.LastIndex(logs, "finished compaction") > inFlight {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("RockLake's compaction did not finish within 2 minutes\n%s", logs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop ends the server once its compactor is idle and requires a clean stop.
func stop(t *testing.T, srv *rocklake.Server) {
	t.Helper()
	compactionsIdle(t, srv)
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(srv.Logs(), "panicked at") {
		t.Fatalf("rocklake serve panicked:\n%s", srv.Logs())
	}
}

func verify(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	if out, err := rocklake.Verify(ctx, dir); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// schemaSQL is a DuckLake transaction as RockLake's SQL front takes it: a
// schema, a table in it and the snapshot that commits them.
func schemaSQL(schema string) []rocklake.Stmt {
	return []rocklake.Stmt{
		{SQL: "BEGIN"},
		{SQL: fmt.Sprintf("INSERT INTO ducklake_schema (schema_id, schema_uuid, begin_snapshot, end_snapshot, schema_name, path, path_is_relative) VALUES (0, gen_random_uuid(), 0, NULL, '%s', '%s/', true)", schema, schema)},
		{SQL: fmt.Sprintf("INSERT INTO ducklake_table (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative) VALUES (0, gen_random_uuid(), 0, NULL, 1, '%s_t', '%s_t/', true)", schema, schema)},
		{SQL: "INSERT INTO ducklake_snapshot (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id) VALUES (0, now(), 0, 0, 0)"},
		{SQL: "COMMIT"},
	}
}

func createSchema(t *testing.T, ctx context.Context, srv *rocklake.Server, schema string) {
	t.Helper()
	if _, err := srv.ExecExtended(ctx, schemaSQL(schema)...); err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
}

// sampleCatalog makes a catalog with RockLake itself: internal/testenv/rocklake's DuckLake
// workload (schemas, tables, columns, data and delete files, snapshots).
func sampleCatalog(t *testing.T, ctx context.Context, srv *rocklake.Server) {
	t.Helper()
	if _, err := rocklake.WriteSampleCatalog(ctx, srv); err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
}

// servedSample is the real RockLake serving the sample catalog it wrote in
// a directory name of the test's: a context for the test, the directory
// and the server.
func servedSample(t *testing.T, name string) (context.Context, string, *rocklake.Server) {
	t.Helper()
	needRockLake(t)
	ctx := testenv.Context(t)
	dir := filepath.Join(t.TempDir(), name)
	srv := serve(t, ctx, dir)
	sampleCatalog(t, ctx, srv)
	return ctx, dir, srv
}

// RockLake's key shapes (crates/rocklake-core/src/{tags,keys,values}.rs).
var (
	rlFormatKey   = append([]byte{0xFF}, "catalog-format-version"...)
	rlRetainKey   = append([]byte{0xFF}, "retain-from"...)
	rlFormatValue = []byte{1, 'S', 'D', 'K', 'V', 0, 0, 0, 1}
)

func rlCounter(v uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{1, 'S', 'D', 'K', 'V'}, v)
}

type kvs struct {
	keys, values [][]byte
}

func (k kvs) get(key []byte) ([]byte, bool) {
	for i := range k.keys {
		if bytes.Equal(k.keys[i], key) {
			return k.values[i], true
		}
	}
	return nil, false
}

func (k kvs) containsValue(sub string) bool {
	for _, v := range k.values {
		if bytes.Contains(v, []byte(sub)) {
			return true
		}
	}
	return false
}

func readAll(t *testing.T, ctx context.Context, url string, ro slatedb.ReaderOptions) kvs {
	t.Helper()
	r, err := slatedb.OpenReader(ctx, url, ro)
	if err != nil {
		t.Fatalf("open reader on %s (checkpoint %q): %v", url, ro.Checkpoint, err)
	}
	defer r.Close()
	keys, values := scanAll(t, ctx, r, nil, nil)
	return kvs{keys, values}
}

func checkpointIDs(t *testing.T, ctx context.Context, url string) map[string]slatedb.Checkpoint {
	t.Helper()
	list, err := slatedb.ListCheckpoints(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatalf("list checkpoints: %v", err)
	}
	m := map[string]slatedb.Checkpoint{}
	for _, c := range list {
		m[c.ID] = c
	}
	return m
}

// Freeze on a live RockLake: this binding reads the catalog RockLake is
// writing (its WAL included), and Freeze's passive writer fences RockLake and
// checkpoints everything RockLake acknowledged. RockLake's next write fails
// as fenced; started again, RockLake opens the catalog, writes and verifies
// it, and the manifest it writes keeps Freeze's checkpoint.
func TestRockLakeServesCatalogAfterFreeze(t *testing.T) {
	ctx, dir, srv := servedSample(t, "catalog")
	url := "file://" + dir
	createSchema(t, ctx, srv, "before_freeze")

	before := readAll(t, ctx, url, slatedb.ReaderOptions{})
	if v, ok := before.get(rlFormatKey); !ok || !bytes.Equal(v, rlFormatValue) {
		t.Fatalf("catalog-format-version read from RockLake's catalog = %x (present %v), want %x", v, ok, rlFormatValue)
	}
	if !before.containsValue("before_freeze") || !before.containsValue(rocklake.SampleTable) {
		t.Fatalf("the schema written through RockLake is not among the %d keys read", len(before.keys))
	}

	// Freeze: fence RockLake's writer with a passive writer, checkpoint, close.
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatalf("fence RockLake's catalog: %v", err)
	}
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: "freeze"})
	if err != nil {
		t.Fatalf("writer checkpoint: %v", err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close the fencing writer: %v", err)
	}
	_, err = srv.ExecExtended(ctx, schemaSQL("after_fence")...)
	if err == nil || !strings.Contains(err.Error(), "newer DB client") {
		t.Fatalf("RockLake's write after Freeze's fence: %v, want its SlateDB's fenced error (detected newer DB client)", err)
	}
	stop(t, srv)

	pinned := readAll(t, ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID})
	if len(pinned.keys) != len(before.keys) {
		t.Fatalf("Freeze's checkpoint holds %d keys, want the %d RockLake had acknowledged", len(pinned.keys), len(before.keys))
	}
	for i := range before.keys {
		if !bytes.Equal(pinned.keys[i], before.keys[i]) || !bytes.Equal(pinned.values[i], before.values[i]) {
			t.Fatalf("Freeze's checkpoint entry %d = %x, want %x", i, pinned.keys[i], before.keys[i])
		}
	}

	// RockLake opens the frozen catalog again, writes and verifies it.
	srv = serve(t, ctx, dir)
	createSchema(t, ctx, srv, "after_freeze")
	stop(t, srv)
	verify(t, ctx, dir)

	if _, ok := checkpointIDs(t, ctx, url)[cp.ID]; !ok {
		t.Fatalf("Freeze's checkpoint %s is gone from the manifest after RockLake wrote", cp.ID)
	}
	latest := readAll(t, ctx, url, slatedb.ReaderOptions{})
	if !latest.containsValue("after_freeze") || !latest.containsValue("before_freeze") || latest.containsValue("after_fence") {
		t.Fatalf("after RockLake wrote again the catalog holds the wrong schemas (%d keys)", len(latest.keys))
	}
}

// rlPaddingTag is a tag RockLake has no use for (tags.rs stops at 0x25 below
// 0xFC), and verify, open and serve pass over: its keys only add volume,
// enough for several SSTs and compactions.
const rlPaddingTag = 0x50

// padding writes n padding keys from `from` on, moving the memtable to L0
// every `every` keys (0: never).
func padding(t *testing.T, ctx context.Context, w *slatedb.Writer, from, n, every int) {
	t.Helper()
	pad := bytes.Repeat([]byte("p"), 100)
	var b slatedb.Batch
	for i := from; i < from+n; i++ {
		b.Put(binary.BigEndian.AppendUint64([]byte{rlPaddingTag}, uint64(i)), pad)
		if b.Len() == 1000 || i == from+n-1 {
			if err := w.WriteAsync(ctx, &b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
		if every > 0 && (i-from+1)%every == 0 {
			if err := w.FlushMemtable(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// sortedRunWritten waits until the database's compactor has written an SST
// far larger than one L0 (above, 2 MiB): the output of a compaction.
func sortedRunWritten(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ssts, _ := filepath.Glob(filepath.Join(dir, "compacted", "*.sst"))
		for _, p := range ssts {
			if fi, err := os.Stat(p); err == nil && fi.Size() > 24<<20 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no compaction output in %s after 2 minutes (%d SSTs)", dir, len(ssts))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A database written from scratch by this binding (what import does: a
// bulk-load writer, whose compactions run; then a passive one, as Finalize)
// is a catalog RockLake opens, verifies, compacts, serves and writes; a
// detached checkpoint of ours in its manifest stays there.
func TestRockLakeServesCatalogWeWrote(t *testing.T) {
	ctx, srcDir, srv := servedSample(t, "source")
	createSchema(t, ctx, srv, "imported")
	stop(t, srv)
	src := readAll(t, ctx, "file://"+srcDir, slatedb.ReaderOptions{})
	srcInspect, err := rocklake.InspectSnapshot(ctx, srcDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "imported")
	url := "file://" + dir

	// L0 SSTs of 2 MiB: a bulk load compacts 16 of them at a time.
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{BulkLoad: true, BulkMemtableBytes: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	for i := range src.keys {
		b.Put(src.keys[i], src.values[i])
	}
	// RockLake's initialisation keys, stated here from its source over the
	// copy (the same bytes; the counters stay the copy's, past its snapshot).
	b.Put(rlFormatKey, rlFormatValue)
	b.Put(rlRetainKey, rlCounter(0))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	const half = 300_000 // ~40 MB: 20 L0 SSTs, a compaction of 16 (32 MiB)
	padding(t, ctx, w, 0, half, 0)
	sortedRunWritten(t, dir)
	if err := w.Close(); err != nil {
		t.Fatalf("close bulk-load writer: %v", err)
	}
	// Five more L0 SSTs that no compactor of ours will touch: RockLake's must.
	w, err = slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	padding(t, ctx, w, half, half, half/5)
	if err := w.Close(); err != nil {
		t.Fatalf("close passive writer: %v", err)
	}
	cp, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour, Name: "import"}, slatedb.Options{})
	if err != nil {
		t.Fatalf("detached checkpoint: %v", err)
	}

	verify(t, ctx, dir)
	inspect, err := rocklake.InspectSnapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := rocklake.Fields(srcInspect), rocklake.Fields(inspect); fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("rocklake inspect snapshot: source %v, our copy %v", a, b)
	}
	// RockLake's checkpoint commands keep their own registry under its
	// system keys; listing it opens the database as its writer, through a
	// manifest that holds our SlateDB checkpoint.
	out, err := rocklake.Offline(ctx, dir, "checkpoint", "list")
	if err != nil || !strings.Contains(out, "No checkpoints found") {
		t.Fatalf("rocklake checkpoint list on our database: %v\n%s", err, out)
	}
	srv = serve(t, ctx, dir)
	createSchema(t, ctx, srv, "after_import")
	compactionsIdle(t, srv)
	if !strings.Contains(srv.Logs(), "finished compaction") {
		t.Fatalf("RockLake did not compact the L0 SSTs we left:\n%s", srv.Logs())
	}
	stop(t, srv)
	verify(t, ctx, dir)

	if _, ok := checkpointIDs(t, ctx, url)[cp.ID]; !ok {
		t.Fatalf("our detached checkpoint %s is gone after RockLake wrote", cp.ID)
	}
	latest := readAll(t, ctx, url, slatedb.ReaderOptions{})
	if !latest.containsValue("after_import") || !latest.containsValue("imported") {
		t.Fatalf("RockLake's writes or the imported schema are missing (%d keys)", len(latest.keys))
	}
	n := 0
	for i, k := range latest.keys {
		if k[0] == rlPaddingTag {
			if binary.BigEndian.Uint64(k[1:]) != uint64(n) || len(latest.values[i]) != 100 {
				t.Fatalf("padding key %d is %x", n, k)
			}
			n++
		}
	}
	if n != 2*half {
		t.Fatalf("%d padding keys after RockLake compacted and wrote, want %d", n, 2*half)
	}
	if pinned := readAll(t, ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID}); len(pinned.keys) != len(src.keys)+2*half {
		t.Fatalf("our checkpoint holds %d keys, want %d", len(pinned.keys), len(src.keys)+2*half)
	}
}

// Freeze on a catalog RockLake is not serving: a passive writer fences it,
// takes a writer checkpoint and closes without writing anything. SlateDB 0.14
// and later fence with a zero-byte WAL file, which RockLake's SlateDB 0.13
// cannot read: RockLake then refuses the catalog ("Failed to open catalog:
// SlateDB error: Data error: empty SSTable") as soon as that file lies past
// the WAL its manifest says is replayed. The first Freeze after RockLake
// moves RockLake's WAL into L0 (and the marker with it); the second (a dry
// run and then the real run, or a retried Freeze step) has nothing to flush,
// and its marker stays. With the pinned 0.13.1 RockLake serves the catalog,
// accepts a write and verifies it, and the checkpoints stay in the manifest.
func TestRockLakeServesCatalogAfterIdleFreeze(t *testing.T) {
	ctx, dir, srv := servedSample(t, "catalog")
	url := "file://" + dir
	stop(t, srv)
	before := readAll(t, ctx, url, slatedb.ReaderOptions{})

	var cps []slatedb.Checkpoint
	for i := 0; i < 2; i++ {
		w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
		if err != nil {
			t.Fatalf("Freeze %d: fence RockLake's catalog: %v", i+1, err)
		}
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: 7 * 24 * time.Hour, Name: fmt.Sprintf("freeze-%d", i+1)})
		if err != nil {
			t.Fatalf("Freeze %d: writer checkpoint: %v", i+1, err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("Freeze %d: close the fencing writer: %v", i+1, err)
		}
		if pinned := readAll(t, ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID}); len(pinned.keys) != len(before.keys) {
			t.Fatalf("Freeze %d's checkpoint holds %d keys, want %d", i+1, len(pinned.keys), len(before.keys))
		}
		cps = append(cps, cp)
	}

	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatalf("RockLake refuses the catalog after Freeze: %v", err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	if _, err := rocklake.AddSchema(ctx, srv, "after_idle_freeze"); err != nil {
		t.Fatalf("RockLake's write after Freeze: %v\n%s", err, srv.Logs())
	}
	stop(t, srv)
	verify(t, ctx, dir)

	wals, _ := filepath.Glob(filepath.Join(dir, "wal", "*.sst"))
	for _, p := range wals {
		if fi, err := os.Stat(p); err == nil && fi.Size() == 0 {
			t.Errorf("a zero-byte WAL file %s (a SlateDB ≥ 0.14 fence marker) is in the catalog", p)
		}
	}
	have := checkpointIDs(t, ctx, url)
	for _, cp := range cps {
		if _, ok := have[cp.ID]; !ok {
			t.Errorf("Freeze's checkpoint %s (%s) is gone from the manifest after RockLake wrote", cp.ID, cp.Name)
		}
	}
	if latest := readAll(t, ctx, url, slatedb.ReaderOptions{}); !latest.containsValue("after_idle_freeze") {
		t.Fatalf("RockLake's write after Freeze is not in the catalog (%d keys)", len(latest.keys))
	}
}
