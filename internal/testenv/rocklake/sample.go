package rocklake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// Expected is what WriteSampleCatalog wrote, as RockLake stores it.
type Expected struct {
	// LatestSnapshotID is the id of the last snapshot the workload
	// committed; Snapshots how many it committed (ids 1..LatestSnapshotID on
	// a fresh catalog).
	LatestSnapshotID uint64
	Snapshots        int

	// Row counts per DuckLake table, history included (an ended row stays,
	// with its end_snapshot set): what `rocklake inspect snapshot` counts.
	Schemas     int // "main" and "sales"
	Tables      int // orders, customers (ended)
	Columns     int
	DataFiles   int
	DeleteFiles int
	// SnapshotChanges is the number of ducklake_snapshot_changes rows.
	SnapshotChanges int
	// Metadata is the number of ducklake_metadata rows; TableStats of
	// ducklake_table_stats rows (RockLake keeps them itself when data files
	// are registered: one per table with data).
	Metadata, TableStats int
	// Tags is the number of ducklake_tag rows RockLake kept: the workload
	// sends one tag INSERT, which RockLake v0.47.11 acknowledges
	// ("INSERT 0 1", and a snapshot) without storing a row.
	Tags int

	// Rows visible at the latest snapshot (LiveColumns: of all live tables;
	// LiveDataFiles: a dropped table's files are not served).
	LiveSchemas, LiveTables, LiveColumns, LiveDataFiles int

	// DeleteSnapshot is the snapshot of the delete file, whose author and
	// commit message the workload set (SampleAuthor, SampleCommitMessage).
	DeleteSnapshot uint64

	// Ids the server assigned.
	SchemaIDs   map[string]uint64 // by schema name
	TableIDs    map[string]uint64 // by table name
	DataFileIDs map[string]uint64 // by path
	// EndedColumn is "table.column" of the column the update ended, and
	// EndedTable the table it ended (dropped).
	EndedColumn, EndedTable string
	// EndSnapshot is the snapshot that ended them.
	EndSnapshot uint64

	// Steps are the statements sent, one string per transaction, in order
	// (extended-protocol statements with their arguments in a comment).
	Steps []string
}

// Sample data of the workload.
const (
	SampleSchema        = "sales"
	SampleTable         = "orders"
	SampleDroppedTable  = "customers"
	SampleDroppedColumn = "note"
	SampleAuthor        = "rocklake-migrate"
	SampleCommitMessage = "delete 17 orders"
)

// SampleDataFiles are the data files the workload registers: path, table,
// record count, size in bytes.
var SampleDataFiles = []struct {
	Path        string
	Table       string
	RecordCount uint64
	SizeBytes   uint64
}{
	{"sales/orders/ducklake-0001.parquet", SampleTable, 1000, 48213},
	{"sales/orders/ducklake-0002.parquet", SampleTable, 250, 12007},
	{"sales/customers/ducklake-0003.parquet", SampleDroppedTable, 42, 3301},
}

// SampleDeleteFile is the delete file the workload registers, against the
// first data file.
var SampleDeleteFile = struct {
	Path        string
	DeleteCount uint64
	SizeBytes   uint64
}{"sales/orders/ducklake-0001-delete.parquet", 17, 1204}

// WriteSampleCatalog writes, through srv, what a DuckLake client (DuckDB
// attached to RockLake) writes for a small lake, one transaction and so one
// snapshot per step:
//
//  1. the ATTACH bootstrap: ducklake_metadata (bound parameters), schema
//     "main", snapshot, snapshot change;
//  2. CREATE SCHEMA sales;
//  3. CREATE TABLE sales.orders (4 columns) and sales.customers (2 columns);
//  4. INSERTs: three data files with their table stats;
//  5. a DELETE: one delete file (bound parameters), with the snapshot's
//     author and commit message;
//  6. a tag on the table;
//  7. ALTER TABLE orders DROP COLUMN note and DROP TABLE customers: UPDATE
//     ... SET end_snapshot on ducklake_column and ducklake_table.
//
// Ids come from the server, read back after each step as DuckDB reads the
// latest snapshot. It returns what was written. The catalog should be fresh
// (the counts assume it).
func WriteSampleCatalog(ctx context.Context, srv *Server) (Expected, error) {
	w := &sampleWriter{srv: srv, exp: Expected{
		SchemaIDs:   map[string]uint64{},
		TableIDs:    map[string]uint64{},
		DataFileIDs: map[string]uint64{},
	}}
	steps := []func(context.Context) error{
		w.bootstrap, w.createSchema, w.createTables, w.insertData, w.deleteRows, w.tag, w.endRows,
	}
	for i, step := range steps {
		if err := step(ctx); err != nil {
			return w.exp, fmt.Errorf("sample catalog, step %d: %w", i+1, err)
		}
	}
	return w.exp, nil
}

type sampleWriter struct {
	srv *Server
	exp Expected
}

// simpleTx runs statements over the simple-query protocol as one
// transaction and checks that it made one more snapshot.
func (w *sampleWriter) simpleTx(ctx context.Context, stmts ...string) error {
	all := append(append([]string{"BEGIN"}, stmts...), "COMMIT")
	if _, err := w.srv.Exec(ctx, all...); err != nil {
		return err
	}
	w.exp.Steps = append(w.exp.Steps, strings.Join(all, ";\n")+";\n")
	return w.committed(ctx)
}

// extendedTx runs statements over the extended protocol as one transaction.
func (w *sampleWriter) extendedTx(ctx context.Context, stmts ...Stmt) error {
	all := append([]Stmt{{SQL: "BEGIN"}}, stmts...)
	all = append(all, Stmt{SQL: "COMMIT"})
	if _, err := w.srv.ExecExtended(ctx, all...); err != nil {
		return err
	}
	var b strings.Builder
	for _, st := range all {
		b.WriteString(st.SQL + ";")
		if len(st.Args) > 0 {
			fmt.Fprintf(&b, " -- %q", st.Args)
		}
		b.WriteString("\n")
	}
	w.exp.Steps = append(w.exp.Steps, b.String())
	return w.committed(ctx)
}

// committed checks that the latest snapshot moved on by one.
func (w *sampleWriter) committed(ctx context.Context) error {
	id, err := LatestSnapshotID(ctx, w.srv)
	if err != nil {
		return err
	}
	if id <= w.exp.LatestSnapshotID && w.exp.Snapshots > 0 {
		return fmt.Errorf("no new snapshot: latest is still %d", id)
	}
	w.exp.LatestSnapshotID = id
	w.exp.Snapshots++
	return nil
}

// LatestSnapshotID reads the latest snapshot id as DuckDB does (SELECT ...
// FROM ducklake_snapshot WHERE snapshot_id = (SELECT MAX(snapshot_id) ...)).
func LatestSnapshotID(ctx context.Context, srv *Server) (uint64, error) {
	rows, err := srv.Query(ctx, "SELECT snapshot_id, schema_version, next_catalog_id, next_file_id FROM ducklake_snapshot WHERE snapshot_id = (SELECT MAX(snapshot_id) FROM ducklake_snapshot)")
	if err != nil {
		return 0, err
	}
	if len(rows) != 1 {
		return 0, fmt.Errorf("latest snapshot: %d rows", len(rows))
	}
	return parseID(rows[0], "snapshot_id")
}

func parseID(r Row, col string) (uint64, error) {
	v, ok := r[col]
	if !ok {
		return 0, fmt.Errorf("no column %s in %v", col, r)
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", col, err)
	}
	return n, nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// SampleMetadata are the ducklake_metadata rows of the bootstrap (key,
// value), as DuckDB writes them.
var SampleMetadata = [][2]string{
	{"version", "0.3"},
	{"created_by", "DuckDB 1.5.3"},
	{"data_path", "s3://lake/data/"},
	{"encrypted", "false"},
}

func (w *sampleWriter) bootstrap(ctx context.Context) error {
	// ducklake_metadata is read from bound parameters only: over the
	// extended protocol, like the rest of this transaction.
	var stmts []Stmt
	for _, kv := range SampleMetadata {
		stmts = append(stmts, Stmt{SQL: "INSERT INTO ducklake_metadata (key, value, scope, scope_id) VALUES ($1, $2, NULL, NULL)", Args: []string{kv[0], kv[1]}})
	}
	stmts = append(stmts,
		Stmt{SQL: `INSERT INTO ducklake_schema VALUES (0, 'a4e3c0de-0000-4000-8000-000000000000', 0, NULL, 'main', 'main/', true)`},
		Stmt{SQL: `INSERT INTO ducklake_snapshot VALUES (0, NOW(), 0, 1, 0)`},
		Stmt{SQL: `INSERT INTO ducklake_snapshot_changes VALUES (0, 'created_schema:"main"', NULL, NULL, NULL)`},
	)
	if err := w.extendedTx(ctx, stmts...); err != nil {
		return err
	}
	w.exp.Metadata += len(SampleMetadata)
	w.exp.Schemas++
	w.exp.LiveSchemas++
	w.exp.SnapshotChanges++
	return w.readSchemas(ctx)
}

func (w *sampleWriter) readSchemas(ctx context.Context) error {
	return w.readIDs(ctx, "SELECT schema_id, schema_name FROM ducklake_schema", "schema_id", "schema_name", w.exp.SchemaIDs, w.exp.LiveSchemas)
}

func (w *sampleWriter) createSchema(ctx context.Context) error {
	err := w.simpleTx(ctx,
		fmt.Sprintf(`INSERT INTO ducklake_schema VALUES (1, 'a4e3c0de-0000-4000-8000-000000000001', %d, NULL, %s, %s, true)`,
			w.exp.LatestSnapshotID+1, quote(SampleSchema), quote(SampleSchema+"/")),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, NOW(), 1, 2, 0)`, w.exp.LatestSnapshotID+1),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'created_schema:"%s"', NULL, NULL, NULL)`, w.exp.LatestSnapshotID+1, SampleSchema),
	)
	if err != nil {
		return err
	}
	w.exp.Schemas++
	w.exp.LiveSchemas++
	w.exp.SnapshotChanges++
	return w.readSchemas(ctx)
}

// sampleColumns are the columns of the two tables: name, type, nullable.
var sampleColumns = map[string][][3]string{
	SampleTable: {
		{"id", "int64", "false"},
		{"customer", "varchar", "true"},
		{"amount", "decimal(18,3)", "true"},
		{SampleDroppedColumn, "varchar", "true"},
	},
	SampleDroppedTable: {
		{"id", "int64", "false"},
		{"name", "varchar", "true"},
	},
}

func (w *sampleWriter) createTables(ctx context.Context) error {
	schemaID := w.exp.SchemaIDs[SampleSchema]
	snap := w.exp.LatestSnapshotID + 1
	var stmts []string
	for k, table := range []string{SampleTable, SampleDroppedTable} {
		stmts = append(stmts, fmt.Sprintf(
			`INSERT INTO ducklake_table VALUES (NULL, 'b5f4d1ef-0000-4000-8000-00000000000%d', %d, NULL, %d, %s, %s, true)`,
			k, snap, schemaID, quote(table), quote(table+"/")))
	}
	stmts = append(stmts,
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, NOW(), 2, 4, 0)`, snap),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'created_table:"%s"."%s",created_table:"%s"."%s"', NULL, NULL, NULL)`,
			snap, SampleSchema, SampleTable, SampleSchema, SampleDroppedTable))
	if err := w.simpleTx(ctx, stmts...); err != nil {
		return err
	}
	w.exp.Tables += 2
	w.exp.LiveTables += 2
	w.exp.SnapshotChanges++
	if err := w.readIDs(ctx, fmt.Sprintf("SELECT table_id, table_name FROM ducklake_table WHERE schema_id = %d", schemaID), "table_id", "table_name", w.exp.TableIDs, 2); err != nil {
		return err
	}

	// The columns, in the next snapshot: RockLake allocates table ids
	// itself, so they are known only now.
	snap = w.exp.LatestSnapshotID + 1
	stmts = nil
	for _, table := range []string{SampleTable, SampleDroppedTable} {
		var values []string
		for order, c := range sampleColumns[table] {
			values = append(values, fmt.Sprintf("(%d, %d, NULL, %d, %d, %s, %s, NULL, NULL, %s, NULL, NULL, NULL)",
				order+1, snap, w.exp.TableIDs[table], order+1, quote(c[0]), quote(c[1]), c[2]))
		}
		stmts = append(stmts, "INSERT INTO ducklake_column VALUES "+strings.Join(values, ", "))
		w.exp.Columns += len(values)
		w.exp.LiveColumns += len(values)
	}
	stmts = append(stmts,
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, NOW(), 3, 4, 0)`, snap),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'altered_table:%d,altered_table:%d', NULL, NULL, NULL)`,
			snap, w.exp.TableIDs[SampleTable], w.exp.TableIDs[SampleDroppedTable]))
	if err := w.simpleTx(ctx, stmts...); err != nil {
		return err
	}
	w.exp.SnapshotChanges++
	return nil
}

func (w *sampleWriter) insertData(ctx context.Context) error {
	snap := w.exp.LatestSnapshotID + 1
	var stmts []string
	for k, f := range SampleDataFiles {
		stmts = append(stmts, fmt.Sprintf(
			`INSERT INTO ducklake_data_file VALUES (%d, %d, %d, NULL, NULL, %s, true, 'parquet', %d, %d, 512, 0, NULL, NULL, NULL, NULL)`,
			k+1, w.exp.TableIDs[f.Table], snap, quote(f.Path), f.RecordCount, f.SizeBytes))
	}
	stmts = append(stmts,
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, NOW(), 3, 4, 4)`, snap),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'inserted_into_table:%d,inserted_into_table:%d', NULL, NULL, NULL)`,
			snap, w.exp.TableIDs[SampleTable], w.exp.TableIDs[SampleDroppedTable]))
	if err := w.simpleTx(ctx, stmts...); err != nil {
		return err
	}
	w.exp.DataFiles += len(SampleDataFiles)
	w.exp.TableStats += 2
	w.exp.LiveDataFiles += len(SampleDataFiles)
	w.exp.SnapshotChanges++
	return w.readIDs(ctx, "SELECT data_file_id, table_id, path FROM ducklake_data_file", "data_file_id", "path", w.exp.DataFileIDs, len(SampleDataFiles))
}

// readIDs runs query, which must answer want rows, and keeps each row's id
// (column idCol) in into by its name (column nameCol): the ids RockLake
// allocated, known only once it answered.
func (w *sampleWriter) readIDs(ctx context.Context, query, idCol, nameCol string, into map[string]uint64, want int) error {
	rows, err := w.srv.Query(ctx, query)
	if err != nil {
		return err
	}
	for _, r := range rows {
		id, err := parseID(r, idCol)
		if err != nil {
			return err
		}
		into[r[nameCol]] = id
	}
	if len(rows) != want {
		return fmt.Errorf("%s: %d rows, want %d: %v", query, len(rows), want, rows)
	}
	return nil
}

func (w *sampleWriter) deleteRows(ctx context.Context) error {
	dataFile := w.exp.DataFileIDs[SampleDataFiles[0].Path]
	err := w.extendedTx(ctx,
		Stmt{SQL: "INSERT INTO ducklake_delete_file (data_file_id, path, delete_count, file_size_bytes) VALUES ($1, $2, $3, $4)",
			Args: []string{strconv.FormatUint(dataFile, 10), SampleDeleteFile.Path,
				strconv.FormatUint(SampleDeleteFile.DeleteCount, 10), strconv.FormatUint(SampleDeleteFile.SizeBytes, 10)}},
		Stmt{SQL: "INSERT INTO ducklake_snapshot (author, commit_message) VALUES ($1, $2)",
			Args: []string{SampleAuthor, SampleCommitMessage}},
		Stmt{SQL: fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'deleted_from_table:%d', NULL, NULL, NULL)`,
			w.exp.LatestSnapshotID+1, w.exp.TableIDs[SampleTable])},
	)
	if err != nil {
		return err
	}
	w.exp.DeleteFiles++
	w.exp.DeleteSnapshot = w.exp.LatestSnapshotID
	w.exp.SnapshotChanges++
	return nil
}

func (w *sampleWriter) tag(ctx context.Context) error {
	snap := w.exp.LatestSnapshotID + 1
	err := w.simpleTx(ctx,
		fmt.Sprintf(`INSERT INTO ducklake_tag VALUES (%d, %d, NULL, 'comment', 'orders placed online')`, w.exp.TableIDs[SampleTable], snap),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, NOW(), 3, 4, 4)`, snap),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'altered_table:%d', NULL, NULL, NULL)`, snap, w.exp.TableIDs[SampleTable]),
	)
	if err != nil {
		return err
	}
	w.exp.SnapshotChanges++
	return nil
}

func (w *sampleWriter) endRows(ctx context.Context) error {
	snap := w.exp.LatestSnapshotID + 1
	orders, customers := w.exp.TableIDs[SampleTable], w.exp.TableIDs[SampleDroppedTable]
	noteID := 0
	for k, c := range sampleColumns[SampleTable] {
		if c[0] == SampleDroppedColumn {
			noteID = k + 1
		}
	}
	err := w.simpleTx(ctx,
		fmt.Sprintf(`UPDATE ducklake_column SET end_snapshot = %d WHERE column_id IN (%d) AND end_snapshot IS NULL`, snap, noteID),
		fmt.Sprintf(`UPDATE ducklake_table SET end_snapshot = %d WHERE table_id = %d AND end_snapshot IS NULL`, snap, customers),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot VALUES (%d, NOW(), 4, 4, 4)`, snap),
		fmt.Sprintf(`INSERT INTO ducklake_snapshot_changes VALUES (%d, 'altered_table:%d,dropped_table:%d', NULL, NULL, NULL)`, snap, orders, customers),
	)
	if err != nil {
		return err
	}
	w.exp.EndSnapshot = w.exp.LatestSnapshotID
	w.exp.EndedColumn = SampleTable + "." + SampleDroppedColumn
	w.exp.EndedTable = SampleDroppedTable
	w.exp.LiveTables--
	w.exp.LiveColumns -= 1 + len(sampleColumns[SampleDroppedTable])
	w.exp.LiveDataFiles-- // the dropped table's file
	w.exp.SnapshotChanges++
	return nil
}

// AddSchema commits one more schema, as a DuckDB client's
// CREATE SCHEMA does, and returns the snapshot it made: the proof that a
// server accepts writes on the catalog it serves.
func AddSchema(ctx context.Context, srv *Server, name string) (uint64, error) {
	before, err := LatestSnapshotID(ctx, srv)
	if err != nil {
		return 0, err
	}
	insert := fmt.Sprintf("INSERT INTO ducklake_schema VALUES (0, 'a4e3c0de-0000-4000-8000-00000000ffff', %d, NULL, %s, %s, true)",
		before+1, quote(name), quote(name+"/"))
	if _, err := srv.Exec(ctx, "BEGIN", insert, "COMMIT"); err != nil {
		return 0, err
	}
	after, err := LatestSnapshotID(ctx, srv)
	if err != nil {
		return 0, err
	}
	if after <= before {
		return 0, fmt.Errorf("rocklake: CREATE SCHEMA %s made no snapshot (latest %d, was %d)", name, after, before)
	}
	return after, nil
}
