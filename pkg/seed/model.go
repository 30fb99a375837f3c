package seed

import (
	"fmt"
	"math/rand/v2"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// overhead is what every commit costs besides its own rows: the snapshot,
// its snapshot_changes and its commit log entry.
const overhead = 3

// The plan. Ids and snapshot ids are uint32 in the per-file structs, which
// dominate the plan's memory; Options.Rows is bounded accordingly.
type (
	model struct {
		rng  *rand.Rand
		left int      // rows still to plan
		rows [256]int // rows planned, per tag
		next [nCounter]uint64

		micros        int64 // time of the latest snapshot
		schemaVersion int64
		snaps         []snap
		metadata      []meta
		schemas       []schema
		versions      []tableVersion
		live          []*table // tables not dropped, oldest first
		columns       []column
		views         []view
		tags          []tagRow
		colTags       []colTagRow
		files         []dataFile
		deletes       []deleteFile
		scheduled     []int32 // data files (indices) scheduled for deletion
		scheduledAt   []uint32
	}
	snap struct {
		micros        int64
		schemaVersion int64
		nextCatalogID uint64
		nextFileID    uint64
		changes       string
		author        string
		message       string
		written       uint64 // rows the commit wrote or ended
	}
	meta struct {
		key, value string
		scope      string // "", "schema" or "table"
		scopeID    uint64
	}
	schema struct {
		id, begin uint64
		name      string
	}
	tableVersion struct {
		id, begin, end, schema uint64
		name                   string
		table                  *table
	}
	table struct {
		id, schema   uint64
		schemaName   string
		name, path   string // path: the name it was created with, which stays
		cur          int    // current version, index into model.versions
		cols         []int  // live columns, indices into model.columns
		tags         []int
		colTags      []int
		clean, dirty []int32 // live data files without and with a delete file
		nextRowID    uint64
	}
	column struct {
		table, id, begin, end uint64
		order                 int64
		name, typ             string
		notNull               bool
	}
	view struct {
		id, begin, schema uint64
		name, sql         string
	}
	tagRow struct {
		object, begin, end, id uint64
		key, value             string
	}
	colTagRow struct {
		table, column, begin, end, id uint64
		key, value                    string
	}
	dataFile struct {
		id, rowStart           uint64
		records, size, deleted uint64 // deleted: rows its delete file deletes
		table                  uint32
		begin, end             uint32
		del                    int32 // its delete file, index into model.deletes, or -1
	}
	deleteFile struct {
		id, count, size uint64
		file            int32 // index into model.files
		table           uint32
		begin, end      uint32
	}
)

// Counters, in format.CounterNames order.
const (
	cSnapshot = iota
	cSchema
	cTable
	cColumn
	cFile
	cMetadata
	cTag
	nCounter
)

// maxRows keeps every id and snapshot id within the plan's uint32 fields.
const maxRows = 1 << 30

var (
	tableWords  = []string{"orders", "customers", "events", "payments", "sessions", "inventory", "shipments", "clicks", "invoices", "sensors", "accounts", "reviews"}
	columnTypes = []string{"int64", "varchar", "timestamptz", "float64", "boolean", "date", "decimal(18,3)", "int32", "uuid", "varchar"}
	columnWords = []string{"amount", "status", "created_at", "region", "score", "user_id", "price", "quantity", "label", "updated_at", "country", "flag"}
	authors     = []string{"etl@rocklake", "alice@example.com", "bob@example.com", "scheduler"}
	tagKeys     = []string{"owner", "comment", "pii", "retention"}
)

func newModel(rows int, seed int64) *model {
	m := &model{
		rng:    rand.New(rand.NewPCG(uint64(seed), 0x726f636b6c616b65)), // "rocklake"
		left:   rows,
		micros: 1736154000_000000, // 2025-01-06 09:00:00 UTC
	}
	for i := range m.next {
		m.next[i] = 1 // as the initialisation batch leaves them
	}
	return m
}

func (m *model) alloc(c int) uint64 {
	id := m.next[c]
	m.next[c]++
	return id
}

// use records n rows of each of tags planned in the current commit (n < 0:
// rows that a commit removes, which the plan gets back).
func (m *model) use(n int, tags ...format.Tag) {
	for _, t := range tags {
		m.rows[t] += n
		m.left -= n
	}
	if n > 0 && len(m.snaps) > 0 {
		m.snaps[len(m.snaps)-1].written += uint64(n * len(tags))
	}
}

// ended records rows rewritten with an end_snapshot.
func (m *model) ended(n int) { m.snaps[len(m.snaps)-1].written += uint64(n) }

// plan fills the model with exactly m.left rows: a few global settings, the
// first schema, a fixed opening that gives every row type a row, then
// commits drawn at random in realistic proportions, and settings to make the
// count exact.
func (m *model) plan() {
	for _, kv := range [][2]string{
		{"version", "0.3"}, {"created_by", "DuckDB v1.3.0 (rocklake-migrate seed)"},
		{"data_path", "s3://rocklake-seed/data/"}, {"encrypted", "false"},
	} {
		if m.left == 0 {
			return
		}
		m.addMetadata(meta{key: kv[0], value: kv[1]})
	}
	m.createSchema()
	for _, step := range []func() bool{
		m.createTable, m.insert, m.createTable, m.insert, m.deleteRows, m.compact,
		m.tagTable, m.tagColumn, m.createView, m.renameTable, m.addColumn,
		m.createTable, m.insert, m.dropTable, m.createSchema,
	} {
		step()
	}
	steps := []struct {
		weight int
		do     func() bool
	}{
		{5000, m.insert}, {1500, m.deleteRows}, {200, m.compact}, {250, m.createTable},
		{30, m.renameTable}, {50, m.addColumn}, {25, m.dropTable}, {30, m.createView},
		{50, m.tagTable}, {60, m.tagColumn}, {3, m.createSchema},
	}
	total := 0
	for _, s := range steps {
		total += s.weight
	}
	for m.left > overhead {
		w := m.rng.IntN(total)
		i := 0
		for w >= steps[i].weight {
			w -= steps[i].weight
			i++
		}
		// An insert fits whenever a table exists; without one the rest
		// becomes settings.
		if !steps[i].do() && !m.insert() {
			break
		}
	}
	for i := 0; m.left > 0; i++ {
		md := meta{key: fmt.Sprintf("seed_setting_%d", i), value: fmt.Sprint(m.rng.IntN(1000))}
		if len(m.live) > 0 {
			t := m.live[m.rng.IntN(len(m.live))]
			md.scope, md.scopeID = "table", t.id
		}
		m.addMetadata(md)
	}
}

func (m *model) addMetadata(md meta) {
	m.alloc(cMetadata)
	m.metadata = append(m.metadata, md)
	m.use(1, format.TagMetadata)
}

// commit starts the next snapshot; ddl commits bump the schema version.
func (m *model) commit(ddl bool, changes string) uint64 {
	id := m.alloc(cSnapshot)
	m.micros += 1_000_000 + m.rng.Int64N(20*60*1_000_000)
	if ddl {
		m.schemaVersion++
	}
	s := snap{micros: m.micros, schemaVersion: m.schemaVersion, changes: changes, author: authors[m.rng.IntN(len(authors))]}
	if m.rng.IntN(3) == 0 {
		s.message = "nightly load"
	}
	m.snaps = append(m.snaps, s)
	m.use(1, format.TagSnapshot, format.TagSnapshotChanges, format.TagCommitLog)
	m.snaps[len(m.snaps)-1].written -= 1 // the commit log entry counts itself out
	return id
}

// done records the ids the snapshot leaves for the next one.
func (m *model) done() bool {
	s := &m.snaps[len(m.snaps)-1]
	s.nextCatalogID = max(m.next[cSchema], m.next[cTable])
	s.nextFileID = m.next[cFile]
	return true
}

func (m *model) createSchema() bool {
	if m.left < overhead+2 {
		return false
	}
	id := m.next[cSchema]
	name := "main"
	if id > 1 {
		name = fmt.Sprintf("lake_%d", id)
	}
	m.alloc(cSchema)
	s := m.commit(true, fmt.Sprintf("created_schema:%q", name))
	m.schemas = append(m.schemas, schema{id: id, begin: s, name: name})
	m.use(1, format.TagSchema, format.TagNameIndex)
	return m.done()
}

// pick returns a live table, favouring the older ones as real lakes do (a
// few hot tables hold most files), or nil if there is none.
func (m *model) pick() *table {
	if len(m.live) == 0 {
		return nil
	}
	u := m.rng.Float64()
	return m.live[int(u*u*float64(len(m.live)))]
}

func (m *model) createTable() bool {
	nc := 3 + m.rng.IntN(10)
	if len(m.schemas) == 0 || m.left < overhead+3+2*nc {
		return false
	}
	sc := m.schemas[m.rng.IntN(len(m.schemas))]
	id := m.alloc(cTable)
	t := &table{id: id, schema: sc.id, schemaName: sc.name, name: fmt.Sprintf("%s_%d", tableWords[m.rng.IntN(len(tableWords))], id)}
	t.path = t.name + "/"
	s := m.commit(true, fmt.Sprintf("created_table:%q.%q", sc.name, t.name))
	t.cur = len(m.versions)
	m.versions = append(m.versions, tableVersion{id: id, begin: s, schema: sc.id, name: t.name, table: t})
	m.use(1, format.TagTable, format.TagNameIndex, format.TagTableStats)
	for i := 0; i < nc; i++ {
		m.newColumn(t, s, i == 0)
	}
	m.live = append(m.live, t)
	return m.done()
}

func (m *model) newColumn(t *table, s uint64, key bool) {
	c := column{table: t.id, id: m.alloc(cColumn), begin: s, order: int64(len(t.cols) + 1), notNull: key}
	if key {
		c.name, c.typ = "id", "int64"
	} else {
		c.name = fmt.Sprintf("%s_%d", columnWords[m.rng.IntN(len(columnWords))], c.id)
		c.typ = columnTypes[m.rng.IntN(len(columnTypes))]
	}
	t.cols = append(t.cols, len(m.columns))
	m.columns = append(m.columns, c)
	m.use(1, format.TagColumn, format.TagTableColumnStats)
}

func (m *model) insert() bool {
	t := m.pick()
	if t == nil || m.left < overhead+1 {
		return false
	}
	k := min(1+m.rng.IntN(48), m.left-overhead)
	s := m.commit(false, fmt.Sprintf("inserted_into_table:%d", t.id))
	for range k {
		m.newFile(t, s, uint64(1000+m.rng.IntN(1_000_000)))
	}
	return m.done()
}

func (m *model) newFile(t *table, s uint64, records uint64) {
	f := dataFile{
		id: m.alloc(cFile), rowStart: t.nextRowID, table: uint32(t.id), begin: uint32(s),
		records: records, size: records*uint64(16+m.rng.IntN(64)) + 4096, del: -1,
	}
	t.nextRowID += records
	t.clean = append(t.clean, int32(len(m.files)))
	m.files = append(m.files, f)
	m.use(1, format.TagDataFile)
}

// take removes a random element of *list and returns it.
func (m *model) take(list *[]int32) int32 {
	l := *list
	i := m.rng.IntN(len(l))
	x := l[i]
	l[i] = l[len(l)-1]
	*list = l[:len(l)-1]
	return x
}

func (m *model) deleteRows() bool {
	t := m.pick()
	if t == nil || len(t.clean) == 0 || m.left < overhead+1 {
		return false
	}
	k := min(1+m.rng.IntN(16), len(t.clean), m.left-overhead)
	s := m.commit(false, fmt.Sprintf("deleted_from_table:%d", t.id))
	for range k {
		fi := m.take(&t.clean)
		t.dirty = append(t.dirty, fi)
		f := &m.files[fi]
		f.deleted = 1 + uint64(m.rng.IntN(int(f.records/10)))
		f.del = int32(len(m.deletes))
		m.deletes = append(m.deletes, deleteFile{
			id: m.alloc(cFile), file: fi, table: f.table, begin: uint32(s),
			count: f.deleted, size: 1024 + f.deleted*8,
		})
		m.use(1, format.TagDeleteFile)
	}
	return m.done()
}

// compact rewrites a few of a table's files, those with deletes first, into
// one: the old files (and their delete files) end, and are scheduled for
// deletion.
func (m *model) compact() bool {
	t := m.pick()
	if t == nil {
		return false
	}
	n := min(2+m.rng.IntN(7), len(t.clean)+len(t.dirty), m.left-overhead-1)
	if n < 2 {
		return false
	}
	s := m.commit(false, fmt.Sprintf("compacted_table:%d", t.id))
	var records uint64
	for range n {
		list := &t.dirty
		if len(t.dirty) == 0 {
			list = &t.clean
		}
		fi := m.take(list)
		f := &m.files[fi]
		f.end = uint32(s)
		m.ended(1)
		if f.del >= 0 {
			m.deletes[f.del].end = uint32(s)
			m.ended(1)
		}
		records += f.records - f.deleted
		m.scheduled = append(m.scheduled, fi)
		m.scheduledAt = append(m.scheduledAt, uint32(len(m.snaps)-1))
		m.use(1, format.TagFileDeletion)
	}
	m.newFile(t, s, records)
	return m.done()
}

func (m *model) renameTable() bool {
	t := m.pick()
	if t == nil || m.left < overhead+1 {
		return false
	}
	old := &m.versions[t.cur]
	name := fmt.Sprintf("%s_r%d", old.name, m.next[cSnapshot])
	s := m.commit(true, fmt.Sprintf("altered_table:%d", t.id))
	m.versions[t.cur].end = s
	m.ended(1)
	t.name = name
	t.cur = len(m.versions)
	m.versions = append(m.versions, tableVersion{id: t.id, begin: s, schema: t.schema, name: name, table: t})
	m.use(1, format.TagTable) // the name index entry moves: one key in, one out
	return m.done()
}

func (m *model) addColumn() bool {
	t := m.pick()
	if t == nil || m.left < overhead+2 {
		return false
	}
	s := m.commit(true, fmt.Sprintf("altered_table:%d", t.id))
	m.newColumn(t, s, false)
	return m.done()
}

// dropTable ends a table and everything of it; its stats and name index
// entry go, which gives their rows back to the plan.
func (m *model) dropTable() bool {
	if len(m.live) < 3 || m.left < overhead {
		return false
	}
	i := m.rng.IntN(len(m.live))
	t := m.live[i]
	m.live = append(m.live[:i], m.live[i+1:]...)
	s := m.commit(true, fmt.Sprintf("dropped_table:%d", t.id))
	m.versions[t.cur].end = s
	m.ended(1)
	for _, c := range t.cols {
		m.columns[c].end = s
	}
	for _, g := range t.tags {
		m.tags[g].end = s
	}
	for _, g := range t.colTags {
		m.colTags[g].end = s
	}
	for _, fi := range append(t.clean, t.dirty...) {
		f := &m.files[fi]
		f.end = uint32(s)
		if f.del >= 0 {
			m.deletes[f.del].end = uint32(s)
			m.ended(1)
		}
	}
	m.ended(len(t.cols) + len(t.tags) + len(t.colTags) + len(t.clean) + len(t.dirty))
	m.use(-1, format.TagNameIndex, format.TagTableStats)
	m.use(-len(t.cols), format.TagTableColumnStats)
	t.cols, t.tags, t.colTags, t.clean, t.dirty = nil, nil, nil, nil, nil
	return m.done()
}

func (m *model) createView() bool {
	t := m.pick()
	if t == nil || m.left < overhead+2 {
		return false
	}
	id := m.alloc(cTable) // views share the catalog id space with tables
	v := view{id: id, schema: t.schema, name: fmt.Sprintf("v_%s_%d", t.name, id)}
	v.sql = fmt.Sprintf("SELECT * FROM %q.%q WHERE id %% 10 = 0", t.schemaName, t.name)
	s := m.commit(true, fmt.Sprintf("created_view:%q.%q", t.schemaName, v.name))
	v.begin = s
	m.views = append(m.views, v)
	m.use(1, format.TagView, format.TagNameIndex)
	return m.done()
}

func (m *model) tagTable() bool {
	t := m.pick()
	if t == nil || m.left < overhead+1 {
		return false
	}
	s := m.commit(false, fmt.Sprintf("altered_table:%d", t.id))
	key := tagKeys[m.rng.IntN(len(tagKeys))]
	t.tags = append(t.tags, len(m.tags))
	m.tags = append(m.tags, tagRow{object: t.id, begin: s, id: m.alloc(cTag), key: key, value: fmt.Sprintf("%s of %s", key, t.name)})
	m.use(1, format.TagTag)
	return m.done()
}

func (m *model) tagColumn() bool {
	t := m.pick()
	if t == nil || m.left < overhead+1 {
		return false
	}
	c := m.columns[t.cols[m.rng.IntN(len(t.cols))]]
	s := m.commit(false, fmt.Sprintf("altered_table:%d", t.id))
	key := tagKeys[m.rng.IntN(len(tagKeys))]
	t.colTags = append(t.colTags, len(m.colTags))
	m.colTags = append(m.colTags, colTagRow{table: t.id, column: c.id, begin: s, id: m.alloc(cTag), key: key, value: fmt.Sprintf("%s of %s", key, c.name)})
	m.use(1, format.TagColumnTag)
	return m.done()
}
