package format_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// TestRowRoundTrip round-trips the key and the value of every row type in
// both formats, and checks that re-encoding a decoded value is byte-exact.
func TestRowRoundTrip(t *testing.T) {
	for _, v := range versions {
		for _, tag := range format.KnownTags() {
			for _, seed := range []uint64{1, 977, 1 << 40} {
				row := sampleRow(t, v, tag, seed)
				key := sampleKey(v, tag, row, seed)

				kb, err := format.EncodeKey(v, key)
				if err != nil {
					t.Fatalf("%s %s: EncodeKey: %v", v, tag, err)
				}
				if back, err := format.DecodeKey(v, kb); err != nil || !keysEqual(back, key) {
					t.Fatalf("%s %s: key %x decoded to %+v, %v", v, tag, kb, back, err)
				}

				vb, err := format.EncodeValue(v, row)
				if err != nil {
					t.Fatalf("%s %s: EncodeValue: %v", v, tag, err)
				}
				back, err := format.DecodeValue(v, tag, vb)
				if err != nil {
					t.Fatalf("%s %s: DecodeValue: %v", v, tag, err)
				}
				if !proto.Equal(back, row) {
					t.Fatalf("%s %s: decoded %v, want %v", v, tag, back, row)
				}
				again, err := format.EncodeValue(v, back)
				if err != nil || !bytes.Equal(again, vb) {
					t.Fatalf("%s %s: re-encoded %x, first %x (%v)", v, tag, again, vb, err)
				}
			}
		}
	}
}

func TestNewRowTypes(t *testing.T) {
	for _, c := range []struct {
		v    format.Version
		tag  format.Tag
		want proto.Message
	}{
		{format.V1, format.TagSnapshot, &rocklakev1.Snapshot{}},
		{format.V2, format.TagSnapshot, &rocklakev2.Snapshot{}},
		{format.V1, format.TagDataFile, &rocklakev1.DataFile{}},
		{format.V2, format.TagDeleteFile, &rocklakev2.DeleteFile{}},
		{format.V1, format.TagNameIndex, &rocklakev1.NameIndex{}},
		{format.V2, format.TagFileDeletion, &rocklakev2.FileScheduledForDeletion{}},
		{format.V2, format.TagCommitLog, &rocklakev2.CommitLogEntry{}},
		{format.V1, format.TagCounter, &wrapperspb.UInt64Value{}},
		{format.V2, format.TagSystem, &wrapperspb.UInt64Value{}},
	} {
		got, err := format.NewRow(c.v, c.tag)
		if err != nil || got.ProtoReflect().Descriptor() != c.want.ProtoReflect().Descriptor() {
			t.Errorf("NewRow(%s, %s) = %T, %v; want %T", c.v, c.tag, got, err, c.want)
		}
	}
	if _, err := format.NewRow(format.V1, 0x0E); !errors.Is(err, format.ErrUnknownTag) {
		t.Errorf("NewRow(unknown tag): %v", err)
	}
	if _, err := format.NewRow(9, format.TagSnapshot); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Errorf("NewRow(v9): %v", err)
	}
}

// TestUnknownFieldsSurvive injects fields of numbers no message uses (a newer
// binary's additions) into every row type and checks that decode and
// re-encode keep their bytes (DESIGN 2.3).
func TestUnknownFieldsSurvive(t *testing.T) {
	var extra []byte
	extra = protowire.AppendTag(extra, 1000, protowire.VarintType)
	extra = protowire.AppendVarint(extra, 1<<40)
	extra = protowire.AppendTag(extra, 1001, protowire.BytesType)
	extra = protowire.AppendString(extra, "created_by: a newer binary")
	extra = protowire.AppendTag(extra, 536870911, protowire.Fixed64Type) // highest field number
	extra = protowire.AppendFixed64(extra, 0xDEADBEEF)

	for _, v := range versions {
		for _, tag := range format.KnownTags() {
			row := sampleRow(t, v, tag, 3)
			payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(row)
			if err != nil {
				t.Fatal(err)
			}
			value := format.EncodeEnvelope(v, append(payload, extra...))

			back, err := format.DecodeValue(v, tag, value)
			if err != nil {
				t.Fatalf("%s %s: %v", v, tag, err)
			}
			if got := back.ProtoReflect().GetUnknown(); !bytes.Equal(got, extra) {
				t.Fatalf("%s %s: unknown fields %x, want %x", v, tag, got, extra)
			}
			again, err := format.EncodeValue(v, back)
			if err != nil {
				t.Fatal(err)
			}
			out, err := format.DecodeEnvelope(v, again)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Contains(out, extra) {
				t.Fatalf("%s %s: re-encoded payload %x lost unknown fields %x", v, tag, out, extra)
			}
			if !bytes.Equal(again, value) {
				t.Fatalf("%s %s: re-encoded %x, want %x", v, tag, again, value)
			}
		}
	}
}

// TestNullIsNotZero: an optional column set to its zero value (0, "", false)
// must stay distinct from NULL through encode and decode.
func TestNullIsNotZero(t *testing.T) {
	zero := &rocklakev2.DataFile{DataFileId: 1, TableId: 2, EndSnapshot: proto.Uint64(0), FooterSize: proto.Int64(0),
		Path: proto.String(""), PathIsRelative: proto.Bool(false)}
	b, err := format.EncodeValue(format.V2, zero)
	if err != nil {
		t.Fatal(err)
	}
	m, err := format.DecodeValue(format.V2, format.TagDataFile, b)
	if err != nil {
		t.Fatal(err)
	}
	got := m.(*rocklakev2.DataFile)
	if got.EndSnapshot == nil || got.FooterSize == nil || got.Path == nil || got.PathIsRelative == nil {
		t.Errorf("zero values came back NULL: %v", got)
	}
	if got.PartitionId != nil || got.EncryptionKey != nil || got.MappingId != nil {
		t.Errorf("NULLs came back set: %v", got)
	}
}

func TestEncodeValueRejectsOtherFormatsMessages(t *testing.T) {
	cases := []struct {
		v   format.Version
		msg proto.Message
	}{
		{format.V2, &rocklakev1.Snapshot{}},
		{format.V1, &rocklakev2.DataFile{}},
		{format.V1, &wrapperspb.StringValue{}},
		{format.V2, nil},
	}
	for _, c := range cases {
		if _, err := format.EncodeValue(c.v, c.msg); !errors.Is(err, format.ErrWrongMessage) {
			t.Errorf("EncodeValue(%s, %T): %v, want ErrWrongMessage", c.v, c.msg, err)
		}
	}
	if _, err := format.EncodeValue(0, &rocklakev1.Snapshot{}); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Errorf("EncodeValue(v0): %v", err)
	}
}

func TestDecodeValueRejects(t *testing.T) {
	row, _ := format.EncodeValue(format.V1, &rocklakev1.Table{TableId: 1, TableName: proto.String("t")})
	cases := []struct {
		name  string
		v     format.Version
		tag   format.Tag
		value []byte
		want  error
	}{
		{"unknown tag", format.V1, 0x0E, row, format.ErrUnknownTag},
		{"other format's envelope", format.V2, format.TagTable, row, format.ErrEnvelopeVersion},
		{"truncated varint", format.V1, format.TagTable, format.EncodeEnvelope(format.V1, []byte{0x08}), format.ErrBadRow},
		{"length past the end", format.V1, format.TagTable, format.EncodeEnvelope(format.V1, []byte{0x32, 5, 'a'}), format.ErrBadRow},
		{"invalid UTF-8 string", format.V1, format.TagTable, format.EncodeEnvelope(format.V1, []byte{0x32, 1, 0xFF}), format.ErrBadRow},
		{"field number 0", format.V2, format.TagTable, format.EncodeEnvelope(format.V2, []byte{0x00, 0x01}), format.ErrBadRow},
	}
	for _, c := range cases {
		if m, err := format.DecodeValue(c.v, c.tag, c.value); !errors.Is(err, c.want) {
			t.Errorf("%s: DecodeValue = %v, %v; want %v", c.name, m, err, c.want)
		}
	}
}

// TestV2SnapshotTime pins DESIGN 2.2 item 4: a new field number for the
// integer time, the old one reserved, so a format-1 payload read as format 2
// keeps its string as an unknown field instead of misreading it.
func TestV2SnapshotTime(t *testing.T) {
	d1 := (&rocklakev1.Snapshot{}).ProtoReflect().Descriptor()
	d2 := (&rocklakev2.Snapshot{}).ProtoReflect().Descriptor()
	old := d1.Fields().ByName("snapshot_time")
	if old == nil || old.Number() != 2 || old.Kind() != protoreflect.StringKind {
		t.Fatalf("v1 snapshot_time: %v", old)
	}
	if d2.Fields().ByName("snapshot_time") != nil || d2.Fields().ByNumber(2) != nil {
		t.Fatal("v2 Snapshot still defines field 2")
	}
	if !d2.ReservedRanges().Has(2) || !d2.ReservedNames().Has("snapshot_time") {
		t.Error("v2 Snapshot does not reserve field 2 and its name")
	}
	micros := d2.Fields().ByName("snapshot_time_micros")
	if micros == nil || micros.Kind() != protoreflect.Int64Kind || d1.Fields().ByNumber(micros.Number()) != nil {
		t.Fatalf("v2 snapshot_time_micros must be int64 under a number v1 never used: %v", micros)
	}

	payload, _ := proto.Marshal(&rocklakev1.Snapshot{SnapshotId: 4, SnapshotTime: proto.String("2025-05-27 10:00:00+00")})
	m, err := format.DecodeValue(format.V2, format.TagSnapshot, format.EncodeEnvelope(format.V2, payload))
	if err != nil {
		t.Fatal(err)
	}
	s := m.(*rocklakev2.Snapshot)
	if s.SnapshotId != 4 || s.SnapshotTimeMicros != nil || len(s.ProtoReflect().GetUnknown()) == 0 {
		t.Errorf("v1 payload as v2: %v, unknown %x", s, s.ProtoReflect().GetUnknown())
	}
}

// duckLakeColumns are the columns of the DuckLake 0.3 specification's tables
// (docs/0.3/specification/tables), in their order; each message must have
// exactly these fields, numbered 1, 2, ... in this order.
var duckLakeColumns = map[format.Tag][]string{
	format.TagMetadata:         {"key", "value", "scope", "scope_id"},
	format.TagSnapshot:         {"snapshot_id", "snapshot_time", "schema_version", "next_catalog_id", "next_file_id"},
	format.TagSnapshotChanges:  {"snapshot_id", "changes_made", "author", "commit_message", "commit_extra_info"},
	format.TagSchema:           {"schema_id", "schema_uuid", "begin_snapshot", "end_snapshot", "schema_name", "path", "path_is_relative"},
	format.TagTable:            {"table_id", "table_uuid", "begin_snapshot", "end_snapshot", "schema_id", "table_name", "path", "path_is_relative"},
	format.TagView:             {"view_id", "view_uuid", "begin_snapshot", "end_snapshot", "schema_id", "view_name", "dialect", "sql", "column_aliases"},
	format.TagTag:              {"object_id", "begin_snapshot", "end_snapshot", "key", "value"},
	format.TagColumnTag:        {"table_id", "column_id", "begin_snapshot", "end_snapshot", "key", "value"},
	format.TagDataFile:         {"data_file_id", "table_id", "begin_snapshot", "end_snapshot", "file_order", "path", "path_is_relative", "file_format", "record_count", "file_size_bytes", "footer_size", "row_id_start", "partition_id", "encryption_key", "partial_file_info", "mapping_id"},
	format.TagDeleteFile:       {"delete_file_id", "table_id", "begin_snapshot", "end_snapshot", "data_file_id", "path", "path_is_relative", "format", "delete_count", "file_size_bytes", "footer_size", "encryption_key"},
	format.TagColumn:           {"column_id", "begin_snapshot", "end_snapshot", "table_id", "column_order", "column_name", "column_type", "initial_default", "default_value", "nulls_allowed", "parent_column"},
	format.TagTableStats:       {"table_id", "record_count", "next_row_id", "file_size_bytes"},
	format.TagTableColumnStats: {"table_id", "column_id", "contains_null", "contains_nan", "min_value", "max_value", "extra_stats"},
	format.TagFileDeletion:     {"data_file_id", "path", "path_is_relative", "schedule_start"},
}

// notNull are the columns that are not proto3 optional: the specification's
// NOT NULL and primary key columns, the key components, begin_snapshot.
var notNull = map[string]bool{
	"key": true, "value": true, // ducklake_metadata's NOT NULL; ducklake_tag's key
	"snapshot_id": true, "schema_id": true, "table_id": true, "view_id": true, "object_id": true,
	"column_id": true, "data_file_id": true, "delete_file_id": true, "begin_snapshot": true,
}

func TestMessagesMatchDuckLakeSpec(t *testing.T) {
	for tag, cols := range duckLakeColumns {
		d := mustRow(t, format.V1, tag).ProtoReflect().Descriptor()
		fields := d.Fields()
		var names []string
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			names = append(names, string(fd.Name()))
			if int(fd.Number()) != i+1 {
				t.Errorf("%s.%s is field %d, want %d", d.FullName(), fd.Name(), fd.Number(), i+1)
			}
			// Which columns may be NULL, by table: tag values and the
			// schema_id of tables and views are references, not keys.
			wantOptional := !notNull[string(fd.Name())]
			switch {
			case tag == format.TagTag || tag == format.TagColumnTag:
				wantOptional = fd.Name() == "end_snapshot" || fd.Name() == "value"
			case (tag == format.TagTable || tag == format.TagView) && fd.Name() == "schema_id",
				tag == format.TagDeleteFile && fd.Name() == "data_file_id":
				wantOptional = true
			}
			if fd.HasPresence() != wantOptional {
				t.Errorf("%s.%s: optional = %v, want %v", d.FullName(), fd.Name(), fd.HasPresence(), wantOptional)
			}
		}
		if !slices.Equal(names, cols) {
			t.Errorf("%s fields %v, want the spec's %v", d.FullName(), names, cols)
		}
	}
}

// TestV2MessagesEqualV1 checks that format 2 changed nothing but the snapshot
// time: same messages, same field numbers, names, kinds and presence.
func TestV2MessagesEqualV1(t *testing.T) {
	for _, tag := range format.KnownTags() {
		d1 := mustRow(t, format.V1, tag).ProtoReflect().Descriptor()
		d2 := mustRow(t, format.V2, tag).ProtoReflect().Descriptor()
		if d1.Name() != d2.Name() {
			t.Errorf("%s: v1 %s, v2 %s", tag, d1.Name(), d2.Name())
		}
		if tag == format.TagSnapshot {
			continue // TestV2SnapshotTime
		}
		if a, b := describe(d1), describe(d2); !slices.Equal(a, b) {
			t.Errorf("%s: v1 fields %v, v2 fields %v", tag, a, b)
		}
	}
}

func describe(d protoreflect.MessageDescriptor) []string {
	var out []string
	for i := 0; i < d.Fields().Len(); i++ {
		fd := d.Fields().Get(i)
		s := fmt.Sprintf("%d:%s:%s:list=%v:optional=%v", fd.Number(), fd.Name(), fd.Kind(), fd.IsList(), fd.HasPresence())
		if fd.Message() != nil {
			s += fmt.Sprintf("%v", describe(fd.Message()))
		}
		if fd.Enum() != nil {
			for j := 0; j < fd.Enum().Values().Len(); j++ {
				ev := fd.Enum().Values().Get(j)
				s += fmt.Sprintf(":%s=%d", ev.Name(), ev.Number())
			}
		}
		out = append(out, s)
	}
	return out
}

func TestProtoJSON(t *testing.T) {
	for _, v := range versions {
		for _, tag := range format.KnownTags() {
			row := sampleRow(t, v, tag, 5)
			j, err := protojson.Marshal(row)
			if err != nil {
				t.Fatalf("%s %s: %v", v, tag, err)
			}
			back := mustRow(t, v, tag)
			if err := protojson.Unmarshal(j, back); err != nil || !proto.Equal(back, row) {
				t.Fatalf("%s %s: protojson %s came back %v (%v)", v, tag, j, back, err)
			}
		}
	}
}

func mustRow(t *testing.T, v format.Version, tag format.Tag) proto.Message {
	t.Helper()
	m, err := format.NewRow(v, tag)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
