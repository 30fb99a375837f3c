package format

import "fmt"

// Tag is a key's first byte: which table, internal structure or system
// namespace the key belongs to (DESIGN 2.1).
type Tag byte

// The tags of formats 1 and 2 (both allocate the same ones).
const (
	TagMetadata         Tag = 0x01 // ducklake_metadata
	TagSnapshot         Tag = 0x02 // ducklake_snapshot
	TagSnapshotChanges  Tag = 0x03 // ducklake_snapshot_changes
	TagSchema           Tag = 0x04 // ducklake_schema
	TagTable            Tag = 0x05 // ducklake_table
	TagView             Tag = 0x06 // ducklake_view
	TagTag              Tag = 0x07 // ducklake_tag
	TagColumnTag        Tag = 0x08 // ducklake_column_tag
	TagDataFile         Tag = 0x09 // ducklake_data_file
	TagDeleteFile       Tag = 0x0A // ducklake_delete_file
	TagColumn           Tag = 0x0B // ducklake_column
	TagTableStats       Tag = 0x0C // ducklake_table_stats
	TagTableColumnStats Tag = 0x0D // ducklake_table_column_stats
	TagNameIndex        Tag = 0x80 // name index (internal)
	TagFileDeletion     Tag = 0x81 // files scheduled for deletion (internal)
	TagCommitLog        Tag = 0xFD // commit log (internal)
	TagCounter          Tag = 0xFE // counters: tag + ASCII name
	TagSystem           Tag = 0xFF // system keys: tag + ASCII name
)

// knownTags lists every known tag in key order; tagNames is indexed by tag.
var (
	knownTags = []Tag{
		TagMetadata, TagSnapshot, TagSnapshotChanges, TagSchema, TagTable,
		TagView, TagTag, TagColumnTag, TagDataFile, TagDeleteFile, TagColumn,
		TagTableStats, TagTableColumnStats, TagNameIndex, TagFileDeletion,
		TagCommitLog, TagCounter, TagSystem,
	}
	tagNames = [256]string{
		TagMetadata:         "ducklake_metadata",
		TagSnapshot:         "ducklake_snapshot",
		TagSnapshotChanges:  "ducklake_snapshot_changes",
		TagSchema:           "ducklake_schema",
		TagTable:            "ducklake_table",
		TagView:             "ducklake_view",
		TagTag:              "ducklake_tag",
		TagColumnTag:        "ducklake_column_tag",
		TagDataFile:         "ducklake_data_file",
		TagDeleteFile:       "ducklake_delete_file",
		TagColumn:           "ducklake_column",
		TagTableStats:       "ducklake_table_stats",
		TagTableColumnStats: "ducklake_table_column_stats",
		// Internal tags get a rocklake_ prefix so that they never pass for
		// DuckLake tables in reports and shard files.
		TagNameIndex:    "rocklake_name_index",
		TagFileDeletion: "rocklake_files_scheduled_for_deletion",
		TagCommitLog:    "rocklake_commit_log",
		TagCounter:      "rocklake_counter",
		TagSystem:       "rocklake_system",
	}
	tagsByName = func() map[string]Tag {
		m := make(map[string]Tag, len(knownTags))
		for _, t := range knownTags {
			m[tagNames[t]] = t
		}
		return m
	}()
)

// KnownTags returns every tag formats 1 and 2 allocate, in key order.
func KnownTags() []Tag { return append([]Tag(nil), knownTags...) }

// Known reports whether t is allocated. Keys with other tags come from a
// newer binary and are carried or dropped as raw bytes, never interpreted.
func (t Tag) Known() bool { return tagNames[t] != "" }

// Name returns the table name of a known tag (for example
// "ducklake_data_file"), or "" for an unknown tag.
func (t Tag) Name() string { return tagNames[t] }

// String returns the name of a known tag and "tag 0xNN" otherwise, so that
// reports on unknown tags still say which byte it was.
func (t Tag) String() string {
	if n := tagNames[t]; n != "" {
		return n
	}
	return fmt.Sprintf("tag 0x%02X", byte(t))
}

// TagByName returns the tag whose Name is name.
func TagByName(name string) (Tag, bool) {
	t, ok := tagsByName[name]
	return t, ok
}

// namedKey reports whether keys of t are the tag byte and an ASCII name
// rather than integer components.
func (t Tag) namedKey() bool { return t == TagCounter || t == TagSystem }
