package ndjson_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

var versions = []format.Version{format.V1, format.V2}

// entry is a catalog entry as stored: raw key and value.
type entry struct{ key, value []byte }

// shapeEntries returns catalogfixture.Entries of format v: for every shape
// of every known tag, one value with every field set and one empty row.
func shapeEntries(t testing.TB, v format.Version) []entry {
	t.Helper()
	var out []entry
	for _, e := range catalogfixture.Entries(v) {
		out = append(out, entry{e.Key, e.Value})
	}
	if len(out) < 2*len(format.KnownTags()) {
		t.Fatalf("%s: %d entries, want at least two per tag", v, len(out))
	}
	return out
}

// rowEntries are the fixture entries whose values are protobuf rows, the
// only ones that can carry unknown fields.
func rowEntries(t testing.TB, v format.Version) []entry {
	t.Helper()
	var out []entry
	for _, e := range shapeEntries(t, v) {
		if format.ValueKindOf(decodeKey(t, v, e.key)) == format.ValueRow {
			out = append(out, e)
		}
	}
	return out
}

// unknownFields are fields a newer binary might have added: a varint, a
// string and a fixed64, with numbers no row of formats 1 or 2 uses.
var unknownFields = func() []byte {
	var b []byte
	b = protowire.AppendTag(b, 900, protowire.VarintType)
	b = protowire.AppendVarint(b, 1<<40)
	b = protowire.AppendTag(b, 901, protowire.BytesType)
	b = protowire.AppendString(b, "added by format 9")
	b = protowire.AppendTag(b, 902, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, 0xDEADBEEF)
}()

// withUnknown returns e's value with unknownFields appended to the row, as
// a newer binary writing the same row would store it. e's value is a row.
func withUnknown(t testing.TB, v format.Version, e entry) entry {
	t.Helper()
	k := decodeKey(t, v, e.key)
	row := decodeRow(t, v, e)
	row.ProtoReflect().SetUnknown(append(row.ProtoReflect().GetUnknown(), unknownFields...))
	val, err := format.EncodeValue(v, k, row)
	if err != nil {
		t.Fatal(err)
	}
	return entry{e.key, val}
}

func decodeKey(t testing.TB, v format.Version, key []byte) format.Key {
	t.Helper()
	k, err := format.DecodeKey(v, key)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func decodeRow(t testing.TB, v format.Version, e entry) proto.Message {
	t.Helper()
	row, err := format.DecodeValue(v, decodeKey(t, v, e.key), e.value)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// unknownTagEntries are entries of tags RockLake does not allocate (0x1D was
// an IVM table until v0.22; 0x50 and 0xC8 never were): raw bytes, the value
// not even an envelope.
var unknownTagEntries = []entry{
	{[]byte{0xC8, 0, 1, 2}, []byte{0x01, 'S', 'D', 'K', 'V', 0x08, 0x01}},
	{[]byte{0x1D}, []byte{}},
	{[]byte{0x50, 0xFF, '\n', '"'}, []byte("not protobuf\n\x00\xff")},
}

// rawSystemEntries are counter and system keys of no shape this binary
// knows, as a newer RockLake might write them: they travel as raw bytes,
// their values whatever they are.
var rawSystemEntries = []entry{
	{format.SystemKey("future-flag"), []byte("on\x00\xff")},
	{[]byte{0xFE, 0x06}, format.EncodeCounter(format.V1, 12345)},
	{[]byte{0xFE, 0x7F, 0, 1}, []byte{}},
	{format.SystemKey(`a "quoted\" name`), []byte{0}},
	// A known name followed by more bytes is another key.
	{append(format.SystemKey(format.SystemWriterEpoch), 's'), []byte("x")},
	{[]byte{0xFF}, []byte("tag only")},
}

// systemEntries are counter and system keys of known shapes, with values
// at the edges of their types.
func systemEntries(v format.Version) []entry {
	var es []entry
	for _, name := range format.ShapeNames(format.TagCounter) {
		var table []uint64
		if len(format.Fields(format.TagCounter, name)) > 0 {
			table = []uint64{1 << 40}
		}
		es = append(es,
			entry{format.CounterKey(v, name, table...), format.EncodeCounter(v, 0)},
			entry{format.CounterKey(v, name, table...), format.EncodeCounter(v, math.MaxUint64)})
	}
	return append(es,
		entry{format.FormatVersionKey(), format.EncodeFormatVersion(uint32(v))},
		entry{format.SystemKey(format.SystemWriterNonce), []byte{0x6f, 0x1c, 0x00, 0xff, '\n', '"'}},
		entry{format.SystemKey(format.SystemEndpoint), []byte("http://127.0.0.1:5433")},
		entry{format.SystemKey(format.SystemWriterEpoch), format.EncodeCounter(v, 7)},
	)
}

// nonCanonicalEntry is a data file row whose fields are stored out of
// number order (a writer other than protobuf-go's deterministic one), so
// that re-encoding the row would change the bytes.
func nonCanonicalEntry(t testing.TB, v format.Version) entry {
	t.Helper()
	var p []byte
	p = protowire.AppendTag(p, 2, protowire.VarintType) // table_id
	p = protowire.AppendVarint(p, 3)
	p = protowire.AppendTag(p, 1, protowire.VarintType) // data_file_id
	p = protowire.AppendVarint(p, 77)
	k, err := format.EncodeKey(v, format.Key{Tag: format.TagDataFile, Parts: []uint64{3, 77}})
	if err != nil {
		t.Fatal(err)
	}
	return entry{k, format.EncodeEnvelope(v, p)}
}

// allEntries is every kind of entry the codec must carry in format v.
func allEntries(t testing.TB, v format.Version) []entry {
	t.Helper()
	es := shapeEntries(t, v)
	for _, e := range rowEntries(t, v) {
		es = append(es, withUnknown(t, v, e))
	}
	es = append(es, unknownTagEntries...)
	es = append(es, rawSystemEntries...)
	es = append(es, nonCanonicalEntry(t, v))
	return append(es, systemEntries(v)...)
}

// countsOf counts es by table, as a trailer and a digest do.
func countsOf(es []entry) map[string]uint64 {
	m := map[string]uint64{}
	for _, e := range es {
		m[format.Tag(e.key[0]).String()]++
	}
	return m
}

func records(t testing.TB, v format.Version, es []entry) []ndjson.Record {
	t.Helper()
	out := make([]ndjson.Record, len(es))
	for i, e := range es {
		r, err := ndjson.NewRecord(v, e.key, e.value)
		if err != nil {
			t.Fatalf("NewRecord(%s, %x, %x): %v", v, e.key, e.value, err)
		}
		out[i] = r
	}
	return out
}

func header(v format.Version) ndjson.Header {
	return ndjson.Header{
		CatalogFormat: v,
		ShardIndex:    2,
		ShardCount:    5,
		KeyStart:      []byte{0x05},
		KeyEnd:        []byte{0x09, 0x00, 0x01},
		CheckpointID:  "0195c0de-0000-7000-8000-000000000001",
		Source:        "s3://catalogs/prod/catalog",
		CreatedBy:     "rocklake-migrate test",
	}
}

// encode writes rs as a plain shard file with header h.
func encode(t testing.TB, h ndjson.Header, rs []ndjson.Record) []byte {
	t.Helper()
	b, _ := encodeWith(t, h, rs)
	return b
}

// encodeWith is encode, and the writer that wrote the file (its Trailer).
func encodeWith(t testing.TB, h ndjson.Header, rs []ndjson.Record) ([]byte, *ndjson.Writer) {
	t.Helper()
	var buf bytes.Buffer
	w, err := ndjson.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), w
}

// readAll reads a whole shard; the error is the first one Next returned.
func readAll(r io.Reader) (ndjson.Header, []ndjson.Record, error) {
	rd, err := ndjson.NewReader(r)
	if err != nil {
		return ndjson.Header{}, nil, err
	}
	var rs []ndjson.Record
	for {
		rec, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return rd.Header(), rs, nil
		}
		if err != nil {
			return rd.Header(), rs, err
		}
		rs = append(rs, rec)
	}
}

// sampleDataFile returns the raw entry of data file i in format v, with the
// fields a real catalog sets, about 200 bytes. It panics on an encoding
// error, which fixed valid input cannot have; that lets writer goroutines
// of tests call it.
func sampleDataFile(v format.Version, i uint64) entry {
	table := i%50 + 1
	row, err := format.NewRow(v, format.Key{Tag: format.TagDataFile})
	if err != nil {
		panic(err)
	}
	m := row.ProtoReflect()
	set := func(name string, val protoreflect.Value) {
		m.Set(m.Descriptor().Fields().ByName(protoreflect.Name(name)), val)
	}
	set("data_file_id", protoreflect.ValueOfUint64(i))
	set("table_id", protoreflect.ValueOfUint64(table))
	set("begin_snapshot", protoreflect.ValueOfUint64(i/10+1))
	set("file_order", protoreflect.ValueOfUint64(i))
	set("path", protoreflect.ValueOfString(fmt.Sprintf("main/tbl_%d/ducklake-%016x-%08d.parquet", table, i*2654435761, i)))
	set("path_is_relative", protoreflect.ValueOfBool(true))
	set("file_format", protoreflect.ValueOfString("parquet"))
	set("record_count", protoreflect.ValueOfUint64(1000+i%9000))
	set("file_size_bytes", protoreflect.ValueOfUint64(1<<20+i))
	set("footer_size", protoreflect.ValueOfInt64(int64(2048+i%512)))
	set("row_id_start", protoreflect.ValueOfUint64(i*1000))
	k, err := format.EncodeKey(v, format.Key{Tag: format.TagDataFile, Parts: []uint64{table, i}})
	if err != nil {
		panic(err)
	}
	val, err := format.EncodeValue(v, format.Key{Tag: format.TagDataFile}, row)
	if err != nil {
		panic(err)
	}
	return entry{k, val}
}

func sha256Hex(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// shardOf makes a v shard of the given record lines (without newlines),
// with the header of header(v) and the trailer that matches them.
func shardOf(t testing.TB, v format.Version, lines ...string) string {
	t.Helper()
	empty := string(encode(t, header(v), nil))
	out := empty[:strings.IndexByte(empty, '\n')+1]
	var recs strings.Builder
	counts := map[string]uint64{}
	for _, l := range lines {
		recs.WriteString(l + "\n")
		var tag struct{ Tag int }
		if json.Unmarshal([]byte(l), &tag) == nil {
			counts[format.Tag(tag.Tag).String()]++
		}
	}
	tr, err := json.Marshal(map[string]any{"trailer": ndjson.Trailer{Records: uint64(len(lines)), Counts: counts, SHA256: sha256Hex(recs.String())}})
	if err != nil {
		t.Fatal(err)
	}
	return out + recs.String() + string(tr) + "\n"
}
