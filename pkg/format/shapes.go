package format

import (
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// ValueKind says how a key's value is stored.
type ValueKind uint8

const (
	// ValueRow: the envelope, then the protobuf row (NewRow's message).
	ValueRow ValueKind = iota + 1
	// ValueCounter: the envelope, then a big-endian u64 (counters,
	// writer-epoch, retain-from, 0xFC table_by_id). Its row is a
	// google.protobuf.UInt64Value.
	ValueCounter
	// ValueVersion: catalog-format-version, always the format-1 envelope
	// then a big-endian u32 (DESIGN 2.2 item 5). Its row is a
	// google.protobuf.UInt32Value.
	ValueVersion
	// ValueEnveloped: the envelope, then bytes that are not protobuf (the
	// audit log's JSON). Its row is a google.protobuf.BytesValue of the
	// payload.
	ValueEnveloped
	// ValueRaw: stored as it is, no envelope (writer-nonce, endpoint,
	// key-encoding-v020-migrated), and the values of unknown keys. Its
	// row is a google.protobuf.BytesValue of the stored bytes.
	ValueRaw
)

// fieldKind is the encoding of one key component. Only kU64 differs between
// the formats (fixed 8 bytes in format 1, compact in format 2).
type fieldKind uint8

const (
	kU64 fieldKind = iota // an integer part
	kU8                   // an integer part, one byte
	kU32                  // an integer part, four bytes big-endian
	kStr                  // a string part: u16 big-endian length, then UTF-8
	kLit                  // fixed bytes (lit), not a part
)

type field struct {
	name string
	kind fieldKind
	lit  string
}

// shape is one layout of the keys of a tag. A tag has one shape, except
// 0xFC (two, told apart by their components), 0xFD (a subtype byte) and
// 0xFE and 0xFF (an id byte or a name): those shapes have a name, which Key
// carries.
type shape struct {
	name   string
	sel    string // the bytes right after the tag that select this shape
	fields []field
	value  ValueKind
	rows   [3]protoreflect.MessageType // by Version, for ValueRow
	alike  [3][3]bool                  // RowsAlike by Version pair, for ValueRow
}

func u64s(names ...string) []field {
	fs := make([]field, len(names))
	for i, n := range names {
		fs[i] = field{name: n, kind: kU64}
	}
	return fs
}

// row builds the rows of a ValueRow shape from its two messages.
func row(m1, m2 interface{ ProtoReflect() protoreflect.Message }) [3]protoreflect.MessageType {
	return [3]protoreflect.MessageType{V1: m1.ProtoReflect().Type(), V2: m2.ProtoReflect().Type()}
}

func rowShape(m1, m2 interface{ ProtoReflect() protoreflect.Message }, fields ...field) []shape {
	return []shape{{fields: fields, value: ValueRow, rows: row(m1, m2)}}
}

var (
	uint64ValueType = (*wrapperspb.UInt64Value)(nil).ProtoReflect().Type()
	uint32ValueType = (*wrapperspb.UInt32Value)(nil).ProtoReflect().Type()
	bytesValueType  = (*wrapperspb.BytesValue)(nil).ProtoReflect().Type()
)

// Counter ids (tag 0xFE), RockLake's COUNTER_* constants.
const (
	CounterNextSnapshotID  byte = 0x01
	CounterNextCatalogID   byte = 0x02
	CounterNextFileID      byte = 0x03
	CounterNextCheckpoint  byte = 0x04
	CounterNextExcisionSeq byte = 0x05
	CounterNextColumnID    byte = 0x10 // per table
	CounterNextRowID       byte = 0x11 // per table
)

// Counter and system key names: the Name of their Key.
const (
	NameNextSnapshotID   = "next_snapshot_id"
	NameNextCatalogID    = "next_catalog_id"
	NameNextFileID       = "next_file_id"
	NameNextCheckpointID = "next_checkpoint_id"
	NameNextExcisionSeq  = "next_excision_seq"
	NameNextColumnID     = "next_column_id"
	NameNextRowID        = "next_row_id"

	SystemCatalogFormatVersion = "catalog-format-version"
	SystemWriterEpoch          = "writer-epoch"
	SystemWriterNonce          = "writer-nonce"
	SystemEndpoint             = "endpoint"
	SystemRetainFrom           = "retain-from"
	SystemHotKey               = "hot-key"
	SystemKeyEncodingMigrated  = "key-encoding-v020-migrated"
	SystemAudit                = "audit"
	SystemPackedMeta           = "packed-meta"
	SystemExcised              = "excised"

	// The two shapes of tag 0xFC and of tag 0xFD.
	IndexTableByID       = "table_by_id"
	IndexSnapshotFiles   = "snapshot_files"
	InlinedInsert        = "insert"
	InlinedDelete        = "delete"
	inlinedInsertSubtype = "\x01"
	inlinedDeleteSubtype = "\x02"
)

var shapes = [256][]shape{
	TagMetadata: rowShape(&rocklakev1.Metadata{}, &rocklakev2.Metadata{},
		field{name: "scope", kind: kU8}, field{name: "scope_id", kind: kU64}, field{name: "key", kind: kStr}),
	TagSnapshot:                  rowShape(&rocklakev1.Snapshot{}, &rocklakev2.Snapshot{}, u64s("snapshot_id")...),
	TagSnapshotChanges:           rowShape(&rocklakev1.SnapshotChanges{}, &rocklakev2.SnapshotChanges{}, u64s("snapshot_id")...),
	TagSchema:                    rowShape(&rocklakev1.Schema{}, &rocklakev2.Schema{}, u64s("schema_id")...),
	TagTable:                     rowShape(&rocklakev1.Table{}, &rocklakev2.Table{}, u64s("schema_id", "table_id", "begin_snapshot")...),
	TagColumn:                    rowShape(&rocklakev1.Column{}, &rocklakev2.Column{}, u64s("table_id", "column_id", "begin_snapshot")...),
	TagView:                      rowShape(&rocklakev1.View{}, &rocklakev2.View{}, u64s("schema_id", "view_id", "begin_snapshot")...),
	TagMacro:                     rowShape(&rocklakev1.Macro{}, &rocklakev2.Macro{}, u64s("schema_id", "macro_id", "begin_snapshot")...),
	TagMacroImpl:                 rowShape(&rocklakev1.MacroImpl{}, &rocklakev2.MacroImpl{}, u64s("macro_id", "impl_id")...),
	TagMacroParameters:           rowShape(&rocklakev1.MacroParameters{}, &rocklakev2.MacroParameters{}, u64s("macro_id", "impl_id", "column_id")...),
	TagDataFile:                  rowShape(&rocklakev1.DataFile{}, &rocklakev2.DataFile{}, u64s("table_id", "data_file_id")...),
	TagDeleteFile:                rowShape(&rocklakev1.DeleteFile{}, &rocklakev2.DeleteFile{}, u64s("data_file_id", "delete_file_id")...),
	TagFilesScheduledForDeletion: rowShape(&rocklakev1.FilesScheduledForDeletion{}, &rocklakev2.FilesScheduledForDeletion{}, u64s("schedule_start", "data_file_id")...),
	TagInlinedDataTables:         rowShape(&rocklakev1.InlinedDataTables{}, &rocklakev2.InlinedDataTables{}, u64s("table_id", "schema_version")...),
	TagColumnMapping:             rowShape(&rocklakev1.ColumnMapping{}, &rocklakev2.ColumnMapping{}, u64s("table_id", "mapping_id")...),
	TagNameMapping:               rowShape(&rocklakev1.NameMapping{}, &rocklakev2.NameMapping{}, u64s("mapping_id", "column_id", "source_name_hash")...),
	TagTableStats:                rowShape(&rocklakev1.TableStats{}, &rocklakev2.TableStats{}, u64s("table_id")...),
	TagTableColumnStats:          rowShape(&rocklakev1.TableColumnStats{}, &rocklakev2.TableColumnStats{}, u64s("table_id", "column_id")...),
	TagFileColumnStats:           rowShape(&rocklakev1.FileColumnStats{}, &rocklakev2.FileColumnStats{}, u64s("table_id", "column_id", "data_file_id")...),
	TagFileVariantStats:          rowShape(&rocklakev1.FileVariantStats{}, &rocklakev2.FileVariantStats{}, u64s("table_id", "column_id", "variant_path_hash", "data_file_id")...),
	TagPartitionInfo:             rowShape(&rocklakev1.PartitionInfo{}, &rocklakev2.PartitionInfo{}, u64s("table_id", "partition_id", "begin_snapshot")...),
	TagPartitionColumn:           rowShape(&rocklakev1.PartitionColumn{}, &rocklakev2.PartitionColumn{}, u64s("partition_id", "partition_key_index")...),
	TagFilePartitionValue:        rowShape(&rocklakev1.FilePartitionValue{}, &rocklakev2.FilePartitionValue{}, u64s("table_id", "partition_key_index", "data_file_id")...),
	TagSortInfo:                  rowShape(&rocklakev1.SortInfo{}, &rocklakev2.SortInfo{}, u64s("table_id", "sort_id", "begin_snapshot")...),
	TagSortExpression:            rowShape(&rocklakev1.SortExpression{}, &rocklakev2.SortExpression{}, u64s("sort_id", "sort_key_index")...),
	// tag_key_hash: RockLake's DefaultHasher in format 1, SHA-256 in
	// format 2 (TagKeyHash).
	TagTag:            rowShape(&rocklakev1.Tag{}, &rocklakev2.Tag{}, u64s("object_id", "tag_key_hash", "begin_snapshot")...),
	TagColumnTag:      rowShape(&rocklakev1.ColumnTag{}, &rocklakev2.ColumnTag{}, u64s("table_id", "column_id", "tag_key_hash", "begin_snapshot")...),
	TagSchemaVersions: rowShape(&rocklakev1.SchemaVersions{}, &rocklakev2.SchemaVersions{}, u64s("table_id", "begin_snapshot")...),

	TagDataFileBySnapshot: rowShape(&rocklakev1.DataFile{}, &rocklakev2.DataFile{}, u64s("table_id", "snapshot_id", "data_file_id")...),
	TagSnapshotLease:      rowShape(&rocklakev1.SnapshotLease{}, &rocklakev2.SnapshotLease{}, field{name: "consumer_id", kind: kStr}),
	TagExtensionSchema: rowShape(&rocklakev1.ExtensionSchema{}, &rocklakev2.ExtensionSchema{},
		field{name: "extension_id", kind: kU8}, field{name: "table_name", kind: kStr}, field{name: "row_id", kind: kU64}),
	TagEncryptedSecret: rowShape(&rocklakev1.EncryptedSecret{}, &rocklakev2.EncryptedSecret{}, u64s("secret_id")...),
	TagEncryptionKey:   rowShape(&rocklakev1.EncryptionKey{}, &rocklakev2.EncryptionKey{}, u64s("catalog_id", "begin_snapshot")...),

	TagSecondaryIndex: {
		{name: IndexTableByID, fields: u64s("table_id"), value: ValueCounter},
		{name: IndexSnapshotFiles, fields: u64s("snapshot_id", "table_id", "data_file_id"), value: ValueRow,
			rows: row(&rocklakev1.SecondaryIndexEntry{}, &rocklakev2.SecondaryIndexEntry{})},
	},
	TagInlinedRows: {
		{name: InlinedInsert, sel: inlinedInsertSubtype, fields: u64s("table_id", "schema_version", "row_id"), value: ValueRow,
			rows: row(&rocklakev1.InlinedInsert{}, &rocklakev2.InlinedInsert{})},
		{name: InlinedDelete, sel: inlinedDeleteSubtype, fields: u64s("table_id", "data_file_id", "row_id"), value: ValueRow,
			rows: row(&rocklakev1.InlinedDelete{}, &rocklakev2.InlinedDelete{})},
	},
	TagCounter: {
		{name: NameNextSnapshotID, sel: string(rune(CounterNextSnapshotID)), value: ValueCounter},
		{name: NameNextCatalogID, sel: string(rune(CounterNextCatalogID)), value: ValueCounter},
		{name: NameNextFileID, sel: string(rune(CounterNextFileID)), value: ValueCounter},
		{name: NameNextCheckpointID, sel: string(rune(CounterNextCheckpoint)), value: ValueCounter},
		{name: NameNextExcisionSeq, sel: string(rune(CounterNextExcisionSeq)), value: ValueCounter},
		{name: NameNextColumnID, sel: string(rune(CounterNextColumnID)), fields: u64s("table_id"), value: ValueCounter},
		{name: NameNextRowID, sel: string(rune(CounterNextRowID)), fields: u64s("table_id"), value: ValueCounter},
	},
	TagSystem: {
		{name: SystemCatalogFormatVersion, sel: SystemCatalogFormatVersion, value: ValueVersion},
		{name: SystemWriterEpoch, sel: SystemWriterEpoch, value: ValueCounter},
		{name: SystemWriterNonce, sel: SystemWriterNonce, value: ValueRaw},
		{name: SystemEndpoint, sel: SystemEndpoint, value: ValueRaw},
		{name: SystemRetainFrom, sel: SystemRetainFrom, value: ValueCounter},
		{name: SystemHotKey, sel: SystemHotKey, value: ValueRow, rows: row(&rocklakev1.HotKey{}, &rocklakev2.HotKey{})},
		{name: SystemKeyEncodingMigrated, sel: SystemKeyEncodingMigrated, value: ValueRaw},
		{name: SystemAudit, sel: SystemAudit, fields: u64s("snapshot_id"), value: ValueEnveloped},
		{name: SystemPackedMeta, sel: SystemPackedMeta, fields: u64s("table_id"), value: ValueRow,
			rows: row(&rocklakev1.PackedTableMetadata{}, &rocklakev2.PackedTableMetadata{})},
		{name: SystemExcised, sel: SystemExcised + ":", value: ValueRow,
			fields: []field{{name: "timestamp_millis", kind: kU64}, {kind: kLit, lit: ":"}, {name: "seq", kind: kU32}},
			rows:   row(&rocklakev1.ExciseAuditEntry{}, &rocklakev2.ExciseAuditEntry{})},
	},
}

// rawShape stands for keys of no known shape: unknown tags, and counter and
// system keys this binary does not know (DESIGN 2.3: carried unchanged).
var rawShape = shape{value: ValueRaw}

// shapeOf returns the shape of k, or nil if k names none.
func shapeOf(k Key) *shape {
	if k.Raw != nil || !k.Tag.Known() {
		return &rawShape
	}
	for i := range shapes[k.Tag] {
		if s := &shapes[k.Tag][i]; s.name == k.Name {
			return s
		}
	}
	return nil
}

// Field is the name and type of one key component, for reports and shard
// files: Str components are strings, the others integers.
type Field struct {
	Name string
	Str  bool
}

// Fields returns the components of the keys of tag t with shape name (""
// for tags of one shape), in key order: those Key.Parts and Key.Strs hold.
// It returns nil for a shape that does not exist.
func Fields(t Tag, name string) []Field {
	s := shapeOf(Key{Tag: t, Name: name})
	if s == nil {
		return nil
	}
	out := []Field{}
	for _, f := range s.fields {
		if f.kind != kLit {
			out = append(out, Field{Name: f.name, Str: f.kind == kStr})
		}
	}
	return out
}

// Shapes returns one Key per key shape of every known tag, in tag order:
// its Tag and Name, no components (Fields says which it has).
func Shapes() []Key {
	var out []Key
	for _, t := range knownTags {
		for _, s := range shapes[t] {
			out = append(out, Key{Tag: t, Name: s.name})
		}
	}
	return out
}

// ShapeNames returns the names of the shapes of tag t, or nil for tags of
// one shape.
func ShapeNames(t Tag) []string {
	var names []string
	for _, s := range shapes[t] {
		if s.name != "" {
			names = append(names, s.name)
		}
	}
	return names
}

// ValueKindOf returns how the value of k is stored. Keys of no known shape
// are ValueRaw.
func ValueKindOf(k Key) ValueKind {
	if s := shapeOf(k); s != nil {
		return s.value
	}
	return ValueRaw
}
