package ndjson_test

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// Strings that exercise escaping: quotes, backslashes, every control
// character, DEL, multi-byte runes, U+2028, and an empty string.
var edgeStrings = []string{
	"", `"`, `\`, `a"b\c`, "\x00\x01\x1f\x7f", "\b\f\n\r\t", "é", "😀 ok", "\u2028\u2029", "</script>&",
	func() string {
		var b strings.Builder
		for c := range 0x20 {
			b.WriteByte(byte(c))
		}
		return b.String()
	}(),
}

var edgeInts = []int64{0, 1, -1, 127, 128, -128, 1 << 53, math.MaxInt64, math.MinInt64}

// randomRow fills a row of m's type at random: each field present or not,
// values from the edge cases above or random, enums known or not.
func randomRow(rng *rand.Rand, m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if rng.IntN(3) == 0 {
			continue
		}
		if fd.IsList() {
			l := m.Mutable(fd).List()
			for range rng.IntN(3) {
				e := l.NewElement()
				randomRow(rng, e.Message())
				l.Append(e)
			}
			continue
		}
		var v protoreflect.Value
		switch fd.Kind() {
		case protoreflect.MessageKind:
			randomRow(rng, m.Mutable(fd).Message())
			continue
		case protoreflect.Uint64Kind:
			v = protoreflect.ValueOfUint64([]uint64{0, 1, math.MaxUint64, rng.Uint64(), rng.Uint64() >> rng.IntN(64)}[rng.IntN(5)])
		case protoreflect.Int64Kind:
			v = protoreflect.ValueOfInt64([]int64{edgeInts[rng.IntN(len(edgeInts))], rng.Int64() - rng.Int64()}[rng.IntN(2)])
		case protoreflect.BoolKind:
			v = protoreflect.ValueOfBool(rng.IntN(2) == 0)
		case protoreflect.StringKind:
			v = protoreflect.ValueOfString(edgeStrings[rng.IntN(len(edgeStrings))])
		case protoreflect.EnumKind:
			v = protoreflect.ValueOfEnum(protoreflect.EnumNumber([]int32{0, 1, 3, 7, -1, math.MinInt32}[rng.IntN(6)]))
		default:
			panic("randomRow: teach me about " + fd.Kind().String())
		}
		m.Set(fd, v)
	}
}

func randomKey(rng *rand.Rand, v format.Version, t format.Tag) format.Key {
	switch t {
	case format.TagCounter:
		return format.Key{Tag: t, Name: format.CounterNextTableID}
	case format.TagSystem:
		return format.Key{Tag: t, Name: format.SystemHotKey}
	}
	parts := make([]uint64, len(format.ComponentNames(v, t)))
	for i := range parts {
		parts[i] = rng.Uint64() >> rng.IntN(64)
	}
	return format.Key{Tag: t, Parts: parts}
}

// Random rows of every type: the row JSON is exactly protojson's (with
// proto names, spaces removed), and the record comes back byte for byte.
func TestRandomRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, v := range versions {
		var in []ndjson.Record
		var wantRows []string
		for _, tag := range format.KnownTags() {
			for range 200 {
				row, _ := format.NewRow(v, tag)
				randomRow(rng, row.ProtoReflect())
				if rng.IntN(4) == 0 {
					row.ProtoReflect().SetUnknown(unknownFields)
				}
				r, err := ndjson.NewRowRecord(v, randomKey(rng, v, tag), row)
				if err != nil {
					t.Fatal(err)
				}
				in = append(in, r)
				pj, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(row)
				if err != nil {
					t.Fatal(err)
				}
				var compact bytes.Buffer
				if err := json.Compact(&compact, pj); err != nil {
					t.Fatal(err)
				}
				wantRows = append(wantRows, compact.String())
			}
		}
		file := encode(t, header(v), in)
		lines := strings.Split(string(file), "\n")[1:]
		for i, want := range wantRows {
			var l struct{ Row json.RawMessage }
			if err := json.Unmarshal([]byte(lines[i]), &l); err != nil {
				t.Fatalf("%s line %d: %v\n%s", v, i+2, err, lines[i])
			}
			if string(l.Row) != want {
				t.Fatalf("%s %s row\n%s\nprotojson writes\n%s", v, in[i].Tag(), l.Row, want)
			}
			// protojson reads it back as the same row.
			back, _ := format.NewRow(v, in[i].Tag())
			if err := protojson.Unmarshal(l.Row, back); err != nil {
				t.Fatalf("protojson cannot read %s: %v", l.Row, err)
			}
			back.ProtoReflect().SetUnknown(in[i].Unknown())
			if !proto.Equal(back, in[i].Row()) {
				t.Fatalf("protojson reads %s as %v, want %v", l.Row, back, in[i].Row())
			}
		}
		_, out, err := readAll(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range out {
			gk, gv := r.Raw()
			wk, wv := in[i].Raw()
			if !bytes.Equal(gk, wk) || !bytes.Equal(gv, wv) || !proto.Equal(r.Row(), in[i].Row()) {
				t.Fatalf("%s %s: read back %x=%x %v, wrote %x=%x %v", v, r.Tag(), gk, gv, r.Row(), wk, wv, in[i].Row())
			}
		}
	}
}

// JSON another writer might produce for the same row (escapes, spacing) is
// read as that row, as long as the trailer matches the bytes.
func TestReadsOtherSpellings(t *testing.T) {
	for line, want := range map[string]proto.Message{
		`{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"key":"\u00e9\ud83d\ude00\/\"","value":"x\ty"}}`: metadataRow("é😀/\"", "x\ty"),
		` { "table" : "ducklake_metadata" , "tag" : 1 , "key" : { "metadata_id" : "1" } , "row" : { "key" : "k" } } `:           metadataRow("k", ""),
		`{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"key":"","value":"\u0000"}}`:                     metadataRow("", "\x00"),
	} {
		_, rs, err := readAll(strings.NewReader(shardOf(t, format.V1, line)))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if !proto.Equal(rs[0].Row(), want) {
			t.Errorf("%s read as %v, want %v", line, rs[0].Row(), want)
		}
		if _, val := rs[0].Raw(); !bytes.Equal(val, mustEncode(t, format.V1, want)) {
			t.Errorf("%s: value %x is not the canonical encoding", line, val)
		}
	}
	for name, line := range map[string]string{
		"lone surrogate":       `{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"key":"\ud83d"}}`,
		"bad escape":           `{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"key":"\x"}}`,
		"short \\u":            `{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"key":"\u12"}}`,
		"raw control char":     "{\"table\":\"ducklake_metadata\",\"tag\":1,\"key\":{\"metadata_id\":\"1\"},\"row\":{\"key\":\"a\tb\"}}",
		"invalid UTF-8":        "{\"table\":\"ducklake_metadata\",\"tag\":1,\"key\":{\"metadata_id\":\"1\"},\"row\":{\"key\":\"\xff\"}}",
		"fields out of order":  `{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"value":"v","key":"k"}}`,
		"field twice":          `{"table":"ducklake_metadata","tag":1,"key":{"metadata_id":"1"},"row":{"key":"k","key":"k"}}`,
		"members out of order": `{"tag":1,"table":"ducklake_metadata","key":{"metadata_id":"1"},"row":{}}`,
		"int64 as number":      `{"table":"ducklake_table_stats","tag":12,"key":{"table_id":"1"},"row":{"record_count":5}}`,
		"int64 minus zero":     `{"table":"ducklake_table_stats","tag":12,"key":{"table_id":"1"},"row":{"record_count":"-0"}}`,
		"int64 overflow":       `{"table":"ducklake_table_stats","tag":12,"key":{"table_id":"1"},"row":{"record_count":"9223372036854775808"}}`,
		"bool as string":       `{"table":"ducklake_table_column_stats","tag":13,"key":{"table_id":"1","column_id":"2"},"row":{"contains_null":"true"}}`,
		"enum unknown name":    `{"table":"rocklake_name_index","tag":128,"key":{"parent_id":"1","name_hash":"2"},"row":{"entries":[{"kind":"OBJECT_KIND_FUNCTION"}]}}`,
		"enum out of range":    `{"table":"rocklake_name_index","tag":128,"key":{"parent_id":"1","name_hash":"2"},"row":{"entries":[{"kind":2147483648}]}}`,
		"list not an array":    `{"table":"rocklake_name_index","tag":128,"key":{"parent_id":"1","name_hash":"2"},"row":{"entries":{}}}`,
		"counter as object":    `{"table":"rocklake_counter","tag":254,"name":"next-file-id","row":{"value":"1"}}`,
	} {
		if _, _, err := readAll(strings.NewReader(shardOf(t, format.V1, line))); err == nil {
			t.Errorf("%s: %s read without error", name, line)
		}
	}
	// The smallest int64 and a negative enum survive.
	_, rs, err := readAll(strings.NewReader(shardOf(t, format.V1,
		`{"table":"ducklake_table_stats","tag":12,"key":{"table_id":"1"},"row":{"record_count":"-9223372036854775808"}}`,
		`{"table":"rocklake_name_index","tag":128,"key":{"parent_id":"1","name_hash":"2"},"row":{"entries":[{"kind":-5}]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := rs[0].Row().ProtoReflect().Get(rs[0].Row().ProtoReflect().Descriptor().Fields().ByName("record_count")).Int(); got != math.MinInt64 {
		t.Errorf("record_count %d", got)
	}
	if _, val := rs[1].Raw(); !bytes.Equal(val, mustEncode(t, format.V1, rs[1].Row())) {
		t.Errorf("negative enum: value %x is not the canonical encoding", val)
	}
}

func metadataRow(key, value string) proto.Message {
	row, _ := format.NewRow(format.V1, format.TagMetadata)
	m := row.ProtoReflect()
	m.Set(m.Descriptor().Fields().ByName("key"), protoreflect.ValueOfString(key))
	m.Set(m.Descriptor().Fields().ByName("value"), protoreflect.ValueOfString(value))
	return row
}

func mustEncode(t *testing.T, v format.Version, row proto.Message) []byte {
	t.Helper()
	b, err := format.EncodeValue(v, row)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
