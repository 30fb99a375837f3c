package rocklake

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
)

// -rocklake.fixture=DIR makes TestWriteFixture write the sample catalog with
// the real binary into DIR/catalog (scripts/make-fixtures.sh).
var fixtureDir = flag.String("rocklake.fixture", "", "write the sample catalog into this directory (TestWriteFixture)")

func serve(t *testing.T, ctx context.Context, dir string) *Server {
	t.Helper()
	srv, err := Serve(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Stop() })
	return srv
}

func query(t *testing.T, ctx context.Context, srv *Server, sql string) []Row {
	t.Helper()
	rows, err := srv.Query(ctx, sql)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func column(rows []Row, name string) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r[name])
	}
	sort.Strings(out)
	return out
}

// stop stops the server and checks that it is gone: exited, port closed.
func stop(t *testing.T, srv *Server) {
	t.Helper()
	start := time.Now()
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > stopGrace {
		t.Errorf("Stop took %s", d)
	}
	select {
	case <-srv.Done():
	default:
		t.Fatal("Stop returned with the process running")
	}
	if c, err := net.DialTimeout("tcp", srv.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", srv.Addr())
	}
}

// TestSampleCatalog writes the sample workload through a real server, then
// checks it three ways: served back by the same server, verified and
// inspected by the binary's offline commands, and served back by a new
// server on the same directory.
func TestSampleCatalog(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "catalog")
	srv := serve(t, ctx, dir)
	if !strings.HasPrefix(srv.ConnString(), "host=127.0.0.1 port="+strconv.Itoa(srv.Port())+" ") {
		t.Fatalf("ConnString = %q", srv.ConnString())
	}

	exp, err := WriteSampleCatalog(ctx, srv)
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
	t.Logf("expected: %+v", exp)
	if exp.Snapshots != 8 || exp.LatestSnapshotID != 8 {
		t.Errorf("snapshots: %d, latest %d; want 8 and 8", exp.Snapshots, exp.LatestSnapshotID)
	}
	checkServed(t, ctx, srv, exp)
	stop(t, srv)

	report, err := Verify(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("verify catalog:\n%s", report)
	vf := Fields(report)
	if vf["Status"] != "OK" || vf["Tables checked"] != "6" {
		t.Errorf("verify report fields: %v", vf)
	}
	// Rows verify checks: 3 counters + every schema, table, column and
	// snapshot row.
	if got, want := vf["Rows checked"], strconv.Itoa(3+exp.Schemas+exp.Tables+exp.Columns+exp.Snapshots); got != want {
		t.Errorf("verify: Rows checked = %s, want %s", got, want)
	}

	report, err = InspectSnapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("inspect snapshot:\n%s", report)
	f := Fields(report)
	for name, want := range map[string]int{
		"Latest snapshot ID": int(exp.LatestSnapshotID),
		"Next snapshot ID":   int(exp.LatestSnapshotID) + 1,
		"Schemas":            exp.Schemas,
		"Tables":             exp.Tables,
		"Columns":            exp.Columns,
		"Data files":         exp.DataFiles,
		"Delete files":       exp.DeleteFiles,
		"Format version":     1,
		"Retain-from":        0,
	} {
		if f[name] != strconv.Itoa(want) {
			t.Errorf("inspect snapshot: %s = %q, want %d", name, f[name], want)
		}
	}
	if f["Snapshot time"] == "" {
		t.Errorf("inspect snapshot: no snapshot time: %v", f)
	}

	// A new server on the same directory serves the same catalog, and keeps
	// allocating ids after the ones used.
	srv = serve(t, ctx, dir)
	checkServed(t, ctx, srv, exp)
	if _, err := srv.Exec(ctx, "BEGIN", "INSERT INTO ducklake_schema VALUES (9, 'c0000000-0000-4000-8000-000000000009', 9, NULL, 'later', 'later/', true)", "INSERT INTO ducklake_snapshot VALUES (9, NOW(), 5, 9, 4)", "COMMIT"); err != nil {
		t.Fatal(err)
	}
	id, err := LatestSnapshotID(ctx, srv)
	if err != nil || id != exp.LatestSnapshotID+1 {
		t.Errorf("after restart, a commit made snapshot %d (%v), want %d", id, err, exp.LatestSnapshotID+1)
	}
	for _, r := range query(t, ctx, srv, "SELECT schema_id, schema_name FROM ducklake_schema") {
		if r["schema_name"] != "later" {
			continue
		}
		later, _ := strconv.ParseUint(r["schema_id"], 10, 64)
		for _, tid := range exp.TableIDs {
			if later <= tid {
				t.Errorf("schema created after restart got id %d, not above table id %d", later, tid)
			}
		}
	}
	stop(t, srv)
	if _, err := Verify(ctx, dir); err != nil {
		t.Fatal(err)
	}
}

// checkServed reads the sample catalog back with the SELECTs DuckDB sends.
func checkServed(t *testing.T, ctx context.Context, srv *Server, exp Expected) {
	t.Helper()
	id, err := LatestSnapshotID(ctx, srv)
	if err != nil {
		t.Fatal(err)
	}
	if id != exp.LatestSnapshotID {
		t.Errorf("latest snapshot %d, want %d", id, exp.LatestSnapshotID)
	}

	schemas := query(t, ctx, srv, "SELECT schema_id, schema_name FROM ducklake_schema")
	if got := column(schemas, "schema_name"); strings.Join(got, ",") != "main,"+SampleSchema {
		t.Errorf("schemas: %v", got)
	}
	tables := query(t, ctx, srv, "SELECT table_id, table_name, schema_id FROM ducklake_table")
	if got := column(tables, "table_name"); strings.Join(got, ",") != SampleTable {
		t.Errorf("live tables: %v (%s was dropped)", got, SampleDroppedTable)
	}
	if len(tables) == 1 && tables[0]["schema_id"] != strconv.FormatUint(exp.SchemaIDs[SampleSchema], 10) {
		t.Errorf("table %s in schema %s, want %d", SampleTable, tables[0]["schema_id"], exp.SchemaIDs[SampleSchema])
	}
	orders := strconv.FormatUint(exp.TableIDs[SampleTable], 10)
	cols := query(t, ctx, srv, "SELECT column_id, column_name, column_type FROM ducklake_column WHERE table_id = "+orders)
	if got := column(cols, "column_name"); strings.Join(got, ",") != "amount,customer,id" {
		t.Errorf("live columns of %s: %v (%s was dropped)", SampleTable, got, SampleDroppedColumn)
	}
	if len(cols) != exp.LiveColumns {
		t.Errorf("live columns: %d, want %d", len(cols), exp.LiveColumns)
	}
	files := query(t, ctx, srv, "SELECT data_file_id, table_id, path, record_count, file_size_bytes FROM ducklake_data_file WHERE table_id = "+orders)
	if len(files) != 2 {
		t.Fatalf("data files of %s: %v", SampleTable, files)
	}
	for _, f := range files {
		ok := false
		for _, want := range SampleDataFiles {
			if f["path"] == want.Path && f["record_count"] == strconv.FormatUint(want.RecordCount, 10) &&
				f["file_size_bytes"] == strconv.FormatUint(want.SizeBytes, 10) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("unexpected data file %v", f)
		}
	}
	// ducklake_delete_file: DuckDB binds the table id (and snapshot).
	res, err := srv.ExecExtended(ctx, Stmt{SQL: "SELECT * FROM ducklake_delete_file WHERE table_id = $1", Args: []string{orders}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res[0].Rows); n != exp.DeleteFiles {
		t.Errorf("delete files: %d rows, want %d: %v", n, exp.DeleteFiles, res[0].Rows)
	}
	found := false
	for _, r := range res[0].Rows {
		if strings.Contains(strings.Join(r, "|"), SampleDeleteFile.Path) {
			found = true
		}
	}
	if !found {
		t.Errorf("delete file %s not served: %v", SampleDeleteFile.Path, res[0].Rows)
	}
	all := query(t, ctx, srv, "SELECT * FROM ducklake_data_file")
	if len(all) != exp.LiveDataFiles {
		t.Errorf("data files: %d served, want %d (the dropped table's are not): %v", len(all), exp.LiveDataFiles, all)
	}
	changes := query(t, ctx, srv, "SELECT * FROM ducklake_snapshot_changes")
	if len(changes) != exp.SnapshotChanges {
		t.Errorf("snapshot changes: %d, want %d", len(changes), exp.SnapshotChanges)
	}
	for _, c := range changes {
		if c["snapshot_id"] == strconv.FormatUint(exp.DeleteSnapshot, 10) &&
			(c["author"] != SampleAuthor || c["commit_message"] != SampleCommitMessage) {
			t.Errorf("snapshot %d: author %q, message %q", exp.DeleteSnapshot, c["author"], c["commit_message"])
		}
	}
	meta := query(t, ctx, srv, "SELECT * FROM ducklake_metadata")
	if len(meta) != exp.Metadata {
		t.Errorf("metadata: %d rows, want %d: %v", len(meta), exp.Metadata, meta)
	}
	for _, m := range meta {
		found := false
		for _, kv := range SampleMetadata {
			found = found || (m["key"] == kv[0] && m["value"] == kv[1])
		}
		if !found {
			t.Errorf("unexpected metadata %v", m)
		}
	}
	stats := query(t, ctx, srv, "SELECT * FROM ducklake_table_stats")
	if len(stats) != exp.TableStats {
		t.Errorf("table stats: %d rows, want %d: %v", len(stats), exp.TableStats, stats)
	}
	for _, st := range stats {
		if st["table_id"] == orders && (st["record_count"] != "1250" || st["next_row_id"] != "1250") {
			t.Errorf("table stats of %s: %v, want 1250 records", SampleTable, st)
		}
	}
	tags := query(t, ctx, srv, "SELECT * FROM ducklake_tag")
	if len(tags) != exp.Tags {
		t.Errorf("tags: %d rows, want %d: %v", len(tags), exp.Tags, tags)
	}
}

// TestExecErrors: a refused statement is a *pgconn.PgError with its
// SQLSTATE, over either protocol; a cancelled context ends the call at once.
func TestExecErrors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := serve(t, ctx, t.TempDir())
	if rows, err := srv.Query(ctx, "SELECT 1"); err != nil || len(rows) != 1 || rows[0]["?column?"] != "1" {
		// RockLake sends the integer in binary: pgconn's format code says so.
		t.Fatalf("SELECT 1: %v, %v", rows, err)
	}
	for name, exec := range map[string]func(context.Context, string) ([]Result, error){
		"simple":   func(ctx context.Context, sql string) ([]Result, error) { return srv.Exec(ctx, sql) },
		"extended": func(ctx context.Context, sql string) ([]Result, error) { return srv.ExecExtended(ctx, Stmt{SQL: sql}) },
	} {
		_, err := exec(ctx, "DROP DATABASE everything")
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code == "" || !strings.Contains(err.Error(), "DROP DATABASE everything") {
			t.Errorf("%s: err = %v, want a server error with SQLSTATE, naming the statement", name, err)
		}
		cancelled, cancelNow := context.WithCancel(ctx)
		cancelNow()
		start := time.Now()
		if _, err := exec(cancelled, "SELECT 1"); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: %v", name, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: cancelled call took %s", name, d)
		}
	}
	stop(t, srv)
	if err := srv.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

// TestPsql runs psql on purpose (the only place psql runs): it is the
// client an operator reaches for, so RockLake must take a psql script's
// writes, and a refused statement must stop the script with psql's ERROR.
// psql shows RockLake's binary integers as empty strings, which is why the
// other tests read through pgconn.
func TestPsql(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	psql, err := proc.FindTool("psql", "ROCKLAKE_PSQL", "scripts/install-psql.sh")
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, ctx, t.TempDir())
	exec := func(sql string) (string, error) {
		return run(ctx, sql+"\n", psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", srv.ConnString(), "-f", "-")
	}
	if out, err := exec("SELECT 1;"); err != nil || strings.TrimSpace(out) != "" {
		t.Fatalf("psql SELECT 1: %q, %v (psql prints RockLake's binary integers as empty strings)", out, err)
	}
	if _, err := exec("BEGIN; INSERT INTO ducklake_schema VALUES (0, 'a4e3c0de-0000-4000-8000-0000000000aa', 1, NULL, 'from_psql', 'from_psql/', true); COMMIT;"); err != nil {
		t.Fatal(err)
	}
	if got := column(query(t, ctx, srv, "SELECT schema_id, schema_name FROM ducklake_schema"), "schema_name"); strings.Join(got, ",") != "from_psql" {
		t.Errorf("schemas after psql's write: %v", got)
	}
	if _, err := exec("DROP DATABASE everything;"); err == nil || !strings.Contains(err.Error(), "ERROR") {
		t.Errorf("unsupported statement: err = %v, want psql's ERROR", err)
	}
}

// TestOfflineCommandsRefuse: verify and inspect need an existing directory
// path (never a URL: the binary would take file:/// as a relative path).
func TestOfflineCommandsRefuse(t *testing.T) {
	ctx := context.Background()
	if _, err := Verify(ctx, filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Verify of a missing directory succeeded")
	}
	if _, err := InspectSnapshot(ctx, "file:///tmp/x"); err == nil {
		t.Error("InspectSnapshot of a URL succeeded")
	}
	if _, err := Serve(ctx, "file:///tmp/x"); err == nil {
		t.Error("Serve of a URL succeeded")
	}
	// An empty directory is not a catalog: verify says so.
	if out, err := Verify(ctx, t.TempDir()); err == nil || !strings.Contains(out, "missing catalog-format-version") {
		t.Errorf("Verify of an empty directory: %v\n%s", err, out)
	}
}

// TestServeRefusal: when the binary refuses a catalog, Serve fails at once
// with the binary's stderr (here SlateDB's complaint about a damaged
// manifest; a catalog of another format version gets FormatVersionMismatch,
// SQLSTATE 0A000, the same way).
func TestServeRefusal(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "manifest"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest", "00000000000000000001.manifest"), []byte("garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv, err := Serve(ctx, dir)
	if err == nil {
		_ = srv.Stop()
		t.Fatal("Serve of a damaged catalog succeeded")
	}
	if !strings.Contains(err.Error(), "Failed to open catalog") || !strings.Contains(err.Error(), "manifest") {
		t.Errorf("error does not carry the binary's stderr: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("refusal took %s", d)
	}
}

// TestWriteFixture writes the sample catalog into -rocklake.fixture=DIR:
// DIR/catalog (the SlateDB root), DIR/expected.json, DIR/verify.txt and
// DIR/inspect.txt; and the catalog DuckDB's workload writes into
// DIR/duckdb/catalog, with its answers.json, verify.txt and inspect.txt.
// Without the flag it does nothing.
func TestWriteFixture(t *testing.T) {
	if *fixtureDir == "" {
		t.Skip("no -rocklake.fixture=DIR")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := filepath.Abs(*fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(out, "catalog")
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		t.Fatalf("%s is not empty", dir)
	}
	srv := serve(t, ctx, dir)
	exp, err := WriteSampleCatalog(ctx, srv)
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
	stop(t, srv)
	verify, err := Verify(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	inspect, err := InspectSnapshot(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	js, err := json.MarshalIndent(exp, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"expected.json": string(js) + "\n",
		"verify.txt":    reportOnly(verify),
		"inspect.txt":   reportOnly(inspect),
	} {
		if err := os.WriteFile(filepath.Join(out, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A second catalog, written by DuckDB, the real client (its data files
	// are not kept: the fixture is the catalog).
	ddir := filepath.Join(out, "duckdb", "catalog")
	if entries, _ := os.ReadDir(ddir); len(entries) > 0 {
		t.Fatalf("%s is not empty", ddir)
	}
	data := t.TempDir() + "/"
	srv = serve(t, ctx, ddir)
	answers, err := DuckDB(ctx, srv, data, DuckDBWorkload, DuckDBQueries)
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
	stop(t, srv)
	if verify, err = Verify(ctx, ddir); err != nil {
		t.Fatal(err)
	}
	if inspect, err = InspectSnapshot(ctx, ddir); err != nil {
		t.Fatal(err)
	}
	if js, err = json.MarshalIndent(answers, "", "  "); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"answers.json": string(js) + "\n",
		"verify.txt":   reportOnly(verify),
		"inspect.txt":  reportOnly(inspect),
	} {
		if err := os.WriteFile(filepath.Join(out, "duckdb", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("wrote %s", out)
}

// reportOnly drops the binary's log lines from a report.
func reportOnly(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if line != "" && (strings.HasPrefix(line, " ") || strings.HasSuffix(line, ":")) {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}
