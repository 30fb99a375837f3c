package format

import "fmt"

// Tag is a key's first byte: which table, internal structure or system
// namespace the key belongs to (RockLake's rocklake-core/src/tags.rs).
type Tag byte

// The tags of formats 1 and 2 (both allocate the same ones).
const (
	TagMetadata                  Tag = 0x01 // ducklake_metadata
	TagSnapshot                  Tag = 0x02 // ducklake_snapshot
	TagSnapshotChanges           Tag = 0x03 // ducklake_snapshot_changes
	TagSchema                    Tag = 0x04 // ducklake_schema
	TagTable                     Tag = 0x05 // ducklake_table
	TagColumn                    Tag = 0x06 // ducklake_column
	TagView                      Tag = 0x07 // ducklake_view
	TagMacro                     Tag = 0x08 // ducklake_macro
	TagMacroImpl                 Tag = 0x09 // ducklake_macro_impl
	TagMacroParameters           Tag = 0x0A // ducklake_macro_parameters
	TagDataFile                  Tag = 0x0B // ducklake_data_file
	TagDeleteFile                Tag = 0x0C // ducklake_delete_file
	TagFilesScheduledForDeletion Tag = 0x0D // ducklake_files_scheduled_for_deletion
	TagInlinedDataTables         Tag = 0x0E // ducklake_inlined_data_tables
	TagColumnMapping             Tag = 0x0F // ducklake_column_mapping
	TagNameMapping               Tag = 0x10 // ducklake_name_mapping
	TagTableStats                Tag = 0x11 // ducklake_table_stats
	TagTableColumnStats          Tag = 0x12 // ducklake_table_column_stats
	TagFileColumnStats           Tag = 0x13 // ducklake_file_column_stats
	TagFileVariantStats          Tag = 0x14 // ducklake_file_variant_stats
	TagPartitionInfo             Tag = 0x15 // ducklake_partition_info
	TagPartitionColumn           Tag = 0x16 // ducklake_partition_column
	TagFilePartitionValue        Tag = 0x17 // ducklake_file_partition_value
	TagSortInfo                  Tag = 0x18 // ducklake_sort_info
	TagSortExpression            Tag = 0x19 // ducklake_sort_expression
	TagTag                       Tag = 0x1A // ducklake_tag
	TagColumnTag                 Tag = 0x1B // ducklake_column_tag
	TagSchemaVersions            Tag = 0x1C // ducklake_schema_versions

	TagDataFileBySnapshot Tag = 0x21 // data files by table and snapshot (index)
	TagSnapshotLease      Tag = 0x22 // snapshot leases
	TagExtensionSchema    Tag = 0x23 // extension tables
	TagEncryptedSecret    Tag = 0x24 // ducklake_encrypted_secret
	TagEncryptionKey      Tag = 0x25 // ducklake_encryption_key

	TagSecondaryIndex Tag = 0xFC // table_by_id (9-byte keys) and snapshot files (25-byte keys)
	TagInlinedRows    Tag = 0xFD // inlined rows: subtype byte, then the row's key
	TagCounter        Tag = 0xFE // counters: one id byte (and a table for per-table counters)
	TagSystem         Tag = 0xFF // system keys: an ASCII name (and for some, integers)
)

// knownTags lists every known tag in key order; tagNames is indexed by tag.
var (
	tagNames = [256]string{
		TagMetadata:                  "ducklake_metadata",
		TagSnapshot:                  "ducklake_snapshot",
		TagSnapshotChanges:           "ducklake_snapshot_changes",
		TagSchema:                    "ducklake_schema",
		TagTable:                     "ducklake_table",
		TagColumn:                    "ducklake_column",
		TagView:                      "ducklake_view",
		TagMacro:                     "ducklake_macro",
		TagMacroImpl:                 "ducklake_macro_impl",
		TagMacroParameters:           "ducklake_macro_parameters",
		TagDataFile:                  "ducklake_data_file",
		TagDeleteFile:                "ducklake_delete_file",
		TagFilesScheduledForDeletion: "ducklake_files_scheduled_for_deletion",
		TagInlinedDataTables:         "ducklake_inlined_data_tables",
		TagColumnMapping:             "ducklake_column_mapping",
		TagNameMapping:               "ducklake_name_mapping",
		TagTableStats:                "ducklake_table_stats",
		TagTableColumnStats:          "ducklake_table_column_stats",
		TagFileColumnStats:           "ducklake_file_column_stats",
		TagFileVariantStats:          "ducklake_file_variant_stats",
		TagPartitionInfo:             "ducklake_partition_info",
		TagPartitionColumn:           "ducklake_partition_column",
		TagFilePartitionValue:        "ducklake_file_partition_value",
		TagSortInfo:                  "ducklake_sort_info",
		TagSortExpression:            "ducklake_sort_expression",
		TagTag:                       "ducklake_tag",
		TagColumnTag:                 "ducklake_column_tag",
		TagSchemaVersions:            "ducklake_schema_versions",
		TagEncryptedSecret:           "ducklake_encrypted_secret",
		TagEncryptionKey:             "ducklake_encryption_key",
		// RockLake's own structures get a rocklake_ prefix so that they never
		// pass for DuckLake tables in reports and shard files.
		TagDataFileBySnapshot: "rocklake_data_file_by_snapshot",
		TagSnapshotLease:      "rocklake_snapshot_lease",
		TagExtensionSchema:    "rocklake_extension_schema",
		TagSecondaryIndex:     "rocklake_secondary_index",
		TagInlinedRows:        "rocklake_inlined_rows",
		TagCounter:            "rocklake_counters",
		TagSystem:             "rocklake_system",
	}
	knownTags = func() []Tag {
		var ts []Tag
		for t, n := range tagNames {
			if n != "" {
				ts = append(ts, Tag(t))
			}
		}
		return ts
	}()
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
// newer binary (or an older one: 0x1D-0x20 were RockLake's IVM tables until
// v0.22) and are carried or dropped as raw bytes, never interpreted.
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
