package format_test

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

func TestTagsMatchDesign(t *testing.T) {
	want := []struct {
		tag  format.Tag
		b    byte
		name string
	}{
		{format.TagMetadata, 0x01, "ducklake_metadata"},
		{format.TagSnapshot, 0x02, "ducklake_snapshot"},
		{format.TagSnapshotChanges, 0x03, "ducklake_snapshot_changes"},
		{format.TagSchema, 0x04, "ducklake_schema"},
		{format.TagTable, 0x05, "ducklake_table"},
		{format.TagView, 0x06, "ducklake_view"},
		{format.TagTag, 0x07, "ducklake_tag"},
		{format.TagColumnTag, 0x08, "ducklake_column_tag"},
		{format.TagDataFile, 0x09, "ducklake_data_file"},
		{format.TagDeleteFile, 0x0A, "ducklake_delete_file"},
		{format.TagColumn, 0x0B, "ducklake_column"},
		{format.TagTableStats, 0x0C, "ducklake_table_stats"},
		{format.TagTableColumnStats, 0x0D, "ducklake_table_column_stats"},
		{format.TagNameIndex, 0x80, "rocklake_name_index"},
		{format.TagFileDeletion, 0x81, "rocklake_files_scheduled_for_deletion"},
		{format.TagCommitLog, 0xFD, "rocklake_commit_log"},
		{format.TagCounter, 0xFE, "rocklake_counter"},
		{format.TagSystem, 0xFF, "rocklake_system"},
	}
	known := format.KnownTags()
	if len(known) != len(want) {
		t.Fatalf("KnownTags has %d tags, want %d", len(known), len(want))
	}
	for i, w := range want {
		if byte(w.tag) != w.b || known[i] != w.tag {
			t.Errorf("tag %s: byte 0x%02X, KnownTags[%d] = %s; want 0x%02X", w.name, byte(w.tag), i, known[i], w.b)
		}
		if !w.tag.Known() || w.tag.Name() != w.name || w.tag.String() != w.name {
			t.Errorf("tag 0x%02X: Known %v, Name %q, String %q; want %q", w.b, w.tag.Known(), w.tag.Name(), w.tag.String(), w.name)
		}
		if got, ok := format.TagByName(w.name); !ok || got != w.tag {
			t.Errorf("TagByName(%q) = %s, %v", w.name, got, ok)
		}
	}
}

func TestUnknownTags(t *testing.T) {
	n := 0
	for b := 0; b < 256; b++ {
		tag := format.Tag(b)
		if tag.Known() {
			n++
			continue
		}
		if tag.Name() != "" {
			t.Errorf("unknown tag 0x%02X has name %q", b, tag.Name())
		}
	}
	if n != len(format.KnownTags()) {
		t.Errorf("%d tags report Known, KnownTags has %d", n, len(format.KnownTags()))
	}
	if got := format.Tag(0x0E).String(); got != "tag 0x0E" {
		t.Errorf("String of unknown tag = %q", got)
	}
	if _, ok := format.TagByName("ducklake_partition_info"); ok {
		t.Error("TagByName found a table that has no tag")
	}
}

func TestKnownTagsIsACopy(t *testing.T) {
	format.KnownTags()[0] = 0x42
	if format.KnownTags()[0] != format.TagMetadata {
		t.Fatal("KnownTags exposes its backing array")
	}
}
