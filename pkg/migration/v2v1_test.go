package migration_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// carryOpts is the policy the round trips run under: records of unknown tags
// go up and down byte for byte.
var carryOpts = migration.Options{UnknownTags: migration.UnknownCarry}

func pathOf(t testing.TB, from, to format.Version) []migration.Conversion {
	t.Helper()
	p, err := migration.Path(from, to)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step runs rec one way and wants one well-formed record back: the one
// ndjson.NewRecord makes of its bytes.
func step(t testing.TB, rec ndjson.Record, from, to format.Version) ndjson.Record {
	t.Helper()
	out, err := migration.Records(rec, pathOf(t, from, to), carryOpts)
	if err != nil {
		t.Fatalf("%s→%s %s: %v", from, to, rec.Tag(), err)
	}
	if len(out) != 1 || out[0].Version() != to {
		t.Fatalf("%s→%s %s gave %d records", from, to, rec.Tag(), len(out))
	}
	k, v := out[0].Raw()
	ref, err := ndjson.NewRecord(to, k, v)
	if err != nil {
		t.Fatalf("%s→%s made key %x = %x, which does not read back: %v", from, to, k, v, err)
	}
	if !reflect.DeepEqual(out[0].Key(), ref.Key()) || !bytes.Equal(out[0].Unknown(), ref.Unknown()) ||
		(ref.Row() != nil && !proto.Equal(out[0].Row(), ref.Row())) {
		t.Fatalf("%s→%s key %x: record %+v / %v, its bytes read %+v / %v", from, to, k, out[0].Key(), out[0].Row(), ref.Key(), ref.Row())
	}
	return out[0]
}

func down(t testing.TB, rec ndjson.Record) ndjson.Record { return step(t, rec, format.V2, format.V1) }

// chronoText is chrono's DateTime<Utc>::to_rfc3339 (SecondsFormat::AutoSi),
// written apart from migration.FormatSnapshotTime to check it: 0, 3, 6 or
// 9 fractional digits, the fewest that hold the nanoseconds, and "+00:00".
func chronoText(tm time.Time) string {
	s := tm.UTC().Format("2006-01-02T15:04:05.000000000")
	base, frac := s[:len(s)-10], s[len(s)-9:]
	switch {
	case frac == "000000000":
		s = base
	case strings.HasSuffix(frac, "000000"):
		s = base + "." + frac[:3]
	case strings.HasSuffix(frac, "000"):
		s = base + "." + frac[:6]
	default:
		s = base + "." + frac
	}
	return s + "+00:00"
}

// wantBack is what v1→v2→v1 gives for a format-1 record: its own key and
// value, but for a snapshot, which v1→v2 rebuilds: its snapshot_time comes
// back as chrono's to_rfc3339 of the same instant truncated to the
// microsecond, every other field as it was, in its canonical encoding.
// same reports whether that is the record's own bytes.
func wantBack(t testing.TB, rec ndjson.Record) (key, value []byte, same bool) {
	t.Helper()
	key, value = rec.Raw()
	if rec.Tag() != format.TagSnapshot {
		return key, value, true
	}
	s := rec.Row().(*rocklakev1.Snapshot)
	if s.SnapshotTime != "" {
		tm, err := migration.ParseSnapshotTime(s.SnapshotTime)
		if err != nil {
			t.Fatal(err)
		}
		s.SnapshotTime = chronoText(tm.Truncate(time.Microsecond))
	}
	want, err := format.EncodeValue(format.V1, rec.Key(), s)
	if err != nil {
		t.Fatal(err)
	}
	return key, want, bytes.Equal(want, value)
}

// roundTrip takes a format-1 record up and back down, holds the result to
// wantBack, and the format-2 record in between to v2→v1→v2 being the
// identity. It returns whether the record came back as its own bytes.
func roundTrip(t testing.TB, in ndjson.Record) bool {
	t.Helper()
	up := step(t, in, format.V1, format.V2)
	back := down(t, up)
	wk, wv, same := wantBack(t, in)
	if k, v := back.Raw(); !bytes.Equal(k, wk) || !bytes.Equal(v, wv) {
		ik, iv := in.Raw()
		t.Fatalf("v1→v2→v1 of %x = %x\n gave %x = %x\n want %x = %x", ik, iv, k, v, wk, wv)
	}
	uk, uv := up.Raw()
	if k, v := step(t, back, format.V1, format.V2).Raw(); !bytes.Equal(k, uk) || !bytes.Equal(v, uv) {
		t.Fatalf("v2→v1→v2 of %x = %x\n gave %x = %x", uk, uv, k, v)
	}
	return same
}

// RockLake keys a tag and a column tag by its hash of the row's tag key:
// the fixture's rows, keyed as RockLake keys them, in format v.
func rekeyTags(t testing.TB, v format.Version, e catalogfixture.Entry) catalogfixture.Entry {
	t.Helper()
	k, err := format.DecodeKey(v, e.Key)
	if err != nil {
		t.Fatal(err)
	}
	if k.Tag != format.TagTag && k.Tag != format.TagColumnTag {
		return e
	}
	row, err := format.DecodeValue(v, k, e.Value)
	if err != nil {
		t.Fatal(err)
	}
	m := row.ProtoReflect()
	tagKey := m.Get(m.Descriptor().Fields().ByName("tag_key")).String()
	for i, f := range format.Fields(k.Tag, k.Name) {
		if f.Name == "tag_key_hash" {
			k.Parts[i] = format.TagKeyHash(v, tagKey)
		}
	}
	if e.Key, err = format.EncodeKey(v, k); err != nil {
		t.Fatal(err)
	}
	return e
}

// snapshotTexts are format-1 snapshot_time values: chrono's to_rfc3339 at
// microsecond precision or coarser (they come back byte for byte), and
// others: digits below a microsecond, which come back truncated, and the
// other forms v1→v2 reads.
var snapshotTexts = []struct {
	text string
	same bool
}{
	{"2025-01-06T09:00:37.123456+00:00", true},
	{"2025-01-06T09:00:37.123+00:00", true},
	{"2025-01-06T09:00:37+00:00", true},
	{"1969-12-31T23:59:59.999999+00:00", true},
	{"0000-01-01T00:00:00+00:00", true},
	{"9999-12-31T23:59:59.999999+00:00", true},
	{"2025-01-06T09:00:37.123456789+00:00", false}, // chrono's nanoseconds, as RockLake writes most times
	{"2025-01-06T09:00:37.000000001+00:00", false},
	{"2025-01-06T09:00:37.123456000+00:00", false}, // the seed's form
	{"2025-01-06T09:00:37.1+00:00", false},
	{"2025-01-06T09:00:37Z", false},
	{"2025-03-04T05:06:07.5+02:00", false},
	{"2025-03-04 05:06:07.123456+00", false}, // DuckDB's TIMESTAMPTZ text
}

// fixtureEntries are catalogfixture's format-1 entries (every key shape of
// every tag, filled and empty), keyed as RockLake keys them, with the
// filled snapshot under every text of snapshotTexts, each row also with an
// unknown field and, but for snapshots, with its fields out of order
// (carried verbatim), and records of unknown tags and of counter and
// system keys of no known shape.
func fixtureEntries(t *testing.T) []catalogfixture.Entry {
	t.Helper()
	unknown := protowire.AppendTag(nil, 900, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "added by a newer binary")
	var out []catalogfixture.Entry
	for _, e := range catalogfixture.Entries(format.V1) {
		e = rekeyTags(t, format.V1, e)
		k, err := format.DecodeKey(format.V1, e.Key)
		if err != nil {
			t.Fatal(err)
		}
		variants := []catalogfixture.Entry{e}
		if k.Tag == format.TagSnapshot {
			s, err := format.DecodeValue(format.V1, k, e.Value)
			if err != nil {
				t.Fatal(err)
			}
			variants = variants[:0]
			if s.(*rocklakev1.Snapshot).SnapshotTime == "" {
				variants = append(variants, e) // the empty row: no time
			} else {
				for _, st := range snapshotTexts {
					s.(*rocklakev1.Snapshot).SnapshotTime = st.text // Fill's is no time
					v, err := format.EncodeValue(format.V1, k, s)
					if err != nil {
						t.Fatal(err)
					}
					variants = append(variants, catalogfixture.Entry{Key: e.Key, Value: v})
				}
			}
		}
		for _, e := range variants {
			out = append(out, e)
			if format.ValueKindOf(k) != format.ValueRow {
				continue
			}
			payload, err := format.DecodeEnvelope(format.V1, e.Value)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, catalogfixture.Entry{Key: e.Key, Value: format.EncodeEnvelope(format.V1, append(bytes.Clone(payload), unknown...))})
			if rev := reversedFields(t, payload); k.Tag != format.TagSnapshot && !bytes.Equal(rev, payload) {
				out = append(out, catalogfixture.Entry{Key: e.Key, Value: format.EncodeEnvelope(format.V1, rev)})
			}
		}
	}
	return append(out,
		catalogfixture.Entry{Key: []byte{0x42, 1, 2}, Value: []byte("opaque")},
		catalogfixture.Entry{Key: []byte{0x1D, 9}, Value: format.EncodeEnvelope(format.V1, []byte{8, 1})},
		catalogfixture.Entry{Key: format.SystemKey("future-flag"), Value: []byte("enabled")},
		catalogfixture.Entry{Key: format.SystemKey("future-counter"), Value: format.EncodeCounter(format.V1, 5)},
		catalogfixture.Entry{Key: []byte{0xFE, 0x42}, Value: format.EncodeCounter(format.V1, 9)},
		catalogfixture.Entry{Key: []byte{0xFE, 0x12, 0, 0, 0, 0, 0, 0, 0, 9}, Value: format.EncodeCounter(format.V1, 9)},
	)
}

// v1→v2→v1 is the identity over every key shape of every tag, key for key
// and byte for byte, but for a snapshot_time not already in chrono's
// to_rfc3339 form at microsecond precision: that one comes back in that
// form, the same instant truncated to the microsecond. Record by record, as
// exported (with its line), and through shard files.
func TestV1V2V1EveryShape(t *testing.T) {
	entries := fixtureEntries(t)
	var recs []ndjson.Record
	same, changed, shapes := 0, 0, map[string]bool{}
	for _, e := range entries {
		in, err := ndjson.NewRecord(format.V1, e.Key, e.Value)
		if err != nil {
			t.Fatalf("key %x: %v", e.Key, err)
		}
		lined, err := in.WithLine()
		if err != nil {
			t.Fatal(err)
		}
		if roundTrip(t, in) {
			same++
		} else {
			changed++
		}
		roundTrip(t, lined)
		recs = append(recs, in)
		shapes[fmt.Sprintf("%s/%s", in.Tag(), in.Key().Name)] = true
	}
	if len(shapes) < len(format.Shapes()) {
		t.Fatalf("the entries cover %d of %d key shapes", len(shapes), len(format.Shapes()))
	}
	// Exactly the snapshot texts not in canonical form change.
	wantChanged := 0
	for _, st := range snapshotTexts {
		if !st.same {
			wantChanged += 2 // with and without the unknown field
		}
	}
	if changed != wantChanged || same != len(entries)-wantChanged {
		t.Fatalf("%d records came back changed, %d the same; want %d changed", changed, same, wantChanged)
	}

	// The same records through shard files: a v1 shard transformed up, then
	// down, gives back wantBack's records in order, and the down
	// transform's digest is theirs.
	upRecs, _ := transformAlong(t, shard(t, format.V1, recs...), format.V1, format.V2)
	backRecs, st := transformAlong(t, shard(t, format.V2, upRecs...), format.V2, format.V1)
	if len(backRecs) != len(recs) {
		t.Fatalf("%d records came back of %d", len(backRecs), len(recs))
	}
	var want ndjson.Digest
	for i, in := range recs {
		wk, wv, _ := wantBack(t, in)
		if k, v := backRecs[i].Raw(); !bytes.Equal(k, wk) || !bytes.Equal(v, wv) {
			t.Fatalf("record %d through shards: %x = %x, want %x = %x", i, k, v, wk, wv)
		}
		w, err := ndjson.NewRecord(format.V1, wk, wv)
		if err != nil {
			t.Fatal(err)
		}
		want.Add(w)
	}
	if st.Digest != want || st.RecordsIn != uint64(len(recs)) || st.RecordsOut != uint64(len(recs)) || st.Carried[0x42] != 1 || st.Carried[0x1D] != 1 {
		t.Fatalf("down transform stats %+v, digest %s, want %s", st, st.Digest.Sum(), want.Sum())
	}
}

// v2→v1→v2 is the identity on format-2 records: catalogfixture's, every
// key shape of every tag, keyed as format 2 keys them, with and without an
// unknown field.
func TestV2V1V2EveryShape(t *testing.T) {
	unknown := protowire.AppendTag(nil, 901, protowire.VarintType)
	unknown = protowire.AppendVarint(unknown, 1<<40)
	n := 0
	for _, e := range catalogfixture.Entries(format.V2) {
		e = rekeyTags(t, format.V2, e)
		values := [][]byte{e.Value}
		if k, _ := format.DecodeKey(format.V2, e.Key); format.ValueKindOf(k) == format.ValueRow {
			payload, err := format.DecodeEnvelope(format.V2, e.Value)
			if err != nil {
				t.Fatal(err)
			}
			values = append(values, format.EncodeEnvelope(format.V2, append(bytes.Clone(payload), unknown...)))
		}
		for _, value := range values {
			in, err := ndjson.NewRecord(format.V2, e.Key, value)
			if err != nil {
				t.Fatalf("key %x: %v", e.Key, err)
			}
			back := step(t, down(t, in), format.V1, format.V2)
			if k, v := back.Raw(); !bytes.Equal(k, e.Key) || !bytes.Equal(v, value) {
				t.Fatalf("v2→v1→v2 of %x = %x\n gave %x = %x", e.Key, value, k, v)
			}
			if !bytes.Equal(back.Unknown(), in.Unknown()) {
				t.Fatalf("key %x: unknown fields %x, want %x", e.Key, back.Unknown(), in.Unknown())
			}
			n++
		}
	}
	if n < len(catalogfixture.Entries(format.V2)) {
		t.Fatalf("%d records", n)
	}
}

// transformAlong runs Transform from one format to the other over a shard
// in memory and returns the records it wrote, read back.
func transformAlong(t *testing.T, in *bytes.Buffer, from, to format.Version) ([]ndjson.Record, migration.Stats) {
	t.Helper()
	r, err := ndjson.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	if r.Header().CatalogFormat != from {
		t.Fatalf("shard in %s, want %s", r.Header().CatalogFormat, from)
	}
	var out bytes.Buffer
	w, err := ndjson.NewWriter(&out, migration.TargetHeader(r.Header(), to, "test"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := migration.Transform(t.Context(), r, w, pathOf(t, from, to), carryOpts)
	if err != nil {
		t.Fatal(err)
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
			return recs, st
		}
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
}

// Catalogs: a seeded one (RockLake's mix of tables), the golden catalog
// (with an unknown tag, counter and system keys of no known shape and an
// unknown field), and the catalogs the real RockLake v0.47.11 wrote
// (pkg/catalog/testdata). Every key comes back byte for byte, but for
// snapshot times not in to_rfc3339 form at microsecond precision, which
// come back in that form, truncated: RockLake's own times carry
// nanoseconds.
func TestV1V2V1Catalogs(t *testing.T) {
	eachV1Catalog(t, map[string]string{
		"golden":                   filepath.Join("..", "catalog", "testdata", "catalog-v1"),
		"rocklake-v0.47.11":        filepath.Join("..", "catalog", "testdata", "rocklake-v0.47.11", "catalog"),
		"rocklake-v0.47.11/duckdb": filepath.Join("..", "catalog", "testdata", "rocklake-v0.47.11", "duckdb", "catalog"),
	}, func(t *testing.T, ctx context.Context, c *catalog.Catalog) {
		keys, same, snapshots, example := 0, 0, 0, ""
		for e, err := range c.ScanRaw(ctx, nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			in, err := ndjson.NewRecord(format.V1, e.Key, e.Value)
			if err != nil {
				t.Fatal(err)
			}
			keys++
			if in.Tag() == format.TagSnapshot {
				snapshots++
				if text := in.Row().(*rocklakev1.Snapshot).SnapshotTime; example == "" && text != "" {
					up := step(t, in, format.V1, format.V2)
					example = fmt.Sprintf("%q comes back as %q", text, down(t, up).Row().(*rocklakev1.Snapshot).SnapshotTime)
				}
			}
			if roundTrip(t, in) {
				same++
			} else if in.Tag() != format.TagSnapshot {
				t.Fatalf("key %x changed", e.Key)
			}
		}
		t.Logf("%d keys, %d snapshots, %d keys byte for byte; %s", keys, snapshots, same, example)
		if keys < 40 || snapshots == 0 || same < keys-snapshots {
			t.Fatalf("%d keys, %d snapshots, %d the same", keys, snapshots, same)
		}
	})
}

// `migrate --to v1` in small: a seeded format-1 catalog migrated up into a
// format-2 catalog, and that one down into a fresh format-1 catalog, which
// opens with the startup check and holds the first one's keys and values,
// snapshot times aside (the seed writes nine digits; they come back in
// chrono's form).
func TestSeededCatalogDownIntoFreshV1(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	src, mid, dst := "file://"+dir+"/v1", "file://"+dir+"/v2", "file://"+dir+"/v1-again"
	res, err := seed.Seed(ctx, src, seed.Options{Rows: 3000, Seed: 17})
	if err != nil {
		t.Fatal(err)
	}
	along := func(from, to string, v, w format.Version) {
		t.Helper()
		c, err := catalog.Open(ctx, from, catalog.Options{Expect: v})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		copyAlong(t, ctx, c, to, v, w, carryOpts, res.Counters, nil)
	}
	along(src, mid, format.V1, format.V2)
	along(mid, dst, format.V2, format.V1)

	c, err := catalog.Open(ctx, dst, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	want := kvscan.Dump(t, src)
	changed := 0
	for k, v := range want {
		rec, err := ndjson.NewRecord(format.V1, []byte(k), []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		if _, wv, same := wantBack(t, rec); !same {
			want[k] = string(wv)
			changed++
		}
	}
	if changed == 0 {
		t.Fatal("no snapshot time changed form: the seed's nine digits should")
	}
	kvscan.Same(t, "v1→v2→v1 catalog", want, kvscan.Dump(t, dst))
}

// snapshotV2 is a format-2 snapshot record.
func snapshotV2(t testing.TB, id uint64, micros *int64, unknown []byte) ndjson.Record {
	t.Helper()
	k := format.Key{Tag: format.TagSnapshot, Parts: []uint64{id}}
	row := &rocklakev2.Snapshot{SnapshotId: id, SchemaVersion: 3, Author: proto.String("etl"), NextFileId: proto.Uint64(8), SnapshotTimeMicros: micros}
	row.ProtoReflect().SetUnknown(unknown)
	key, _ := format.EncodeKey(format.V2, k)
	value, err := format.EncodeValue(format.V2, k, row)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ndjson.NewRecord(format.V2, key, value)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// The typed time goes back to field 3 as RockLake writes it, chrono's
// to_rfc3339; field 100 is not written in format 1, not as an unknown field
// either; the other fields and unknown ones are kept.
func TestSnapshotMicrosBecomeText(t *testing.T) {
	at := func(y int, mo time.Month, d, h, mi, s, ns int) int64 {
		return time.Date(y, mo, d, h, mi, s, ns, time.UTC).UnixMicro()
	}
	unknown := protowire.AppendTag(nil, 900, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "added by a newer binary")
	for micros, want := range map[int64]string{
		at(2025, 1, 6, 9, 0, 37, 123456000):     "2025-01-06T09:00:37.123456+00:00",
		at(2025, 1, 6, 9, 0, 37, 123000000):     "2025-01-06T09:00:37.123+00:00",
		at(2025, 1, 6, 9, 0, 37, 0):             "2025-01-06T09:00:37+00:00",
		at(2025, 1, 6, 9, 0, 37, 100000000):     "2025-01-06T09:00:37.100+00:00",
		at(2025, 1, 6, 9, 0, 37, 120000):        "2025-01-06T09:00:37.000120+00:00",
		at(2025, 1, 6, 9, 0, 37, 1000):          "2025-01-06T09:00:37.000001+00:00",
		0:                                       "1970-01-01T00:00:00+00:00",
		-1:                                      "1969-12-31T23:59:59.999999+00:00",
		at(0, 1, 1, 0, 0, 0, 0):                 "0000-01-01T00:00:00+00:00",
		at(9999, 12, 31, 23, 59, 59, 999999000): "9999-12-31T23:59:59.999999+00:00",
	} {
		for _, unk := range [][]byte{nil, unknown} {
			in := snapshotV2(t, 5, proto.Int64(micros), unk)
			out := down(t, in)
			s1 := out.Row().(*rocklakev1.Snapshot)
			if s1.SnapshotTime != want {
				t.Fatalf("%d micros → %q, want %q", micros, s1.SnapshotTime, want)
			}
			if text, err := migration.FormatSnapshotTime(micros); err != nil || text != want {
				t.Fatalf("FormatSnapshotTime(%d) = %q, %v", micros, text, err)
			}
			if s1.SnapshotId != 5 || s1.SchemaVersion != 3 || s1.GetAuthor() != "etl" || s1.GetNextFileId() != 8 || s1.Message != nil || s1.NextCatalogId != nil {
				t.Fatalf("%d: fields changed: %v", micros, s1)
			}
			if !bytes.Equal(out.Unknown(), unk) {
				t.Fatalf("%d: unknown fields %x, want %x", micros, out.Unknown(), unk)
			}
			wantWithoutField(t, out, 100, fmt.Sprint(micros))
			if got := step(t, out, format.V1, format.V2).Row().(*rocklakev2.Snapshot); got.GetSnapshotTimeMicros() != micros {
				t.Fatalf("%q went back up as %d micros, want %d", want, got.GetSnapshotTimeMicros(), micros)
			}
		}
	}
	// No time in format 2, none in format 1.
	if s1 := down(t, snapshotV2(t, 6, nil, nil)).Row().(*rocklakev1.Snapshot); s1.SnapshotTime != "" {
		t.Fatalf("a snapshot without a time got %q", s1.SnapshotTime)
	}
}

// Tags and column tags go back under RockLake's hash of the row's tag key,
// whatever it is; a format-2 key whose hash is not its row's is refused.
func TestTagKeysBackToRockLakeHash(t *testing.T) {
	for _, tc := range []struct {
		key  format.Key
		row  proto.Message
		want []uint64
	}{
		{format.Key{Tag: format.TagTag, Parts: []uint64{12, format.TagKeyHash(format.V2, "owner"), 3}},
			&rocklakev2.Tag{ObjectId: 12, TagKey: "owner", TagValue: "team-a", BeginSnapshot: 3},
			[]uint64{12, format.TagKeyHash(format.V1, "owner"), 3}},
		{format.Key{Tag: format.TagColumnTag, Parts: []uint64{12, 2, format.TagKeyHash(format.V2, "é"), 3}},
			&rocklakev2.ColumnTag{TableId: 12, ColumnId: 2, TagKey: "é", BeginSnapshot: 3},
			[]uint64{12, 2, format.TagKeyHash(format.V1, "é"), 3}},
		{format.Key{Tag: format.TagTag, Parts: []uint64{1, format.TagKeyHash(format.V2, ""), 0}},
			&rocklakev2.Tag{ObjectId: 1},
			[]uint64{1, format.TagKeyHash(format.V1, ""), 0}},
	} {
		rec := rowRecord(t, format.V2, tc.key, tc.row)
		wantRekeyed(t, down(t, rec), tc.key, tc.row, tc.want)
		_, value := rec.Raw()

		// The same row under another hash: not a key v1→v2 makes.
		bad := tc.key
		bad.Parts = append([]uint64(nil), tc.key.Parts...)
		bad.Parts[len(bad.Parts)-2] ^= 1
		badKey, _ := format.EncodeKey(format.V2, bad)
		rec, err := ndjson.NewRecord(format.V2, badKey, value)
		if err != nil {
			t.Fatal(err)
		}
		_, err = migration.Records(rec, pathOf(t, format.V2, format.V1), carryOpts)
		wantRefusal(t, err, badKey, "tag_key_hash")
	}
}

// copyAlong writes every record of c (format v) along the path to format
// w, with opts, into a new catalog at to, the version key aside: Finalize
// writes it, with counters. each, if not nil, sees every record read. It
// returns how many records it wrote.
func copyAlong(t *testing.T, ctx context.Context, c *catalog.Catalog, to string, v, w format.Version, opts migration.Options, counters catalog.Counters, each func(ndjson.Record)) int {
	t.Helper()
	in, err := catalog.NewInitializer(ctx, to, w, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	p := pathOf(t, v, w)
	var b slatedb.Batch
	n := 0
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ndjson.NewRecord(v, e.Key, e.Value)
		if err != nil {
			t.Fatal(err)
		}
		if each != nil {
			each(rec)
		}
		out, err := migration.Records(rec, p, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out {
			if k, val := o.Raw(); !bytes.Equal(k, format.FormatVersionKey()) {
				b.Put(k, val)
				n++
			}
		}
	}
	if err := in.WriteAsync(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := in.Finalize(ctx, counters); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	return n
}

// wantRefusal holds err to a NoTargetFormError naming key and cause.
func wantRefusal(t *testing.T, err error, key []byte, cause string) {
	t.Helper()
	var nf *migration.NoTargetFormError
	if !errors.As(err, &nf) || !errors.Is(err, migration.ErrNoTargetForm) || errname.Of(err) != migration.ErrNoTargetForm.ErrorName() {
		t.Fatalf("err = %v (name %q), want NoTargetForm", err, errname.Of(err))
	}
	if !bytes.Equal(nf.Key, key) || nf.To != format.V1 {
		t.Fatalf("refusal %+v, want key %x", nf, key)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("%x", key)) || !strings.Contains(msg, cause) ||
		!strings.HasPrefix(msg, "migration: NoTargetForm: ") {
		t.Fatalf("message %q does not name key %x and %q", msg, key, cause)
	}
}

// A format-2 value that has no format-1 form is refused, naming the key
// and the cause, and nothing is written; never dropped.
func TestV2V1Refusals(t *testing.T) {
	p := pathOf(t, format.V2, format.V1)
	refuse := func(rec ndjson.Record, cause string) {
		t.Helper()
		key, _ := rec.Raw()
		_, err := migration.Records(rec, p, carryOpts)
		wantRefusal(t, err, key, cause)
		// Transform stops on it: nothing is published.
		r, rerr := ndjson.NewReader(shard(t, format.V2, rec))
		if rerr != nil {
			t.Fatal(rerr)
		}
		var out bytes.Buffer
		w, _ := ndjson.NewWriter(&out, ndjson.Header{CatalogFormat: format.V1, ShardCount: 1})
		if _, err := migration.Transform(t.Context(), r, w, p, carryOpts); !errors.Is(err, migration.ErrNoTargetForm) {
			t.Fatalf("transform: err = %v, want NoTargetForm", err)
		}
	}
	// Times before year 0 or after 9999 have no RFC 3339 text.
	for _, micros := range []int64{math.MinInt64, math.MaxInt64,
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() - 1,
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()} {
		refuse(snapshotV2(t, 9, proto.Int64(micros), nil), fmt.Sprintf("snapshot_time_micros %d is outside", micros))
		if _, err := migration.FormatSnapshotTime(micros); err == nil {
			t.Fatalf("FormatSnapshotTime(%d) took it", micros)
		}
	}
	// Field 100 under another wire type is an unknown field of format 2's
	// snapshot; format 1 would carry it as one, which v1→v2 would refuse.
	mistyped := protowire.AppendString(protowire.AppendTag(nil, 100, protowire.BytesType), "not a time")
	refuse(snapshotV2(t, 9, proto.Int64(1), mistyped), "unknown field 100 has the number of format v2's snapshot_time_micros")
	// A version key that does not say 2 is no catalog v1→v2 made.
	rec, err := ndjson.NewRecord(format.V2, format.FormatVersionKey(), format.EncodeFormatVersion(7))
	if err != nil {
		t.Fatal(err)
	}
	refuse(rec, "catalog-format-version 7")
	// A counter key of no known shape in format 2 (a length byte above 8)
	// that format 1 reads as next_column_id of table 0x0900000000000001.
	rec, err = ndjson.NewRecord(format.V2, []byte{0xFE, 0x10, 9, 0, 0, 0, 0, 0, 0, 1}, format.EncodeCounter(format.V1, 3))
	if err != nil || rec.Key().Raw == nil {
		t.Fatalf("record %+v, %v", rec.Key(), err)
	}
	refuse(rec, `format-1 rocklake_counters "next_column_id" key`)

	// An unknown field 3 in a format-2 snapshot would become format 1's
	// snapshot_time: a collision, as on the way up.
	unknown3 := protowire.AppendString(protowire.AppendTag(nil, 3, protowire.BytesType), "2025-01-06T09:00:37+00:00")
	rec = snapshotV2(t, 9, nil, unknown3)
	_, err = migration.Records(rec, p, carryOpts)
	var coll *migration.FieldCollisionError
	key, _ := rec.Raw()
	if !errors.As(err, &coll) || coll.Number != 3 || coll.Field != "snapshot_time" || coll.To != format.V1 || !bytes.Equal(coll.Key, key) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%x", key)) {
		t.Fatalf("unknown field 3: err = %v, want a collision with snapshot_time at key %x", err, key)
	}

	// Values no format-2 record holds are refused before any migration,
	// when the record is read: a bad checksum and a compact integer that
	// does not decode, naming the key and the cause.
	k := format.Key{Tag: format.TagDataFile, Parts: []uint64{9, 0x1234}}
	dkey, _ := format.EncodeKey(format.V2, k)
	value, _ := format.EncodeValue(format.V2, k, &rocklakev2.DataFile{DataFileId: 0x1234, TableId: 9, Path: "f.parquet"})
	value[len(value)-1] ^= 0xFF
	_, err = ndjson.NewRecord(format.V2, dkey, value)
	if !errors.Is(err, format.ErrChecksum) || errname.Of(err) != format.NameCorruptCatalog || !strings.Contains(err.Error(), fmt.Sprintf("%x", dkey)) {
		t.Fatalf("bad checksum: err = %v", err)
	}
	value[len(value)-1] ^= 0xFF
	nonMinimal := []byte{0x0B, 0x01, 0x09, 0x03, 0x00, 0x12, 0x34}
	if _, err = ndjson.NewRecord(format.V2, nonMinimal, value); !errors.Is(err, format.ErrNonMinimalInt) {
		t.Fatalf("non-minimal integer: err = %v", err)
	}
}

// The registry holds steps both ways: v2→v1 is one step down, v1→v2 is
// unchanged, and a step between versions that are not adjacent, or one
// registered twice, is a programming error.
func TestPathDown(t *testing.T) {
	p, err := migration.Path(format.V2, format.V1)
	if err != nil || len(p) != 1 || p[0].From != format.V2 || p[0].To != format.V1 || p[0].Apply == nil {
		t.Fatalf("v2→v1 = %+v, %v", p, err)
	}
	in := map[string]uint64{"ducklake_data_file": 10, "ducklake_snapshot": 2, "rocklake_counters": 5}
	if out := migration.ExpectCounts(p, in); !reflect.DeepEqual(out, in) {
		t.Fatalf("expected counts %v, want %v (v2→v1 keeps every record)", out, in)
	}
	if up, err := migration.Path(format.V1, format.V2); err != nil || len(up) != 1 || up[0].From != format.V1 || up[0].To != format.V2 {
		t.Fatalf("v1→v2 = %+v, %v", up, err)
	}
	if p, err := migration.Path(format.V2, format.V2); err != nil || len(p) != 0 {
		t.Fatalf("v2→v2 = %v, %v", p, err)
	}
	for _, m := range []migration.Conversion{
		{From: format.V1, To: 3},
		{From: 3, To: format.V1},
		{From: format.V1, To: format.V1},
		{From: format.V2, To: format.V1}, // registered already
		{From: format.V1, To: format.V2},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("Register(%s→%s) did not panic", m.From, m.To)
				}
			}()
			migration.Register(m)
		}()
	}
	if p, err := migration.Path(format.V2, format.V1); err != nil || len(p) != 1 {
		t.Fatalf("after the refused registrations, v2→v1 = %v, %v", p, err)
	}
}

// FormatSnapshotTime is chrono's to_rfc3339 of the instant, and
// ParseSnapshotTime reads it back to the microsecond; outside the years
// RFC 3339 writes it refuses.
func FuzzFormatSnapshotTime(f *testing.F) {
	for _, m := range []int64{0, -1, 1, 1736154037123456, 1736154037123000, 1736154037000000, math.MinInt64, math.MaxInt64,
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro(), time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()} {
		f.Add(m)
	}
	lo := time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, micros int64) {
		text, err := migration.FormatSnapshotTime(micros)
		tm := time.UnixMicro(micros).UTC()
		inRange := !tm.Before(lo) && tm.Before(hi)
		if err != nil {
			if inRange {
				t.Fatalf("%d (%s) refused: %v", micros, tm, err)
			}
			return
		}
		if !inRange {
			t.Fatalf("%d (%s) written as %q", micros, tm, text)
		}
		if want := chronoText(tm); text != want {
			t.Fatalf("%d: %q, chrono writes %q", micros, text, want)
		}
		back, err := migration.ParseSnapshotTime(text)
		if err != nil || back.UnixMicro() != micros {
			t.Fatalf("%q read back as %d (%v), want %d", text, back.UnixMicro(), err, micros)
		}
	})
}

// v2→v1 on format-2 records built from fuzzed fields (any key shape, any
// components, any row filled or empty, any snapshot time, any tag key, any
// unknown fields, keys of no known shape): either a named refusal that
// names the key, or a well-formed format-1 record that v1→v2 takes back to
// the same bytes (a snapshot, which both ways rebuild, to its canonical
// encoding).
func FuzzV2V1RoundTrip(f *testing.F) {
	shapes := format.Shapes()
	snapshot, tag := -1, -1
	for i, s := range shapes {
		switch s.Tag {
		case format.TagSnapshot:
			snapshot = i
		case format.TagTag:
			tag = i
		}
	}
	unknown900 := protowire.AppendString(protowire.AppendTag(nil, 900, protowire.BytesType), "x")
	for i := range shapes {
		f.Add(uint8(i), uint64(i+1), uint64(300), uint64(1<<40), "owner", int64(1736154037123456), true, []byte(nil), uint8(1))
		f.Add(uint8(i), uint64(0), uint64(math.MaxUint64), uint64(255), "é", int64(0), false, unknown900, uint8(2))
	}
	f.Add(uint8(snapshot), uint64(5), uint64(0), uint64(0), "", int64(math.MaxInt64), true, []byte(nil), uint8(1))
	f.Add(uint8(snapshot), uint64(5), uint64(0), uint64(0), "", int64(-62167219200000001), true, []byte(nil), uint8(0))
	f.Add(uint8(snapshot), uint64(5), uint64(0), uint64(0), "", int64(-1), true, protowire.AppendVarint(protowire.AppendTag(nil, 3, protowire.VarintType), 1), uint8(1))
	f.Add(uint8(snapshot), uint64(5), uint64(0), uint64(0), "", int64(7), true, protowire.AppendString(protowire.AppendTag(nil, 100, protowire.BytesType), "x"), uint8(1))
	f.Add(uint8(snapshot), uint64(5), uint64(0), uint64(0), "", int64(7), false, protowire.AppendVarint(protowire.AppendTag(nil, 100, protowire.VarintType), 9), uint8(1))
	f.Add(uint8(tag), uint64(5), uint64(7), uint64(9), "pii", int64(0), false, protowire.AppendString(protowire.AppendTag(nil, 2, protowire.BytesType), "other"), uint8(1))
	f.Add(uint8(len(shapes)), uint64(1), uint64(0), uint64(0), "enabled", int64(0), false, []byte("future-flag"), uint8(0))
	f.Add(uint8(len(shapes)), uint64(0), uint64(0), uint64(0), "x", int64(0), false, []byte{0x10, 9, 0, 0, 0, 0, 0, 0, 0, 1}, uint8(0))
	f.Add(uint8(len(shapes)), uint64(0), uint64(0), uint64(0), "x", int64(0), false, []byte{0x10, 1, 0}, uint8(0))

	up, downPath := pathOf(f, format.V1, format.V2), pathOf(f, format.V2, format.V1)
	f.Fuzz(func(t *testing.T, shape uint8, a, b, c uint64, s string, micros int64, hasMicros bool, unknown []byte, fill uint8) {
		s = strings.ToValidUTF8(s, "?")
		key, value, ok := fuzzedV2Entry(t, shapes, int(shape)%(len(shapes)+1), []uint64{a, b, c}, s, micros, hasMicros, unknown, fill)
		if !ok {
			return
		}
		rec, err := ndjson.NewRecord(format.V2, key, value)
		if err != nil {
			return // not a format-2 record: refused when read
		}
		out, err := migration.Records(rec, downPath, carryOpts)
		if err != nil {
			switch errname.Of(err) {
			case migration.ErrNoTargetForm.ErrorName(), migration.ErrFieldCollision.ErrorName(), migration.ErrNestedUnknownFields.ErrorName():
			default:
				t.Fatalf("key %x: refusal %v is not named (%q)", key, err, errname.Of(err))
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("%x", key)) {
				t.Fatalf("refusal %q does not name key %x", err, key)
			}
			return
		}
		if len(out) != 1 || out[0].Version() != format.V1 {
			t.Fatalf("key %x: %d records", key, len(out))
		}
		k1, v1 := out[0].Raw()
		if _, err := ndjson.NewRecord(format.V1, k1, v1); err != nil {
			t.Fatalf("key %x went down to %x = %x, which does not read: %v", key, k1, v1, err)
		}
		back, err := migration.Records(out[0], up, carryOpts)
		if err != nil || len(back) != 1 {
			t.Fatalf("key %x went down to %x = %x, which does not go back up: %v", key, k1, v1, err)
		}
		want := value
		if rec.Tag() == format.TagSnapshot {
			if want, err = format.EncodeValue(format.V2, rec.Key(), rec.Row()); err != nil {
				t.Fatal(err)
			}
		}
		if k, v := back[0].Raw(); !bytes.Equal(k, key) || !bytes.Equal(v, want) {
			t.Fatalf("v2→v1→v2 of %x = %x\n via %x = %x\n gave %x = %x, want %x", key, value, k1, v1, k, v, want)
		}
	})
}

// fuzzedV2Entry builds the raw key and value of a format-2 entry of
// shapes[i] (i == len(shapes): a counter or system key of the raw bytes
// in unknown), false when the fields make none.
func fuzzedV2Entry(t *testing.T, shapes []format.Key, i int, ints []uint64, s string, micros int64, hasMicros bool, unknown []byte, fill uint8) ([]byte, []byte, bool) {
	if i == len(shapes) {
		tag := byte(format.TagSystem)
		if ints[0]%2 == 0 {
			tag = byte(format.TagCounter)
		}
		return append([]byte{tag}, unknown...), []byte(s), true
	}
	k := shapes[i]
	for j, fd := range format.Fields(k.Tag, k.Name) {
		if fd.Str {
			k.Strs = append(k.Strs, s)
		} else {
			k.Parts = append(k.Parts, ints[j%len(ints)])
		}
	}
	if _, err := format.EncodeKey(format.V2, k); err != nil {
		for j := range k.Parts { // u8 and u32 components
			k.Parts[j] %= 256
		}
	}
	var value []byte
	switch format.ValueKindOf(k) {
	case format.ValueCounter:
		value = format.EncodeCounter(format.V2, ints[0])
	case format.ValueVersion:
		value = format.EncodeFormatVersion(uint32(ints[1] % 4))
	case format.ValueEnveloped:
		value = format.EncodeEnvelope(format.V2, []byte(s))
	case format.ValueRaw:
		value = []byte(s)
	default:
		row, err := format.NewRow(format.V2, k)
		if err != nil {
			t.Fatal(err)
		}
		m := row.ProtoReflect()
		if fill%3 != 0 {
			catalogfixture.Fill(m, uint64(fill%3))
		}
		switch r := row.(type) {
		case *rocklakev2.Snapshot:
			r.SnapshotTimeMicros = nil
			if hasMicros {
				r.SnapshotTimeMicros = proto.Int64(micros)
			}
		case *rocklakev2.Tag, *rocklakev2.ColumnTag:
			m.Set(m.Descriptor().Fields().ByName("tag_key"), protoreflect.ValueOfString(s))
			for j, fd := range format.Fields(k.Tag, k.Name) {
				// Keyed as format 2 keys it, but now and then not.
				if fd.Name == "tag_key_hash" && ints[2]%7 != 0 {
					k.Parts[j] = format.TagKeyHash(format.V2, s)
				}
			}
		}
		payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(row)
		if err != nil {
			return nil, nil, false
		}
		value = format.EncodeEnvelope(format.V2, append(payload, unknown...))
	}
	key, err := format.EncodeKey(format.V2, k)
	if err != nil {
		return nil, nil, false
	}
	return key, value, true
}
