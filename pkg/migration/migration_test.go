package migration_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

const snapshotText = "2025-03-04 05:06:07.123456+00"

// fill sets every field of a row to a value derived from its number, so
// that a lost or misplaced field shows.
func fill(m protoreflect.Message, seed uint64) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		n := seed*100 + uint64(fd.Number())
		switch fd.Kind() {
		case protoreflect.Uint64Kind:
			m.Set(fd, protoreflect.ValueOfUint64(n))
		case protoreflect.Int64Kind:
			m.Set(fd, protoreflect.ValueOfInt64(int64(n)))
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
			m.Set(fd, protoreflect.ValueOfBytes([]byte{byte(n)}))
		case protoreflect.MessageKind:
			if fd.Cardinality() == protoreflect.Repeated {
				l := m.Mutable(fd).List()
				e := l.NewElement()
				fill(e.Message(), seed)
				l.Append(e)
			} else {
				fill(m.Mutable(fd).Message(), seed)
			}
		}
	}
}

// v1Record makes a format-1 record of tag t whose key agrees with its row.
func v1Record(t *testing.T, tag format.Tag, seed uint64, unknown []byte) ndjson.Record {
	t.Helper()
	row, err := format.NewRow(format.V1, tag)
	if err != nil {
		t.Fatal(err)
	}
	m := row.ProtoReflect()
	fill(m, seed)
	var parts []uint64
	for _, name := range format.ComponentNames(format.V1, tag) {
		fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
		if fd != nil && fd.Kind() == protoreflect.Uint64Kind {
			parts = append(parts, m.Get(fd).Uint())
		} else {
			parts = append(parts, seed*1000+uint64(len(parts)))
		}
	}
	if len(unknown) > 0 {
		m.SetUnknown(unknown)
	}
	key, err := format.EncodeKey(format.V1, format.Key{Tag: tag, Parts: parts})
	if err != nil {
		t.Fatal(err)
	}
	value, err := format.EncodeValue(format.V1, row)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ndjson.NewRecord(format.V1, key, value)
	if err != nil {
		t.Fatalf("record %s: %v", tag, err)
	}
	return rec
}

func tableTags() []format.Tag {
	var tags []format.Tag
	for _, t := range format.KnownTags() {
		if t != format.TagSystem && t != format.TagCounter {
			tags = append(tags, t)
		}
	}
	return tags
}

func v1ToV2(t *testing.T, rec ndjson.Record) ndjson.Record {
	t.Helper()
	path, err := migration.Path(format.V1, format.V2)
	if err != nil {
		t.Fatal(err)
	}
	out, err := migration.Records(rec, path, migration.Options{})
	if err != nil {
		t.Fatalf("transform %s: %v", rec.Tag(), err)
	}
	if len(out) != 1 {
		t.Fatalf("transform %s gave %d records", rec.Tag(), len(out))
	}
	return out[0]
}

func TestV1ToV2EveryRowType(t *testing.T) {
	unknown := protowire.AppendTag(nil, 900, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "added by a newer binary")
	for _, tag := range tableTags() {
		t.Run(tag.String(), func(t *testing.T) {
			in := v1Record(t, tag, 7, unknown)
			out := v1ToV2(t, in)
			if out.Version() != format.V2 || out.Tag() != tag {
				t.Fatalf("out is %s %s", out.Version(), out.Tag())
			}
			key, value := out.Raw()
			// The output decodes as format 2: its key, its checksummed envelope.
			if _, err := format.DecodeKey(format.V2, key); err != nil {
				t.Fatalf("v2 key: %v", err)
			}
			if _, err := format.DecodeValue(format.V2, tag, value); err != nil {
				t.Fatalf("v2 value: %v", err)
			}
			if !bytes.Equal(out.Unknown(), unknown) {
				t.Fatalf("unknown fields = %x, want %x", out.Unknown(), unknown)
			}
			// Key components keep their values, by name.
			names1, names2 := format.ComponentNames(format.V1, tag), format.ComponentNames(format.V2, tag)
			for i, n2 := range names2 {
				var want uint64
				found := false
				for j, n1 := range names1 {
					if n1 == n2 {
						want, found = in.Key().Parts[j], true
					}
				}
				if !found {
					fd := in.Row().ProtoReflect().Descriptor().Fields().ByName(protoreflect.Name(n2))
					want = in.Row().ProtoReflect().Get(fd).Uint()
				}
				if out.Key().Parts[i] != want {
					t.Fatalf("v2 key component %s = %d, want %d", n2, out.Key().Parts[i], want)
				}
			}
			if tag == format.TagSnapshot {
				return
			}
			// Every other row's payload moves byte for byte.
			_, v1value := in.Raw()
			p1, _ := format.DecodeEnvelope(format.V1, v1value)
			p2, _ := format.DecodeEnvelope(format.V2, value)
			if !bytes.Equal(p1, p2) {
				t.Fatalf("payload changed:\n v1 %x\n v2 %x", p1, p2)
			}
		})
	}
}

func TestFilesAreKeyedByTable(t *testing.T) {
	row := &rocklakev1.DataFile{DataFileId: 42, TableId: 9, BeginSnapshot: 3}
	key, _ := format.EncodeKey(format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{42}})
	value, _ := format.EncodeValue(format.V1, row)
	rec, err := ndjson.NewRecord(format.V1, key, value)
	if err != nil {
		t.Fatal(err)
	}
	out := v1ToV2(t, rec)
	if got := out.Key().Parts; len(got) != 2 || got[0] != 9 || got[1] != 42 {
		t.Fatalf("v2 data file key parts = %v, want [9 42]", got)
	}
	prefix, _ := format.KeyPrefix(format.V2, format.TagDataFile, 9)
	if k, _ := out.Raw(); !bytes.HasPrefix(k, prefix) {
		t.Fatalf("v2 key %x is not under table 9's prefix %x", k, prefix)
	}
}

func TestSnapshotTimeBecomesMicros(t *testing.T) {
	for text, want := range map[string]time.Time{
		"2025-03-04 05:06:07.123456+00":    time.Date(2025, 3, 4, 5, 6, 7, 123456000, time.UTC),
		"2025-03-04T05:06:07.5+02:00":      time.Date(2025, 3, 4, 3, 6, 7, 500000000, time.UTC),
		"2024-12-31 23:59:59":              time.Date(2024, 12, 31, 23, 59, 59, 0, time.UTC),
		"1970-01-01 00:00:00.000001+00:00": time.Unix(0, 1000).UTC(),
	} {
		st := text
		row := &rocklakev1.Snapshot{SnapshotId: 5, SnapshotTime: &st}
		key, _ := format.EncodeKey(format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{5}})
		value, _ := format.EncodeValue(format.V1, row)
		rec, err := ndjson.NewRecord(format.V1, key, value)
		if err != nil {
			t.Fatal(err)
		}
		out := v1ToV2(t, rec)
		s2 := out.Row().(*rocklakev2.Snapshot)
		if s2.SnapshotTimeMicros == nil || *s2.SnapshotTimeMicros != want.UnixMicro() {
			t.Fatalf("%q → %v micros, want %d", text, s2.SnapshotTimeMicros, want.UnixMicro())
		}
		if len(out.Unknown()) != 0 {
			t.Fatalf("%q: the v1 text survived as unknown field %x", text, out.Unknown())
		}
	}
	bad := "yesterday"
	row := &rocklakev1.Snapshot{SnapshotId: 6, SnapshotTime: &bad}
	key, _ := format.EncodeKey(format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{6}})
	value, _ := format.EncodeValue(format.V1, row)
	rec, _ := ndjson.NewRecord(format.V1, key, value)
	path, _ := migration.Path(format.V1, format.V2)
	if _, err := migration.Records(rec, path, migration.Options{}); err == nil {
		t.Fatal("an unreadable snapshot_time was accepted")
	}
}

func TestUnknownFieldCollisionIsRefused(t *testing.T) {
	// Field 6 is unknown to format 1's snapshot but is snapshot_time_micros
	// in format 2: carrying it would turn someone's data into a time.
	unknown := protowire.AppendTag(nil, 6, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 77)
	rec := v1Record(t, format.TagSnapshot, 1, unknown)
	path, _ := migration.Path(format.V1, format.V2)
	_, err := migration.Records(rec, path, migration.Options{})
	var coll *migration.FieldCollisionError
	if !errors.As(err, &coll) || !errors.Is(err, migration.ErrFieldCollision) {
		t.Fatalf("err = %v, want FieldCollisionError", err)
	}
	key, _ := rec.Raw()
	if coll.Number != 6 || coll.Field != "snapshot_time_micros" || !bytes.Equal(coll.Key, key) {
		t.Fatalf("collision = %+v", coll)
	}
	if msg := err.Error(); !bytes.Contains([]byte(msg), []byte(fmt.Sprintf("%x", key))) || !bytes.Contains([]byte(msg), []byte("snapshot_time_micros")) {
		t.Fatalf("message %q does not name key and field", msg)
	}
}

func TestSystemAndCounterKeys(t *testing.T) {
	path, _ := migration.Path(format.V1, format.V2)
	for _, tc := range []struct {
		key  []byte
		in   uint64
		want uint64
	}{
		{format.FormatVersionKey(), 1, 2},
		{format.SystemKey(format.SystemWriterEpoch), 17, 17},
		{format.SystemKey("feature-flag-from-the-future"), 5, 5},
		{format.CounterKey(format.CounterNextFileID), 123456, 123456},
		{format.CounterKey("next-partition-id"), 9, 9},
	} {
		rec, err := ndjson.NewRecord(format.V1, tc.key, format.EncodeUint64(format.V1, tc.in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := migration.Records(rec, path, migration.Options{})
		if err != nil {
			t.Fatal(err)
		}
		k, v := out[0].Raw()
		if !bytes.Equal(k, tc.key) {
			t.Fatalf("key %x became %x", tc.key, k)
		}
		got, err := format.DecodeUint64(format.V2, v)
		if err != nil || got != tc.want {
			t.Fatalf("%s: value %d, %v; want %d", tc.key, got, err, tc.want)
		}
	}
}

func TestPaths(t *testing.T) {
	if p, err := migration.Path(format.V1, format.V1); err != nil || len(p) != 0 {
		t.Fatalf("v1→v1 = %v, %v", p, err)
	}
	if p, err := migration.Path(format.V1, format.V2); err != nil || len(p) != 1 {
		t.Fatalf("v1→v2 = %v, %v", p, err)
	}
	for _, c := range [][2]format.Version{{2, 1}, {1, 3}, {99, 2}, {0, 1}} {
		if _, err := migration.Path(c[0], c[1]); !errors.Is(err, migration.ErrNoPath) {
			t.Fatalf("%v→%v: err = %v, want ErrNoPath", c[0], c[1], err)
		}
	}
	p, _ := migration.Path(format.V1, format.V2)
	in := map[string]uint64{"ducklake_data_file": 10, "ducklake_snapshot": 2}
	if out := migration.ExpectCounts(p, in); out["ducklake_data_file"] != 10 || out["ducklake_snapshot"] != 2 {
		t.Fatalf("expected counts = %v", out)
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
	known := v1Record(t, format.TagTable, 1, nil)
	mk := func() *bytes.Buffer {
		return shard(t, format.V1, known, unknownTagRecord(t, 0x0E, 1), unknownTagRecord(t, 0x0E, 2), unknownTagRecord(t, 0x42, 3))
	}

	_, _, err := transform(t, mk(), migration.Options{})
	var ut *migration.UnknownTagsError
	if !errors.As(err, &ut) || ut.Counts[0x0E] != 2 || ut.Counts[0x42] != 1 || len(ut.Counts) != 2 {
		t.Fatalf("fail policy: err = %v", err)
	}
	for _, want := range []string{"0x0E: 2", "0x42: 1", "--unknown-tags=carry"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Fatalf("fail policy message %q lacks %q", err, want)
		}
	}

	recs, st, err := transform(t, mk(), migration.Options{UnknownTags: migration.UnknownCarry})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || st.Carried[0x0E] != 2 || st.Carried[0x42] != 1 {
		t.Fatalf("carry: %d records, stats %+v", len(recs), st)
	}
	for _, r := range recs[1:] {
		k, v := r.Raw()
		if k[0] != 0x0E && k[0] != 0x42 || !bytes.HasPrefix(v, []byte("opaque-")) {
			t.Fatalf("carried record changed: %x=%q", k, v)
		}
	}

	recs, st, err = transform(t, mk(), migration.Options{UnknownTags: migration.UnknownDrop})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || st.Dropped[0x0E] != 2 || st.Dropped[0x42] != 1 || st.RecordsIn != 4 || st.RecordsOut != 1 {
		t.Fatalf("drop: %d records, stats %+v", len(recs), st)
	}
	if _, err := migration.ParseUnknownTags("keep"); err == nil {
		t.Fatal("bad policy accepted")
	}
}

func TestTransformDigestMatchesOutput(t *testing.T) {
	var recs []ndjson.Record
	for i, tag := range tableTags() {
		recs = append(recs, v1Record(t, tag, uint64(i+1), nil))
	}
	out, st, err := transform(t, shard(t, format.V1, recs...), migration.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var d ndjson.Digest
	for i := len(out) - 1; i >= 0; i-- { // any order gives the same digest
		d.Add(out[i])
	}
	if d != st.Digest || st.RecordsOut != uint64(len(recs)) {
		t.Fatalf("digest of output %s != reported %s", d.Sum(), st.Digest.Sum())
	}
}
