package migration_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// snapshotText is a snapshot_time as RockLake writes it (chrono's
// to_rfc3339), and snapshotMicros the same instant in microseconds: the
// nanoseconds below a microsecond are truncated.
const snapshotText = "2025-01-06T09:00:37.123456789+00:00"

var snapshotMicros = time.Date(2025, 1, 6, 9, 0, 37, 123456000, time.UTC).UnixMicro()

// fill sets every field of a row to a value derived from its number, so
// that a lost or misplaced field shows. Integers stay below 256, so that
// they fit u8 key components taken from the row (use seeds from 1 to 24 for
// non-zero values).
func fill(m protoreflect.Message, seed uint64) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		n := (seed*10 + uint64(fd.Number())%10) % 256
		if fd.IsList() {
			l := m.Mutable(fd).List()
			e := l.NewElement()
			fill(e.Message(), seed+1)
			l.Append(e)
			continue
		}
		switch fd.Kind() {
		case protoreflect.Uint64Kind:
			m.Set(fd, protoreflect.ValueOfUint64(n))
		case protoreflect.Uint32Kind:
			m.Set(fd, protoreflect.ValueOfUint32(uint32(n)))
		case protoreflect.Int64Kind:
			m.Set(fd, protoreflect.ValueOfInt64(-int64(n)))
		case protoreflect.Int32Kind:
			m.Set(fd, protoreflect.ValueOfInt32(int32(n)))
		case protoreflect.BoolKind:
			m.Set(fd, protoreflect.ValueOfBool(true))
		case protoreflect.StringKind:
			s := fmt.Sprintf("%s-%d", fd.Name(), n)
			if fd.Name() == "snapshot_time" {
				s = snapshotText
			}
			m.Set(fd, protoreflect.ValueOfString(s))
		case protoreflect.BytesKind:
			m.Set(fd, protoreflect.ValueOfBytes([]byte{byte(n), 0, 0xFF}))
		case protoreflect.MessageKind:
			fill(m.Mutable(fd).Message(), seed)
		default:
			panic("fill: field kind " + fd.Kind().String())
		}
	}
}

// rowShapes returns one Key (Tag and Name) per key shape whose value is a
// protobuf row, over every known tag.
func rowShapes() []format.Key {
	var out []format.Key
	for _, k := range format.Shapes() {
		if format.ValueKindOf(k) == format.ValueRow {
			out = append(out, k)
		}
	}
	return out
}

// v1Record makes a format-1 record of the shape of k whose key agrees with
// its row, as RockLake writes it: components are the row's same-named
// fields, tag_key_hash is RockLake's hash of the row's tag key.
func v1Record(t *testing.T, shape format.Key, seed uint64, unknown []byte) ndjson.Record {
	t.Helper()
	row, err := format.NewRow(format.V1, shape)
	if err != nil {
		t.Fatal(err)
	}
	m := row.ProtoReflect()
	fill(m, seed)
	k := format.Key{Tag: shape.Tag, Name: shape.Name}
	for _, f := range format.Fields(shape.Tag, shape.Name) {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(f.Name))
		switch {
		case f.Name == "tag_key_hash":
			tagKey := m.Get(m.Descriptor().Fields().ByName("tag_key")).String()
			k.Parts = append(k.Parts, format.TagKeyHash(format.V1, tagKey))
		case f.Str && fd != nil && fd.Kind() == protoreflect.StringKind:
			k.Strs = append(k.Strs, m.Get(fd).String())
		case f.Str:
			k.Strs = append(k.Strs, fmt.Sprintf("%s-%d", f.Name, seed))
		case fd != nil && (fd.Kind() == protoreflect.Uint64Kind || fd.Kind() == protoreflect.Uint32Kind):
			k.Parts = append(k.Parts, m.Get(fd).Uint())
		default:
			k.Parts = append(k.Parts, seed+uint64(len(k.Parts)))
		}
	}
	if len(unknown) > 0 {
		m.SetUnknown(unknown)
	}
	key, err := format.EncodeKey(format.V1, k)
	if err != nil {
		t.Fatal(err)
	}
	value, err := format.EncodeValue(format.V1, k, row)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ndjson.NewRecord(format.V1, key, value)
	if err != nil {
		t.Fatalf("record %s: %v", shape.Tag, err)
	}
	return rec
}

func records(t *testing.T, rec ndjson.Record) ([]ndjson.Record, error) {
	t.Helper()
	path, err := migration.Path(format.V1, format.V2)
	if err != nil {
		t.Fatal(err)
	}
	return migration.Records(rec, path, migration.Options{})
}

func v1ToV2(t *testing.T, rec ndjson.Record) ndjson.Record {
	t.Helper()
	out, err := records(t, rec)
	if err != nil {
		t.Fatalf("transform %s: %v", rec.Tag(), err)
	}
	if len(out) != 1 {
		t.Fatalf("transform %s gave %d records", rec.Tag(), len(out))
	}
	return out[0]
}

// Every row of every shape keeps every field and its unknown fields, under
// the same key but for the tag-key hash, in format 2's key and envelope.
func TestV1ToV2EveryRowType(t *testing.T) {
	unknown := protowire.AppendTag(nil, 900, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "added by a newer binary")
	for _, shape := range rowShapes() {
		t.Run(fmt.Sprintf("%s/%s", shape.Tag, shape.Name), func(t *testing.T) {
			in := v1Record(t, shape, 7, unknown)
			out := v1ToV2(t, in)
			if out.Version() != format.V2 || out.Tag() != shape.Tag || out.Key().Name != shape.Name {
				t.Fatalf("out is %s %s %q", out.Version(), out.Tag(), out.Key().Name)
			}
			// The key: the same components, but for the tag-key hash,
			// which format 2 computes from the row's tag key.
			want := in.Key()
			want.Parts = slices.Clone(want.Parts)
			for i, f := range format.Fields(shape.Tag, shape.Name) {
				if f.Name == "tag_key_hash" {
					tagKey := in.Row().ProtoReflect().Get(in.Row().ProtoReflect().Descriptor().Fields().ByName("tag_key")).String()
					want.Parts[slices.Index(intFields(shape), i)] = format.TagKeyHash(format.V2, tagKey)
				}
			}
			if !reflect.DeepEqual(out.Key(), want) {
				t.Fatalf("v2 key %+v, want %+v", out.Key(), want)
			}
			key, value := out.Raw()
			if wantKey, err := format.EncodeKey(format.V2, want); err != nil || !bytes.Equal(key, wantKey) {
				t.Fatalf("v2 key bytes %x, want %x (%v)", key, wantKey, err)
			}
			// The value is in the checksummed envelope and decodes as format 2.
			if value[0] != 0x02 {
				t.Fatalf("v2 value %x lacks the format-2 envelope", value)
			}
			row, err := format.DecodeValue(format.V2, out.Key(), value)
			if err != nil {
				t.Fatalf("v2 value: %v", err)
			}
			if !proto.Equal(row, out.Row()) {
				t.Fatalf("stored row %v, record row %v", row, out.Row())
			}
			if !bytes.Equal(out.Unknown(), unknown) {
				t.Fatalf("unknown fields = %x, want %x", out.Unknown(), unknown)
			}
			_, v1value := in.Raw()
			p1, _ := format.DecodeEnvelope(format.V1, v1value)
			p2, _ := format.DecodeEnvelope(format.V2, value)
			if shape.Tag != format.TagSnapshot {
				// Every other row's payload moves byte for byte.
				if !bytes.Equal(p1, p2) {
					t.Fatalf("payload changed:\n v1 %x\n v2 %x", p1, p2)
				}
				return
			}
			// The snapshot keeps every field by number, but for the time.
			s1, s2 := in.Row().(*rocklakev1.Snapshot), out.Row().(*rocklakev2.Snapshot)
			if s2.GetSnapshotTimeMicros() != snapshotMicros || s2.SnapshotTimeMicros == nil {
				t.Fatalf("snapshot_time %q became %v micros, want %d", s1.GetSnapshotTime(), s2.SnapshotTimeMicros, snapshotMicros)
			}
			n := 0
			s1.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
				n++
				if fd.Name() == "snapshot_time" {
					return true
				}
				fd2 := s2.ProtoReflect().Descriptor().Fields().ByNumber(fd.Number())
				if fd2 == nil || fd2.Name() != fd.Name() || !s2.ProtoReflect().Get(fd2).Equal(v) {
					t.Errorf("snapshot field %s = %v, v2 has %v", fd.Name(), v, s2.ProtoReflect().Get(fd2))
				}
				return true
			})
			if n != s1.ProtoReflect().Descriptor().Fields().Len() {
				t.Fatalf("the test snapshot sets %d of %d fields", n, s1.ProtoReflect().Descriptor().Fields().Len())
			}
		})
	}
}

// intFields maps the index of each integer component among the shape's
// fields to its index in Key.Parts: intFields(shape)[j] is the field index
// of Parts[j].
func intFields(shape format.Key) []int {
	var idx []int
	for i, f := range format.Fields(shape.Tag, shape.Name) {
		if !f.Str {
			idx = append(idx, i)
		}
	}
	return idx
}

// Tags and column tags are re-keyed by SHA-256 of the tag key read from the
// row, whatever format-1 hash the key held.
func TestTagKeysAreRehashed(t *testing.T) {
	sha := func(s string) uint64 {
		sum := sha256.Sum256([]byte(s))
		return binary.BigEndian.Uint64(sum[:8])
	}
	for _, tc := range []struct {
		key  format.Key
		row  proto.Message
		want []uint64
	}{
		{format.Key{Tag: format.TagTag, Parts: []uint64{12, format.TagKeyHash(format.V1, "owner"), 3}},
			&rocklakev1.Tag{ObjectId: 12, TagKey: "owner", TagValue: "team-a", BeginSnapshot: 3},
			[]uint64{12, sha("owner"), 3}},
		// A hash another Rust build computed: the row's tag key decides.
		{format.Key{Tag: format.TagTag, Parts: []uint64{12, 0xDEADBEEF, 4}},
			&rocklakev1.Tag{ObjectId: 12, TagKey: "comment", TagValue: "x", BeginSnapshot: 4},
			[]uint64{12, sha("comment"), 4}},
		{format.Key{Tag: format.TagColumnTag, Parts: []uint64{12, 1, format.TagKeyHash(format.V1, "pii"), 3}},
			&rocklakev1.ColumnTag{TableId: 12, ColumnId: 1, TagKey: "pii", TagValue: "false", BeginSnapshot: 3},
			[]uint64{12, 1, sha("pii"), 3}},
		{format.Key{Tag: format.TagColumnTag, Parts: []uint64{12, 2, format.TagKeyHash(format.V1, "é"), 3}},
			&rocklakev1.ColumnTag{TableId: 12, ColumnId: 2, TagKey: "é", BeginSnapshot: 3},
			[]uint64{12, 2, sha("é"), 3}},
	} {
		wantRekeyed(t, v1ToV2(t, rowRecord(t, format.V1, tc.key, tc.row)), tc.key, tc.row, tc.want)
	}
}

// Keys keep their shape, with compact integers: a data file stays under
// its table's prefix.
func TestKeysBecomeCompact(t *testing.T) {
	k := format.Key{Tag: format.TagDataFile, Parts: []uint64{9, 0x1234}}
	row := &rocklakev1.DataFile{DataFileId: 0x1234, TableId: 9, Path: "f.parquet"}
	out := v1ToV2(t, rowRecord(t, format.V1, k, row))
	got, _ := out.Raw()
	if want := []byte{0x0B, 0x01, 0x09, 0x02, 0x12, 0x34}; !bytes.Equal(got, want) {
		t.Fatalf("v2 data file key %x, want %x", got, want)
	}
	prefix, _ := format.KeyPrefix(format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{9}})
	if !bytes.HasPrefix(got, prefix) {
		t.Fatalf("v2 key %x is not under table 9's prefix %x", got, prefix)
	}
	// Strings and u8 scopes keep their encoding.
	k = format.Key{Tag: format.TagMetadata, Parts: []uint64{2, 300}, Strs: []string{"data_path"}}
	got, _ = v1ToV2(t, rowRecord(t, format.V1, k, &rocklakev1.Metadata{Key: "data_path", Value: "s3://x/"})).Raw()
	if want := append([]byte{0x01, 0x02, 0x02, 0x01, 0x2C, 0x00, 0x09}, "data_path"...); !bytes.Equal(got, want) {
		t.Fatalf("v2 metadata key %x, want %x", got, want)
	}
}

func snapshotRecord(t *testing.T, id uint64, text string) ndjson.Record {
	t.Helper()
	k := format.Key{Tag: format.TagSnapshot, Parts: []uint64{id}}
	row := &rocklakev1.Snapshot{SnapshotId: id, SchemaVersion: 3, SnapshotTime: text, NextFileId: proto.Uint64(8)}
	return rowRecord(t, format.V1, k, row)
}

func TestSnapshotTimeBecomesMicros(t *testing.T) {
	for text, want := range map[string]time.Time{
		// chrono's to_rfc3339, as RockLake writes it: 0, 3, 6 or 9 digits.
		snapshotText:                          time.Date(2025, 1, 6, 9, 0, 37, 123456000, time.UTC),
		"2025-01-06T09:00:37.123456+00:00":    time.Date(2025, 1, 6, 9, 0, 37, 123456000, time.UTC),
		"2025-01-06T09:00:37.500+00:00":       time.Date(2025, 1, 6, 9, 0, 37, 500000000, time.UTC),
		"2025-01-06T09:00:37+00:00":           time.Date(2025, 1, 6, 9, 0, 37, 0, time.UTC),
		"2025-03-04T05:06:07.5+02:00":         time.Date(2025, 3, 4, 3, 6, 7, 500000000, time.UTC),
		"2025-03-04T05:06:07Z":                time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC),
		"1970-01-01T00:00:00.000001+00:00":    time.Unix(0, 1000).UTC(),
		"1969-12-31T23:59:59.000001+00:00":    time.Unix(-1, 1000).UTC(),
		"2025-03-04 05:06:07.123456+00":       time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC), // DuckDB's TIMESTAMPTZ text
		"2024-12-31 23:59:59":                 time.Date(2024, 12, 31, 23, 59, 59, 0, time.UTC),
		"2025-01-06T09:00:37.999999999-05:00": time.Date(2025, 1, 6, 14, 0, 37, 999999000, time.UTC),
	} {
		out := v1ToV2(t, snapshotRecord(t, 5, text))
		s2 := out.Row().(*rocklakev2.Snapshot)
		if s2.SnapshotTimeMicros == nil || *s2.SnapshotTimeMicros != want.UnixMicro() {
			t.Fatalf("%q → %v micros, want %d", text, s2.SnapshotTimeMicros, want.UnixMicro())
		}
		if s2.SnapshotId != 5 || s2.SchemaVersion != 3 || s2.GetNextFileId() != 8 {
			t.Fatalf("%q: other fields lost: %v", text, s2)
		}
		// Field 3 is not written in format 2: not as a field, not as an
		// unknown one.
		if len(out.Unknown()) != 0 {
			t.Fatalf("%q: the v1 text survived as unknown field %x", text, out.Unknown())
		}
		wantWithoutField(t, out, 3, fmt.Sprintf("%q", text))
	}
	// No time in format 1, none in format 2: nothing is invented.
	if s2 := v1ToV2(t, snapshotRecord(t, 6, "")).Row().(*rocklakev2.Snapshot); s2.SnapshotTimeMicros != nil {
		t.Fatalf("a snapshot without a time got %d micros", *s2.SnapshotTimeMicros)
	}
	for _, bad := range []string{"yesterday", "2025-13-01T00:00:00+00:00", "1736154037"} {
		if _, err := records(t, snapshotRecord(t, 7, bad)); err == nil || !strings.Contains(err.Error(), bad) {
			t.Fatalf("snapshot_time %q: err = %v, want an error naming it", bad, err)
		}
	}
}

func TestUnknownFieldCollisionIsRefused(t *testing.T) {
	// Field 100 is unknown to format 1's snapshot but is snapshot_time_micros
	// in format 2: carrying it would turn someone's data into a time.
	unknown := protowire.AppendTag(nil, 100, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 77)
	rec := v1Record(t, format.Key{Tag: format.TagSnapshot}, 1, unknown)
	_, err := records(t, rec)
	var coll *migration.FieldCollisionError
	if !errors.As(err, &coll) || !errors.Is(err, migration.ErrFieldCollision) {
		t.Fatalf("err = %v, want FieldCollisionError", err)
	}
	key, _ := rec.Raw()
	if coll.Number != 100 || coll.Field != "snapshot_time_micros" || !bytes.Equal(coll.Key, key) || coll.To != format.V2 {
		t.Fatalf("collision = %+v", coll)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%x", key)) || !strings.Contains(msg, "snapshot_time_micros") ||
		!strings.Contains(msg, "100") {
		t.Fatalf("message %q does not name key, number and field", msg)
	}
	// A path with a collision writes nothing: Transform stops on it.
	_, _, err = transform(t, shard(t, format.V1, v1Record(t, format.Key{Tag: format.TagTable}, 1, nil), rec), migration.Options{})
	if !errors.Is(err, migration.ErrFieldCollision) {
		t.Fatalf("transform: err = %v, want FieldCollisionError", err)
	}
}

// A field number both formats reserve for the same retired field (data
// files' field 7, RockLake's legacy snapshot_id until v0.24) means the same
// in both: rows written before v0.24 still carry it, and it is carried.
func TestLegacyReservedFieldIsCarried(t *testing.T) {
	legacy := protowire.AppendTag(nil, 7, protowire.VarintType)
	legacy = protowire.AppendVarint(legacy, 3)
	for _, shape := range []format.Key{{Tag: format.TagDataFile}, {Tag: format.TagDataFileBySnapshot}} {
		in := v1Record(t, shape, 2, legacy)
		out := v1ToV2(t, in)
		if !bytes.Equal(out.Unknown(), legacy) {
			t.Fatalf("%s: unknown fields %x, want the legacy %x", shape.Tag, out.Unknown(), legacy)
		}
		if !sameWire(t, out.Row(), in.Row()) {
			t.Fatalf("%s: row %v became %v", shape.Tag, in.Row(), out.Row())
		}
	}
}

// Counters, system keys and the secondary index's table_by_id: the version
// becomes 2 in the format-1 envelope, enveloped values get format 2's
// envelope, raw values and keys of no known shape are carried unchanged.
func TestSystemAndCounterKeys(t *testing.T) {
	v1Counter := func(n uint64) []byte { return format.EncodeCounter(format.V1, n) }
	v2Counter := func(n uint64) []byte { return format.EncodeCounter(format.V2, n) }
	nonce := []byte{0x9C, 0x00, 0x11, 0xFF, 0x01, 0x02, 0x03, 0x04}
	audit := []byte(`{"snapshot_id":9,"sql":"INSERT INTO t VALUES (1)"}`)
	for _, tc := range []struct {
		name             string
		key, value       []byte
		wantKey, wantVal []byte
	}{
		{"catalog-format-version", format.FormatVersionKey(), format.EncodeFormatVersion(1),
			format.FormatVersionKey(), []byte{0x01, 'S', 'D', 'K', 'V', 0, 0, 0, 2}},
		{"writer-epoch", format.SystemKey(format.SystemWriterEpoch), v1Counter(17),
			format.SystemKey(format.SystemWriterEpoch), v2Counter(17)},
		{"retain-from", format.SystemKey(format.SystemRetainFrom), v1Counter(0),
			format.SystemKey(format.SystemRetainFrom), v2Counter(0)},
		{"writer-nonce (raw)", format.SystemKey(format.SystemWriterNonce), nonce,
			format.SystemKey(format.SystemWriterNonce), nonce},
		{"endpoint (raw)", format.SystemKey(format.SystemEndpoint), []byte("127.0.0.1:5433"),
			format.SystemKey(format.SystemEndpoint), []byte("127.0.0.1:5433")},
		{"key-encoding-v020-migrated (raw)", format.SystemKey(format.SystemKeyEncodingMigrated), []byte{1},
			format.SystemKey(format.SystemKeyEncodingMigrated), []byte{1}},
		{"audit", append(format.SystemKey(format.SystemAudit), 0, 0, 0, 0, 0, 0, 0, 9), format.EncodeEnvelope(format.V1, audit),
			append(format.SystemKey(format.SystemAudit), 1, 9), format.EncodeEnvelope(format.V2, audit)},
		{"next_snapshot_id", []byte{0xFE, 0x01}, v1Counter(42), []byte{0xFE, 0x01}, v2Counter(42)},
		{"next_file_id", format.CounterKey(format.V1, format.NameNextFileID), v1Counter(123456),
			format.CounterKey(format.V2, format.NameNextFileID), v2Counter(123456)},
		{"next_excision_seq", []byte{0xFE, 0x05}, v1Counter(3), []byte{0xFE, 0x05}, v2Counter(3)},
		{"next_column_id[9]", []byte{0xFE, 0x10, 0, 0, 0, 0, 0, 0, 0, 9}, v1Counter(6), []byte{0xFE, 0x10, 1, 9}, v2Counter(6)},
		{"next_row_id[0]", []byte{0xFE, 0x11, 0, 0, 0, 0, 0, 0, 0, 0}, v1Counter(1 << 40), []byte{0xFE, 0x11, 0}, v2Counter(1 << 40)},
		{"table_by_id[7]", []byte{0xFC, 0, 0, 0, 0, 0, 0, 0, 7}, v1Counter(2), []byte{0xFC, 1, 7}, v2Counter(2)},
		// Keys of no known shape: a newer binary's, carried unchanged.
		{"future-flag (raw string)", format.SystemKey("future-flag"), []byte("enabled"),
			format.SystemKey("future-flag"), []byte("enabled")},
		{"future-flag (enveloped)", format.SystemKey("future-counter"), v1Counter(5),
			format.SystemKey("future-counter"), v1Counter(5)},
		{"unknown counter id", []byte{0xFE, 0x42}, v1Counter(9), []byte{0xFE, 0x42}, v1Counter(9)},
		{"unknown per-table counter", []byte{0xFE, 0x12, 0, 0, 0, 0, 0, 0, 0, 9}, v1Counter(9),
			[]byte{0xFE, 0x12, 0, 0, 0, 0, 0, 0, 0, 9}, v1Counter(9)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := ndjson.NewRecord(format.V1, tc.key, tc.value)
			if err != nil {
				t.Fatal(err)
			}
			out := v1ToV2(t, rec)
			k, v := out.Raw()
			if !bytes.Equal(k, tc.wantKey) || !bytes.Equal(v, tc.wantVal) {
				t.Fatalf("%x = %x became %x = %x, want %x = %x", tc.key, tc.value, k, v, tc.wantKey, tc.wantVal)
			}
			if out.Version() != format.V2 || rec.Key().Raw != nil && !bytes.Equal(out.Key().Raw, rec.Key().Raw) {
				t.Fatalf("record %s %+v, from %+v", out.Version(), out.Key(), rec.Key())
			}
		})
	}
}

func TestPaths(t *testing.T) {
	if p, err := migration.Path(format.V1, format.V1); err != nil || len(p) != 0 {
		t.Fatalf("v1→v1 = %v, %v", p, err)
	}
	if p, err := migration.Path(format.V1, format.V2); err != nil || len(p) != 1 || p[0].From != format.V1 || p[0].To != format.V2 {
		t.Fatalf("v1→v2 = %v, %v", p, err)
	}
	for _, c := range [][2]format.Version{{1, 3}, {3, 1}, {99, 2}, {0, 1}, {2, 0}} {
		if _, err := migration.Path(c[0], c[1]); !errors.Is(err, migration.ErrNoPath) {
			t.Fatalf("%v→%v: err = %v, want ErrNoPath", c[0], c[1], err)
		}
	}
	p, _ := migration.Path(format.V1, format.V2)
	in := map[string]uint64{"ducklake_data_file": 10, "ducklake_snapshot": 2, "rocklake_counters": 5, "rocklake_system": 4}
	if out := migration.ExpectCounts(p, in); fmt.Sprint(out) != fmt.Sprint(in) {
		t.Fatalf("expected counts = %v, want %v (v1→v2 keeps every record)", out, in)
	}
	if v := migration.Versions(); !slices.Equal(v, []string{"v1→v2", "v2→v1"}) {
		t.Fatalf("Versions = %v", v)
	}
}

// shard writes records into an in-memory shard file.
func shard(t *testing.T, v format.Version, recs ...ndjson.Record) *bytes.Buffer {
	t.Helper()
	var buf bytes.Buffer
	w, err := ndjson.NewWriter(&buf, ndjson.Header{CatalogFormat: v, ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf
}

func unknownTagRecord(t *testing.T, tag byte, i int) ndjson.Record {
	t.Helper()
	rec, err := ndjson.NewRecord(format.V1, []byte{tag, byte(i)}, []byte(fmt.Sprintf("opaque-%d", i)))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func transform(t *testing.T, in *bytes.Buffer, opts migration.Options) ([]ndjson.Record, migration.Stats, error) {
	t.Helper()
	r, err := ndjson.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := ndjson.NewWriter(&out, migration.TargetHeader(r.Header(), format.V2, "test"))
	if err != nil {
		t.Fatal(err)
	}
	path, _ := migration.Path(format.V1, format.V2)
	st, err := migration.Transform(t.Context(), r, w, path, opts)
	if err != nil {
		return nil, st, err
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	rr, err := ndjson.NewReader(&out)
	if err != nil {
		t.Fatal(err)
	}
	if rr.Header().CatalogFormat != format.V2 || rr.Header().CreatedBy != "test" {
		t.Fatalf("target header %+v", rr.Header())
	}
	var recs []ndjson.Record
	for {
		rec, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	return recs, st, nil
}

func TestUnknownTagPolicies(t *testing.T) {
	known := v1Record(t, format.Key{Tag: format.TagTable}, 1, nil)
	// 0x1D was one of RockLake's IVM tables until v0.22; 0x42 is unallocated.
	mk := func() *bytes.Buffer {
		return shard(t, format.V1, known, unknownTagRecord(t, 0x1D, 1), unknownTagRecord(t, 0x1D, 2), unknownTagRecord(t, 0x42, 3))
	}

	_, _, err := transform(t, mk(), migration.Options{})
	var ut *migration.UnknownTagsError
	if !errors.As(err, &ut) || !errors.Is(err, migration.ErrUnknownTags) || ut.Counts[0x1D] != 2 || ut.Counts[0x42] != 1 || len(ut.Counts) != 2 {
		t.Fatalf("fail policy: err = %v", err)
	}
	for _, want := range []string{"0x1D: 2", "0x42: 1", "--unknown-tags=carry"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("fail policy message %q lacks %q", err, want)
		}
	}

	recs, st, err := transform(t, mk(), migration.Options{UnknownTags: migration.UnknownCarry})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || st.Carried[0x1D] != 2 || st.Carried[0x42] != 1 || st.RecordsIn != 4 || st.RecordsOut != 4 {
		t.Fatalf("carry: %d records, stats %+v", len(recs), st)
	}
	if recs[0].Tag() != format.TagTable || recs[0].Version() != format.V2 {
		t.Fatalf("carry: the known record is %s %s", recs[0].Version(), recs[0].Tag())
	}
	for i, r := range recs[1:] {
		k, v := r.Raw()
		wk, wv := unknownTagRecord(t, []byte{0x1D, 0x1D, 0x42}[i], i+1).Raw()
		if !bytes.Equal(k, wk) || !bytes.Equal(v, wv) || r.Version() != format.V2 {
			t.Fatalf("carried record changed: %x=%q, want %x=%q", k, v, wk, wv)
		}
	}

	recs, st, err = transform(t, mk(), migration.Options{UnknownTags: migration.UnknownDrop})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || st.Dropped[0x1D] != 2 || st.Dropped[0x42] != 1 || st.RecordsIn != 4 || st.RecordsOut != 1 {
		t.Fatalf("drop: %d records, stats %+v", len(recs), st)
	}
	for s, want := range map[string]migration.UnknownTags{"": migration.UnknownFail, "fail": migration.UnknownFail, "carry": migration.UnknownCarry, "drop": migration.UnknownDrop} {
		if p, err := migration.ParseUnknownTags(s); err != nil || p != want {
			t.Fatalf("ParseUnknownTags(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := migration.ParseUnknownTags("keep"); err == nil {
		t.Fatal("bad policy accepted")
	}
}

func TestTransformDigestMatchesOutput(t *testing.T) {
	var recs []ndjson.Record
	for i, shape := range rowShapes() {
		recs = append(recs, v1Record(t, shape, uint64(i+1), nil))
	}
	out, st, err := transform(t, shard(t, format.V1, recs...), migration.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d ndjson.Digest
	for i := len(out) - 1; i >= 0; i-- { // any order gives the same digest
		d.Add(out[i])
	}
	if d != st.Digest || st.RecordsOut != uint64(len(recs)) || len(out) != len(recs) {
		t.Fatalf("digest of output %s != reported %s", d.Sum(), st.Digest.Sum())
	}
}

// A catalog as the seed writes it (format 1, RockLake's layout) migrates
// record by record into a format-2 catalog that opens with the startup
// check, holds as many keys of every tag, and says the same things.
func TestSeededCatalogToV2(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src, dst := "file://"+dir+"/v1", "file://"+dir+"/v2"
	res, err := seed.Seed(ctx, src, seed.Options{Rows: 5000, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	c1, err := catalog.Open(ctx, src, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	snapshots := map[uint64]int64{} // v1 time, in micros, by snapshot id
	n := copyAlong(t, ctx, c1, dst, format.V1, format.V2, migration.Options{}, res.Counters, func(rec ndjson.Record) {
		if s, ok := rec.Row().(*rocklakev1.Snapshot); ok {
			tm, err := time.Parse(time.RFC3339Nano, s.GetSnapshotTime())
			if err != nil {
				t.Fatalf("the seed's snapshot_time %q is not RFC 3339: %v", s.GetSnapshotTime(), err)
			}
			snapshots[s.SnapshotId] = tm.UnixMicro()
		}
	})

	c2, err := catalog.Open(ctx, dst, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	s1, err := c1.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := c2.Summary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(s2.Tables) != fmt.Sprint(s1.Tables) || fmt.Sprint(s2.Counters) != fmt.Sprint(s1.Counters) {
		t.Fatalf("v2 catalog: tables %v, counters %v; v1: tables %v, counters %v", s2.Tables, s2.Counters, s1.Tables, s1.Counters)
	}
	if s2.System["catalog-format-version"] != "2" || s2.System["retain-from"] != s1.System["retain-from"] {
		t.Fatalf("v2 system keys %v, v1 %v", s2.System, s1.System)
	}
	tags := 0
	for row, err := range c2.ScanRange(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch r := row.Msg.(type) {
		case *rocklakev2.Snapshot:
			if want, ok := snapshots[r.SnapshotId]; !ok || r.SnapshotTimeMicros == nil || *r.SnapshotTimeMicros != want {
				t.Fatalf("v2 snapshot %d time %v, want %d micros", r.SnapshotId, r.SnapshotTimeMicros, want)
			}
		case *rocklakev2.Tag:
			tags++
			if row.Key.Parts[1] != format.TagKeyHash(format.V2, r.TagKey) {
				t.Fatalf("v2 tag key %+v for tag key %q", row.Key, r.TagKey)
			}
		case *rocklakev2.ColumnTag:
			if row.Key.Parts[2] != format.TagKeyHash(format.V2, r.TagKey) {
				t.Fatalf("v2 column tag key %+v for tag key %q", row.Key, r.TagKey)
			}
		}
	}
	if len(snapshots) == 0 || tags == 0 || uint64(n+1) != sum(s2.Tables) {
		t.Fatalf("%d snapshots, %d tags, %d records + the version for %d keys", len(snapshots), tags, n, sum(s2.Tables))
	}
}

// rowRecord is the record of row under k in format v.
func rowRecord(t testing.TB, v format.Version, k format.Key, row proto.Message) ndjson.Record {
	t.Helper()
	key, _ := format.EncodeKey(v, k)
	value, _ := format.EncodeValue(v, k, row)
	rec, err := ndjson.NewRecord(v, key, value)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// wantRekeyed checks that out, what a conversion made of row under key,
// has the key parts want and row's fields on the wire.
func wantRekeyed(t *testing.T, out ndjson.Record, key format.Key, row proto.Message, want []uint64) {
	t.Helper()
	if got := out.Key().Parts; !slices.Equal(got, want) {
		t.Fatalf("%s %v: %s key parts %x, want %x", key.Tag, row, out.Version(), got, want)
	}
	if !sameWire(t, out.Row(), row) {
		t.Fatalf("row %v became %v", row, out.Row())
	}
}

// wantWithoutField fails unless the row of out, a snapshot, lacks field
// num on the wire (what names the record in the failure).
func wantWithoutField(t *testing.T, out ndjson.Record, num protowire.Number, what string) {
	t.Helper()
	_, value := out.Raw()
	payload, _ := format.DecodeEnvelope(out.Version(), value)
	for b := payload; len(b) > 0; {
		n, typ, l := protowire.ConsumeTag(b)
		if n == num {
			t.Fatalf("%s: format-%d snapshot %x holds field %d", what, out.Version(), payload, num)
		}
		b = b[l+protowire.ConsumeFieldValue(n, typ, b[l:]):]
	}
}

// sameWire reports whether two rows, of either format, hold the same
// fields (unknown ones included) under the same numbers.
func sameWire(t *testing.T, a, b proto.Message) bool {
	t.Helper()
	opt := proto.MarshalOptions{Deterministic: true}
	wa, err := opt.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	wb, err := opt.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(wa, wb)
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}
