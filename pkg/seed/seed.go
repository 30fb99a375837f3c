package seed

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
)

// Options describe the catalog to seed.
type Options struct {
	// Rows is the number of keys to write, at least: the seed stops after
	// the commit that reaches it (a commit is never cut in half). The
	// initialization batch's keys are not counted.
	Rows int
	// Seed selects the content: the same seed and Rows give the same keys
	// and values.
	Seed int64
	// Store tunes SlateDB's object-store access.
	Store slatedb.Options
}

// Result is what Seed wrote.
type Result struct {
	// Keys per tag name, for every known tag, the initialization batch
	// included.
	Keys map[string]uint64
	// Counters as the initialization batch set them.
	Counters catalog.Counters
}

// VerifiedRows is the number of rows `rocklake verify catalog` checks: the
// three global counters, schemas, tables, columns and snapshots.
func (r *Result) VerifiedRows() uint64 {
	return 3 + r.Keys[format.TagSchema.Name()] + r.Keys[format.TagTable.Name()] +
		r.Keys[format.TagColumn.Name()] + r.Keys[format.TagSnapshot.Name()]
}

// maxRows bounds Options.Rows; memory does not depend on it.
const maxRows = 1 << 34

// Seed writes a new format-1 catalog at url, which must hold no key (see
// catalog.NewInitializer).
func Seed(ctx context.Context, url string, opts Options) (*Result, error) {
	if opts.Rows < 0 || opts.Rows > maxRows {
		return nil, fmt.Errorf("seed: rows %d out of range [0, %d]", opts.Rows, maxRows)
	}
	in, err := catalog.NewInitializer(ctx, url, format.V1, opts.Store)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	g := &gen{
		ctx: ctx, in: in,
		rng:      rand.New(rand.NewPCG(uint64(opts.Seed), 0x726f636b6c616b65)), // "rocklake"
		keys:     map[string]uint64{},
		nextSnap: 1, nextCat: 1, nextFile: 1,
		clock: time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC).Add(time.Duration(opts.Seed%1000) * time.Hour),
	}
	if err := g.run(opts.Rows); err != nil {
		return nil, err
	}
	res := &Result{Keys: g.keys, Counters: catalog.Counters{NextSnapshotID: g.nextSnap, NextCatalogID: g.nextCat, NextFileID: g.nextFile}}
	if err := in.Finalize(ctx, res.Counters); err != nil {
		return nil, err
	}
	if err := in.Close(); err != nil {
		return nil, err
	}
	// Finalize's batch: three counters, retain-from and the version.
	res.Keys[format.TagCounter.Name()] += 3
	res.Keys[format.TagSystem.Name()] += 2
	for _, t := range format.KnownTags() {
		res.Keys[t.Name()] += 0 // every known tag present, zero or not
	}
	return res, nil
}

// gen writes one commit at a time; only the table being written is held.
type gen struct {
	ctx   context.Context
	in    *catalog.Initializer
	rng   *rand.Rand
	batch slatedb.Batch
	n     int // keys in batch
	keys  map[string]uint64
	total int

	nextSnap, nextCat, nextFile uint64
	clock                       time.Time
	schemaVersion               uint64
	schemaID, schemaTables      uint64
}

func (g *gen) put(k format.Key, m proto.Message) error {
	key, err := format.EncodeKey(format.V1, k)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	val, err := format.EncodeValue(format.V1, k, m)
	if err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	g.batch.Put(key, val)
	g.keys[k.Tag.Name()]++
	g.total++
	if g.n++; g.n >= 4096 {
		return g.flush()
	}
	return nil
}

func (g *gen) flush() error {
	if g.n == 0 {
		return nil
	}
	if err := g.in.WriteAsync(g.ctx, &g.batch); err != nil {
		return err
	}
	g.batch, g.n = slatedb.Batch{}, 0
	return nil
}

// commit writes the snapshot and its changes, and returns the snapshot id.
func (g *gen) commit(changeType, info string, schemaID, tableID *uint64, changed bool) (uint64, error) {
	id := g.nextSnap
	g.nextSnap++
	g.clock = g.clock.Add(time.Duration(1+g.rng.IntN(120))*time.Second + time.Duration(g.rng.IntN(1e6))*time.Microsecond)
	if changed {
		g.schemaVersion++
	}
	s := &rocklakev1.Snapshot{
		SnapshotId: id, SchemaVersion: g.schemaVersion,
		SnapshotTime:  g.clock.Format("2006-01-02T15:04:05.000000000-07:00"),
		NextCatalogId: proto.Uint64(g.nextCat), NextFileId: proto.Uint64(g.nextFile),
	}
	if g.rng.IntN(4) == 0 {
		s.Author = proto.String("etl@example.com")
		s.Message = proto.String("nightly load")
	}
	if err := g.put(format.Key{Tag: format.TagSnapshot, Parts: []uint64{id}}, s); err != nil {
		return 0, err
	}
	c := &rocklakev1.SnapshotChanges{SnapshotId: id, ChangeType: changeType, ChangeInfo: proto.String(info),
		SchemaId: schemaID, TableId: tableID, ChangesMade: proto.String(changeType + ":" + info)}
	return id, g.put(format.Key{Tag: format.TagSnapshotChanges, Parts: []uint64{id}}, c)
}

var columnTypes = []string{"BIGINT", "VARCHAR", "TIMESTAMP WITH TIME ZONE", "DOUBLE", "BOOLEAN", "DATE", "DECIMAL(18,3)", "INTEGER"}

func (g *gen) run(rows int) error {
	if rows > 0 {
		if err := g.metadata(); err != nil {
			return err
		}
	}
	for t := 0; g.total < rows; t++ {
		if err := g.table(t, rows); err != nil {
			return err
		}
	}
	return g.flush()
}

func (g *gen) metadata() error {
	for _, kv := range [][2]string{{"version", "0.3"}, {"data_path", "s3://lake/data/"}, {"created_by", "rocklake-migrate seed"}} {
		k := format.Key{Tag: format.TagMetadata, Parts: []uint64{0, 0}, Strs: []string{kv[0]}}
		if err := g.put(k, &rocklakev1.Metadata{Key: kv[0], Value: kv[1], Scope: proto.String("global"), ScopeId: proto.Uint64(0)}); err != nil {
			return err
		}
	}
	return nil
}

// table writes one table's history: its creation, data-file commits, maybe
// a rename, deletes and inlined rows, until the table or the budget ends.
// seededTable is one table being seeded: what its definition chose, and
// what its data commits added.
type seededTable struct {
	t, ncols                     int
	name                         string
	schemaID, tableID            uint64
	tbl                          *rocklakev1.Table
	partitioned                  bool
	partitionID                  uint64
	records, bytes, files, rowID uint64
	recent                       []uint64 // data files of the last commit, for deletes
}

// table seeds table t: its definition, its data commits until it has its
// share of rows, its stats and counters, and for some a rename. The parts
// run in this order: the catalog a seed makes depends on it.
func (g *gen) table(t, rows int) error {
	st, err := g.defineTable(t)
	if err != nil {
		return err
	}
	if err := g.fillTable(st, rows); err != nil {
		return err
	}
	if err := g.tableStats(st); err != nil {
		return err
	}
	if t%7 == 3 {
		return g.renameTable(st)
	}
	return nil
}

// defineTable writes table t's definition: the table, its columns, tags
// and, for a third of them, a partition.
func (g *gen) defineTable(t int) (*seededTable, error) {
	if g.schemaID == 0 || g.schemaTables == 8 {
		if err := g.schema(); err != nil {
			return nil, err
		}
	}
	g.schemaTables++
	schemaID := g.schemaID
	tableID := g.nextCat
	g.nextCat++
	name := fmt.Sprintf("events_%d", t)
	snap, err := g.commit("created_table", name, &schemaID, &tableID, true)
	if err != nil {
		return nil, err
	}
	path := name + "/"
	tbl := &rocklakev1.Table{TableId: tableID, SchemaId: schemaID, TableName: name, BeginSnapshot: snap,
		Path: proto.String(path), TableUuid: proto.String(uuid(g.rng)), PathIsRelative: proto.Bool(true)}
	if err := g.put(format.Key{Tag: format.TagTable, Parts: []uint64{schemaID, tableID, snap}}, tbl); err != nil {
		return nil, err
	}
	if err := g.put(format.Key{Tag: format.TagSecondaryIndex, Name: format.IndexTableByID, Parts: []uint64{tableID}}, wrapperspb.UInt64(schemaID)); err != nil {
		return nil, err
	}
	if err := g.put(format.Key{Tag: format.TagSchemaVersions, Parts: []uint64{tableID, snap}},
		&rocklakev1.SchemaVersions{TableId: tableID, BeginSnapshot: snap, SchemaVersion: g.schemaVersion}); err != nil {
		return nil, err
	}
	ncols := uint64(3 + g.rng.IntN(6))
	for c := uint64(1); c <= ncols; c++ {
		col := &rocklakev1.Column{ColumnId: c, TableId: tableID, ColumnName: fmt.Sprintf("c%d", c),
			DataType: columnTypes[g.rng.IntN(len(columnTypes))], ColumnIndex: c - 1, BeginSnapshot: snap, IsNullable: c > 1}
		if err := g.put(format.Key{Tag: format.TagColumn, Parts: []uint64{tableID, c, snap}}, col); err != nil {
			return nil, err
		}
	}
	for _, tag := range [][2]string{{"owner", "team-" + name}, {"comment", "seeded table " + name}}[:1+g.rng.IntN(2)] {
		if err := g.put(format.Key{Tag: format.TagTag, Parts: []uint64{tableID, format.TagKeyHash(format.V1, tag[0]), snap}},
			&rocklakev1.Tag{ObjectId: tableID, TagKey: tag[0], TagValue: tag[1], BeginSnapshot: snap}); err != nil {
			return nil, err
		}
	}
	if err := g.put(format.Key{Tag: format.TagColumnTag, Parts: []uint64{tableID, 1, format.TagKeyHash(format.V1, "pii"), snap}},
		&rocklakev1.ColumnTag{TableId: tableID, ColumnId: 1, TagKey: "pii", TagValue: "false", BeginSnapshot: snap}); err != nil {
		return nil, err
	}
	partitioned := g.rng.IntN(3) == 0
	var partitionID uint64
	if partitioned {
		partitionID = g.nextCat
		g.nextCat++
		if err := g.put(format.Key{Tag: format.TagPartitionInfo, Parts: []uint64{tableID, partitionID, snap}},
			&rocklakev1.PartitionInfo{PartitionId: partitionID, TableId: tableID, BeginSnapshot: snap}); err != nil {
			return nil, err
		}
		if err := g.put(format.Key{Tag: format.TagPartitionColumn, Parts: []uint64{partitionID, 0}},
			&rocklakev1.PartitionColumn{PartitionId: partitionID, ColumnId: 2, Transform: proto.String("identity"), TableId: proto.Uint64(tableID)}); err != nil {
			return nil, err
		}
	}

	return &seededTable{t: t, ncols: int(ncols), name: name, schemaID: schemaID, tableID: tableID, tbl: tbl, partitioned: partitioned, partitionID: partitionID}, nil
}

// fillTable writes st's data commits: 1..40 files each, until the table
// has its share of rows, some followed by a delete.
func (g *gen) fillTable(st *seededTable, rows int) error {
	t, name, tableID, ncols, partitioned, partitionID := st.t, st.name, st.tableID, uint64(st.ncols), st.partitioned, st.partitionID
	// Data: commits of 1..40 files, until this table has its share.
	inlined := t%5 == 4
	var records, bytes, files, rowID uint64
	end := g.total + 200 + g.rng.IntN(3000)
	if inlined {
		if err := g.inlined(tableID, &rowID); err != nil {
			return err
		}
		end = g.total
	}
	var recent []uint64 // data files of the last commit, for deletes
	for g.total < end && g.total < rows {
		snap, err := g.commit("inserted_into_table", name, nil, &tableID, false)
		if err != nil {
			return err
		}
		recent = recent[:0]
		for range 1 + g.rng.IntN(40) {
			fileID := g.nextFile
			g.nextFile++
			n := uint64(1000 + g.rng.IntN(1_000_000))
			size := n*(20+uint64(g.rng.IntN(30))) + 4096
			df := &rocklakev1.DataFile{DataFileId: fileID, TableId: tableID,
				Path:       fmt.Sprintf("ducklake-%s.parquet", uuid(g.rng)),
				FileFormat: "parquet", RecordCount: n, FileSizeBytes: size,
				FooterSize: proto.Int64(int64(1024 + g.rng.IntN(8192))), BeginSnapshot: proto.Uint64(snap),
				FileOrder: proto.Uint64(files), PathIsRelative: proto.Bool(true), RowIdStart: proto.Uint64(rowID)}
			if partitioned {
				df.PartitionId = proto.Uint64(partitionID)
			}
			if err := g.put(format.Key{Tag: format.TagDataFile, Parts: []uint64{tableID, fileID}}, df); err != nil {
				return err
			}
			if err := g.put(format.Key{Tag: format.TagDataFileBySnapshot, Parts: []uint64{tableID, snap, fileID}}, df); err != nil {
				return err
			}
			for c := uint64(1); c <= ncols; c++ {
				st := &rocklakev1.FileColumnStats{TableId: tableID, ColumnId: c, DataFileId: fileID, ContainsNull: c > 1 && g.rng.IntN(5) == 0,
					MinValue: proto.String(fmt.Sprint(rowID)), MaxValue: proto.String(fmt.Sprint(rowID + n - 1)),
					ColumnSizeBytes: proto.Uint64(size / ncols), ValueCount: proto.Uint64(n), NullCount: proto.Uint64(0)}
				if err := g.put(format.Key{Tag: format.TagFileColumnStats, Parts: []uint64{tableID, c, fileID}}, st); err != nil {
					return err
				}
			}
			if partitioned {
				pv := &rocklakev1.FilePartitionValue{TableId: tableID, PartitionKeyIndex: 0, DataFileId: fileID,
					PartitionValue: proto.String(g.clock.Format("2006-01-02"))}
				if err := g.put(format.Key{Tag: format.TagFilePartitionValue, Parts: []uint64{tableID, 0, fileID}}, pv); err != nil {
					return err
				}
			}
			recent = append(recent, fileID)
			records, bytes, files, rowID = records+n, bytes+size, files+1, rowID+n
		}
		if g.rng.IntN(8) == 0 { // a delete (an UPDATE or DELETE ran)
			snap, err := g.commit("deleted_from_table", name, nil, &tableID, false)
			if err != nil {
				return err
			}
			dataFile := recent[g.rng.IntN(len(recent))]
			delID := g.nextFile
			g.nextFile++
			del := &rocklakev1.DeleteFile{DeleteFileId: delID, DataFileId: dataFile, Path: fmt.Sprintf("ducklake-%s-delete.parquet", uuid(g.rng)),
				DeleteCount: uint64(1 + g.rng.IntN(500)), FileSizeBytes: uint64(2048 + g.rng.IntN(4096)), SnapshotId: snap,
				TableId: proto.Uint64(tableID), BeginSnapshot: proto.Uint64(snap), PathIsRelative: proto.Bool(true), Format: proto.String("parquet")}
			if err := g.put(format.Key{Tag: format.TagDeleteFile, Parts: []uint64{dataFile, delID}}, del); err != nil {
				return err
			}
		}
	}
	st.records, st.bytes, st.files, st.rowID, st.recent = records, bytes, files, rowID, recent
	return nil
}

// tableStats writes st's stats and counters as RockLake keeps them.
func (g *gen) tableStats(st *seededTable) error {
	tableID, ncols, records, bytes, files, rowID := st.tableID, uint64(st.ncols), st.records, st.bytes, st.files, st.rowID
	// Stats and counters as RockLake keeps them per table.
	if err := g.put(format.Key{Tag: format.TagTableStats, Parts: []uint64{tableID}},
		&rocklakev1.TableStats{TableId: tableID, RecordCount: records, InternalFileCount: files, FileSizeBytes: bytes, NextRowId: proto.Uint64(rowID)}); err != nil {
		return err
	}
	for c := uint64(1); c <= ncols; c++ {
		st := &rocklakev1.TableColumnStats{TableId: tableID, ColumnId: c, ContainsNull: c > 1, ContainsNan: proto.Bool(false)}
		if records > 0 {
			st.MinValue, st.MaxValue = proto.String("0"), proto.String(fmt.Sprint(rowID-1))
		}
		if err := g.put(format.Key{Tag: format.TagTableColumnStats, Parts: []uint64{tableID, c}}, st); err != nil {
			return err
		}
	}
	if err := g.put(format.Key{Tag: format.TagCounter, Name: format.NameNextColumnID, Parts: []uint64{tableID}}, wrapperspb.UInt64(ncols+1)); err != nil {
		return err
	}
	if err := g.put(format.Key{Tag: format.TagCounter, Name: format.NameNextRowID, Parts: []uint64{tableID}}, wrapperspb.UInt64(rowID)); err != nil {
		return err
	}
	return nil
}

// renameTable ends st's table version and begins a renamed one, as an
// ALTER TABLE ... RENAME does, scheduling a data file for deletion.
func (g *gen) renameTable(st *seededTable) error {
	name, schemaID, tableID, tbl, recent := st.name, st.schemaID, st.tableID, st.tbl, st.recent
	snap, err := g.commit("altered_table", name, &schemaID, &tableID, true)
	if err != nil {
		return err
	}
	tbl.EndSnapshot = proto.Uint64(snap)
	if err := g.put(format.Key{Tag: format.TagTable, Parts: []uint64{schemaID, tableID, tbl.BeginSnapshot}}, tbl); err != nil {
		return err
	}
	renamed := proto.Clone(tbl).(*rocklakev1.Table)
	renamed.TableName, renamed.BeginSnapshot, renamed.EndSnapshot = name+"_v2", snap, nil
	g.total-- // the ended version replaced a key already counted
	g.keys[format.TagTable.Name()]--
	if err := g.put(format.Key{Tag: format.TagTable, Parts: []uint64{schemaID, tableID, snap}}, renamed); err != nil {
		return err
	}
	if len(recent) > 0 {
		gone := recent[0]
		if err := g.put(format.Key{Tag: format.TagFilesScheduledForDeletion, Parts: []uint64{snap, gone}},
			&rocklakev1.FilesScheduledForDeletion{DataFileId: gone, ScheduleStart: snap, Path: fmt.Sprintf("orphan-%d.parquet", gone),
				FileType: proto.String("data"), PathIsRelative: proto.Bool(true)}); err != nil {
			return err
		}
	}
	return nil
}

func (g *gen) schema() error {
	id := g.nextCat
	g.nextCat++
	name := fmt.Sprintf("sales_%d", id)
	snap, err := g.commit("created_schema", name, &id, nil, true)
	if err != nil {
		return err
	}
	g.schemaID, g.schemaTables = id, 0
	return g.put(format.Key{Tag: format.TagSchema, Parts: []uint64{id}}, &rocklakev1.Schema{SchemaId: id, SchemaName: name, BeginSnapshot: snap,
		SchemaUuid: proto.String(uuid(g.rng)), Path: proto.String(name + "/"), PathIsRelative: proto.Bool(true)})
}

// inlined writes a small table's rows inline, as RockLake does for tables
// under the inlining limit.
func (g *gen) inlined(tableID uint64, rowID *uint64) error {
	if err := g.put(format.Key{Tag: format.TagInlinedDataTables, Parts: []uint64{tableID, g.schemaVersion}},
		&rocklakev1.InlinedDataTables{TableId: tableID, SchemaVersion: g.schemaVersion, Sql: fmt.Sprintf("CREATE TABLE ducklake_inlined_data_%d_%d (row_id BIGINT, begin_snapshot BIGINT, end_snapshot BIGINT, c1 BIGINT)", tableID, g.schemaVersion)}); err != nil {
		return err
	}
	snap, err := g.commit("inlined_insert", fmt.Sprint(tableID), nil, &tableID, false)
	if err != nil {
		return err
	}
	for range 5 + g.rng.IntN(50) {
		row := &rocklakev1.InlinedInsert{TableId: tableID, SchemaVersion: g.schemaVersion, RowId: *rowID,
			Payload: fmt.Appendf(nil, `{"c1":%d}`, g.rng.Int64()), BeginSnapshot: snap}
		if err := g.put(format.Key{Tag: format.TagInlinedRows, Name: format.InlinedInsert, Parts: []uint64{tableID, g.schemaVersion, *rowID}}, row); err != nil {
			return err
		}
		*rowID++
	}
	return nil
}

func uuid(r *rand.Rand) string {
	a, b := r.Uint64(), r.Uint64()
	return fmt.Sprintf("%08x-%04x-4%03x-%04x-%012x", a>>32, a>>16&0xffff, a&0xfff, 0x8000|b>>48&0x3fff, b&0xffffffffffff)
}
