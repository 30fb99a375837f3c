package seed

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// batchRows is how many rows go to SlateDB per WriteAsync: large enough to
// amortise the native call, small enough to keep batches a few hundred KB.
const batchRows = 2000

// emitter encodes the plan's rows and writes them in batches. Encoding and
// SlateDB's WriteAsync take about as long as each other, so a goroutine
// writes one batch while the next is encoded.
//
// Rows are built as format-1 messages whatever the format: formats 1 and 2
// share the wire encoding of every row but the snapshot (see
// proto/rocklake/v2), so the same payload goes into either envelope, and
// only snapshots and file keys differ by format.
type emitter struct {
	v       format.Version
	in      *catalog.Initializer
	rng     *rand.Rand // row details that nothing else depends on
	seed    uint64
	batch   *slatedb.Batch
	key     []byte
	payload []byte
	wrote   [256]int

	full, free chan *slatedb.Batch
	failed     atomic.Bool // the writer goroutine hit an error: stop encoding
	done       chan error
}

func (e *emitter) start(ctx context.Context) {
	// Three batches: one being encoded, one queued, one being written. free
	// can hold all three, so the writer never blocks handing one back.
	e.full, e.free, e.done = make(chan *slatedb.Batch, 1), make(chan *slatedb.Batch, 3), make(chan error, 1)
	e.batch = new(slatedb.Batch)
	e.free <- new(slatedb.Batch)
	e.free <- new(slatedb.Batch)
	go func() {
		var err error
		for b := range e.full {
			if err == nil {
				if err = e.in.WriteAsync(ctx, b); err != nil {
					e.failed.Store(true)
				}
			}
			b.Reset()
			e.free <- b
		}
		e.done <- err
	}()
}

// stop writes the last batch and waits for the writer goroutine.
func (e *emitter) stop() error {
	if e.batch.Len() > 0 {
		e.full <- e.batch
	}
	close(e.full)
	return <-e.done
}

func (e *emitter) put(t format.Tag, msg proto.Message, parts ...uint64) error {
	var err error
	if e.key, err = format.AppendKey(e.key[:0], e.v, format.Key{Tag: t, Parts: parts}); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if e.payload, err = (proto.MarshalOptions{Deterministic: true}).MarshalAppend(e.payload[:0], msg); err != nil {
		return fmt.Errorf("seed: marshal %s: %w", t, err)
	}
	e.batch.Put(e.key, format.EncodeEnvelope(e.v, e.payload))
	e.wrote[t]++
	if e.batch.Len() < batchRows {
		return nil
	}
	if e.failed.Load() {
		return errWriteFailed
	}
	e.full <- e.batch
	e.batch = <-e.free
	return nil
}

// errWriteFailed stops encoding; stop returns the writer's own error.
var errWriteFailed = errors.New("seed: write failed")

// uuid derives a stable UUID (version 4 layout) from what it names, so that
// a table's versions share one and re-running the seed gives the same.
func (e *emitter) uuid(kind byte, id uint64) string {
	r := rand.New(rand.NewPCG(e.seed^uint64(kind)<<56, id))
	a, b := r.Uint64(), r.Uint64()
	a = a&^0xf000 | 0x4000     // version 4
	b = b&^(0xc<<60) | 0x8<<60 // RFC 4122 variant
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

func timeText(micros int64) string {
	return time.UnixMicro(micros).UTC().Format("2006-01-02 15:04:05.000000") + "+00"
}

func opt[T any](v T) *T { return &v }

// end is an end_snapshot: NULL while the row is current.
func end(s uint64) *uint64 {
	if s == 0 {
		return nil
	}
	return &s
}

func (e *emitter) emit(ctx context.Context, m *model) error {
	e.start(ctx)
	var err error
	for _, step := range []func(*model) error{
		e.emitMetadata, e.emitSnapshots, e.emitSchemas, e.emitTables, e.emitViews,
		e.emitTags, e.emitColumns, e.emitFiles, e.emitStats, e.emitNameIndex, e.emitScheduled,
	} {
		if err = step(m); err != nil {
			break
		}
	}
	if werr := e.stop(); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	for t := range e.wrote {
		if e.wrote[t] != m.rows[t] {
			return fmt.Errorf("seed: internal error: planned %d rows of %s, wrote %d", m.rows[t], format.Tag(t), e.wrote[t])
		}
	}
	return nil
}

func (e *emitter) emitMetadata(m *model) error {
	for i, md := range m.metadata {
		row := &rocklakev1.Metadata{Key: md.key, Value: md.value}
		if md.scope != "" {
			row.Scope, row.ScopeId = opt(md.scope), opt(md.scopeID)
		}
		if err := e.put(format.TagMetadata, row, uint64(i+1)); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitSnapshots(m *model) error {
	for i, s := range m.snaps {
		id := uint64(i + 1)
		var row proto.Message
		if e.v == format.V1 {
			row = &rocklakev1.Snapshot{SnapshotId: id, SnapshotTime: opt(timeText(s.micros)),
				SchemaVersion: opt(s.schemaVersion), NextCatalogId: opt(s.nextCatalogID), NextFileId: opt(s.nextFileID)}
		} else {
			row = &rocklakev2.Snapshot{SnapshotId: id, SnapshotTimeMicros: opt(s.micros),
				SchemaVersion: opt(s.schemaVersion), NextCatalogId: opt(s.nextCatalogID), NextFileId: opt(s.nextFileID)}
		}
		if err := e.put(format.TagSnapshot, row, id); err != nil {
			return err
		}
		changes := &rocklakev1.SnapshotChanges{SnapshotId: id, ChangesMade: opt(s.changes), Author: opt(s.author)}
		if s.message != "" {
			changes.CommitMessage = opt(s.message)
		}
		if err := e.put(format.TagSnapshotChanges, changes, id); err != nil {
			return err
		}
		entry := &rocklakev1.CommitLogEntry{SnapshotId: id, WriterEpoch: 1, CommitTimeMicros: s.micros, RowsWritten: s.written}
		if err := e.put(format.TagCommitLog, entry, id); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitSchemas(m *model) error {
	for _, s := range m.schemas {
		row := &rocklakev1.Schema{SchemaId: s.id, SchemaUuid: opt(e.uuid('s', s.id)), BeginSnapshot: s.begin,
			SchemaName: opt(s.name), Path: opt(s.name + "/"), PathIsRelative: opt(true)}
		if err := e.put(format.TagSchema, row, s.id, s.begin); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitTables(m *model) error {
	for _, t := range m.versions {
		row := &rocklakev1.Table{TableId: t.id, TableUuid: opt(e.uuid('t', t.id)), BeginSnapshot: t.begin,
			EndSnapshot: end(t.end), SchemaId: opt(t.schema), TableName: opt(t.name),
			Path: opt(t.table.path), PathIsRelative: opt(true)}
		if err := e.put(format.TagTable, row, t.id, t.begin); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitViews(m *model) error {
	for _, v := range m.views {
		row := &rocklakev1.View{ViewId: v.id, ViewUuid: opt(e.uuid('v', v.id)), BeginSnapshot: v.begin,
			SchemaId: opt(v.schema), ViewName: opt(v.name), Dialect: opt("duckdb"), Sql: opt(v.sql)}
		if err := e.put(format.TagView, row, v.id, v.begin); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitTags(m *model) error {
	for _, g := range m.tags {
		row := &rocklakev1.Tag{ObjectId: g.object, BeginSnapshot: g.begin, EndSnapshot: end(g.end), Key: g.key, Value: opt(g.value)}
		if err := e.put(format.TagTag, row, g.object, g.begin, g.id); err != nil {
			return err
		}
	}
	for _, g := range m.colTags {
		row := &rocklakev1.ColumnTag{TableId: g.table, ColumnId: g.column, BeginSnapshot: g.begin, EndSnapshot: end(g.end), Key: g.key, Value: opt(g.value)}
		if err := e.put(format.TagColumnTag, row, g.table, g.column, g.begin, g.id); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitColumns(m *model) error {
	for _, c := range m.columns {
		row := &rocklakev1.Column{ColumnId: c.id, BeginSnapshot: c.begin, EndSnapshot: end(c.end), TableId: c.table,
			ColumnOrder: opt(c.order), ColumnName: opt(c.name), ColumnType: opt(c.typ), NullsAllowed: opt(!c.notNull)}
		if err := e.put(format.TagColumn, row, c.table, c.id, c.begin); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) filePath(f *dataFile) string {
	return "ducklake-" + e.uuid('f', f.id) + ".parquet"
}

// fileKey is a file's key components: format 2 keys files by table.
func (e *emitter) fileKey(table uint32, id uint64) []uint64 {
	if e.v == format.V1 {
		return []uint64{id}
	}
	return []uint64{uint64(table), id}
}

func (e *emitter) emitFiles(m *model) error {
	for i := range m.files {
		f := &m.files[i]
		row := &rocklakev1.DataFile{DataFileId: f.id, TableId: uint64(f.table), BeginSnapshot: uint64(f.begin),
			EndSnapshot: end(uint64(f.end)), Path: opt(e.filePath(f)), PathIsRelative: opt(true),
			FileFormat: opt("parquet"), RecordCount: opt(int64(f.records)), FileSizeBytes: opt(int64(f.size)),
			FooterSize: opt(int64(f.size/100 + 512)), RowIdStart: opt(int64(f.rowStart))}
		if err := e.put(format.TagDataFile, row, e.fileKey(f.table, f.id)...); err != nil {
			return err
		}
	}
	for _, d := range m.deletes {
		row := &rocklakev1.DeleteFile{DeleteFileId: d.id, TableId: uint64(d.table), BeginSnapshot: uint64(d.begin),
			EndSnapshot: end(uint64(d.end)), DataFileId: opt(m.files[d.file].id),
			Path: opt("ducklake-" + e.uuid('d', d.id) + "-delete.parquet"), PathIsRelative: opt(true),
			Format: opt("parquet"), DeleteCount: opt(int64(d.count)), FileSizeBytes: opt(int64(d.size)),
			FooterSize: opt(int64(d.size/10 + 256))}
		if err := e.put(format.TagDeleteFile, row, e.fileKey(d.table, d.id)...); err != nil {
			return err
		}
	}
	return nil
}

// emitStats writes table and column stats of the live tables, summed over
// their live files.
func (e *emitter) emitStats(m *model) error {
	for _, t := range m.live {
		var records, size uint64
		for _, fi := range append(slices.Clip(t.clean), t.dirty...) {
			f := &m.files[fi]
			records += f.records - f.deleted
			size += f.size
		}
		row := &rocklakev1.TableStats{TableId: t.id, RecordCount: opt(int64(records)),
			NextRowId: opt(int64(t.nextRowID)), FileSizeBytes: opt(int64(size))}
		if err := e.put(format.TagTableStats, row, t.id); err != nil {
			return err
		}
		for _, ci := range t.cols {
			c := &m.columns[ci]
			lo, hi := e.bounds(c.typ)
			row := &rocklakev1.TableColumnStats{TableId: t.id, ColumnId: c.id,
				ContainsNull: opt(!c.notNull && e.rng.IntN(2) == 0), MinValue: opt(lo), MaxValue: opt(hi)}
			if c.typ == "float64" {
				row.ContainsNan = opt(e.rng.IntN(8) == 0)
			}
			if err := e.put(format.TagTableColumnStats, row, t.id, c.id); err != nil {
				return err
			}
		}
	}
	return nil
}

// bounds returns plausible min and max values of a column of type typ, as
// DuckLake renders them.
func (e *emitter) bounds(typ string) (string, string) {
	n := e.rng.IntN(1_000_000)
	switch typ {
	case "int64", "int32":
		return fmt.Sprint(n % 100), fmt.Sprint(100 + n)
	case "float64":
		return fmt.Sprintf("-%d.25", n%1000), fmt.Sprintf("%d.75", n)
	case "decimal(18,3)":
		return "0.000", fmt.Sprintf("%d.999", n)
	case "boolean":
		return "false", "true"
	case "date":
		return "2024-01-01", time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, n%700).Format("2006-01-02")
	case "timestamptz":
		lo := int64(1704067200_000000) + int64(n)*1_000_000
		return timeText(lo), timeText(lo + int64(n%86400)*1_000_000)
	case "uuid":
		return e.uuid('u', uint64(n)), "ffffffff-ffff-4fff-bfff-ffffffffffff"
	}
	return fmt.Sprintf("a%05d", n%100000), fmt.Sprintf("z%05d", n%100000)
}

// emitNameIndex writes the name index of the live schemas, tables and views:
// parent 0 holds schemas, a schema id its tables and views.
func (e *emitter) emitNameIndex(m *model) error {
	type key struct{ parent, hash uint64 }
	index := map[key]*rocklakev1.NameIndex{}
	add := func(parent uint64, name string, kind rocklakev1.ObjectKind, id uint64) {
		h := fnv.New64a()
		h.Write([]byte(name))
		k := key{parent, h.Sum64()}
		if index[k] == nil {
			index[k] = &rocklakev1.NameIndex{}
		}
		index[k].Entries = append(index[k].Entries, &rocklakev1.NameIndexEntry{Name: name, Kind: kind, ObjectId: id})
	}
	for _, s := range m.schemas {
		add(0, s.name, rocklakev1.ObjectKind_OBJECT_KIND_SCHEMA, s.id)
	}
	for _, t := range m.live {
		add(t.schema, t.name, rocklakev1.ObjectKind_OBJECT_KIND_TABLE, t.id)
	}
	for _, v := range m.views {
		add(v.schema, v.name, rocklakev1.ObjectKind_OBJECT_KIND_VIEW, v.id)
	}
	keys := make([]key, 0, len(index))
	for k := range index {
		keys = append(keys, k)
	}
	// Map order is random; the batches must not be.
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.parent, b.parent), cmp.Compare(a.hash, b.hash))
	})
	for _, k := range keys {
		if err := e.put(format.TagNameIndex, index[k], k.parent, k.hash); err != nil {
			return err
		}
	}
	return nil
}

func (e *emitter) emitScheduled(m *model) error {
	for i, fi := range m.scheduled {
		f := &m.files[fi]
		row := &rocklakev1.FileScheduledForDeletion{DataFileId: f.id, Path: opt(e.filePath(f)), PathIsRelative: opt(true),
			ScheduleStart: opt(timeText(m.snaps[m.scheduledAt[i]].micros))}
		if err := e.put(format.TagFileDeletion, row, f.id); err != nil {
			return err
		}
	}
	return nil
}
