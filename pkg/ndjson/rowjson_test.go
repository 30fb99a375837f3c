package ndjson_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
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
		case protoreflect.Uint32Kind:
			v = protoreflect.ValueOfUint32([]uint32{0, 1, math.MaxUint32, rng.Uint32(), rng.Uint32() >> rng.IntN(32)}[rng.IntN(5)])
		case protoreflect.BytesKind:
			b := make([]byte, rng.IntN(4)*rng.IntN(20))
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			v = protoreflect.ValueOfBytes(b)
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

// randomKey returns a key of k's shape with random components: integers
// of every length (those of one or four bytes in range), strings from
// edgeStrings.
func randomKey(rng *rand.Rand, v format.Version, k format.Key) format.Key {
	for {
		out := format.Key{Tag: k.Tag, Name: k.Name}
		for _, f := range format.Fields(k.Tag, k.Name) {
			if f.Str {
				out.Strs = append(out.Strs, edgeStrings[rng.IntN(len(edgeStrings))])
			} else {
				out.Parts = append(out.Parts, rng.Uint64()>>rng.IntN(64))
			}
		}
		if _, err := format.EncodeKey(v, out); err == nil {
			return out
		} else if !errors.Is(err, format.ErrIntRange) {
			panic(err)
		}
	}
}

// Random rows of every type: the row JSON is exactly protojson's (with
// proto names, spaces removed), and the record comes back byte for byte.
func TestRandomRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, v := range versions {
		var in []ndjson.Record
		var wantRows []string
		for _, shape := range catalogfixture.Keys(0) {
			for range 200 {
				k := randomKey(rng, v, shape)
				row, err := format.NewRow(v, k)
				if err != nil {
					t.Fatal(err)
				}
				randomRow(rng, row.ProtoReflect())
				if format.ValueKindOf(k) == format.ValueRow && rng.IntN(4) == 0 {
					row.ProtoReflect().SetUnknown(unknownFields)
				}
				r, err := ndjson.NewRowRecord(v, k, row)
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
			back, _ := format.NewRow(v, in[i].Key())
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
			if !bytes.Equal(gk, wk) || !bytes.Equal(gv, wv) || !proto.Equal(r.Row(), in[i].Row()) || !reflect.DeepEqual(r.Key(), in[i].Key()) {
				t.Fatalf("%s %s: read back %x=%x %v, wrote %x=%x %v", v, r.Tag(), gk, gv, r.Row(), wk, wv, in[i].Row())
			}
		}
	}
}

// JSON another writer might produce for the same row (escapes, spacing) is
// read as that row, as long as the trailer matches the bytes.
func TestReadsOtherSpellings(t *testing.T) {
	const meta = `{"table":"ducklake_metadata","tag":1,"key":{"scope":"0","scope_id":"0","key":"k"},"row":`
	const df = `{"table":"ducklake_data_file","tag":11,"key":{"table_id":"1","data_file_id":"2"},"row":`
	const ins = `{"table":"rocklake_inlined_rows","tag":253,"name":"insert","key":{"table_id":"1","schema_version":"2","row_id":"3"},"row":`
	const hot = `{"table":"rocklake_system","tag":255,"name":"hot-key","row":`
	for line, want := range map[string]proto.Message{
		meta + `{"key":"\u00e9\ud83d\ude00\/\"","value":"x\ty"}}`:                                                                                metadataRow("é😀/\"", "x\ty"),
		` { "table" : "ducklake_metadata" , "tag" : 1 , "key" : { "scope" : "0" , "scope_id" : "0" , "key" : "k" } , "row" : { "key" : "k" } } `: metadataRow("k", ""),
		meta + `{"key":"","value":"\u0000"}}`:                                                                                                    metadataRow("", "\x00"),
	} {
		_, rs, err := readAll(strings.NewReader(shardOf(t, format.V1, line)))
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		if !proto.Equal(rs[0].Row(), want) {
			t.Errorf("%s read as %v, want %v", line, rs[0].Row(), want)
		}
		if _, val := rs[0].Raw(); !bytes.Equal(val, mustEncode(t, format.V1, rs[0].Key(), want)) {
			t.Errorf("%s: value %x is not the canonical encoding", line, val)
		}
	}
	for name, line := range map[string]string{
		"lone surrogate":       meta + `{"key":"\ud83d"}}`,
		"bad escape":           meta + `{"key":"\x"}}`,
		"short \\u":            meta + `{"key":"\u12"}}`,
		"raw control char":     meta + "{\"key\":\"a\tb\"}}",
		"invalid UTF-8":        meta + "{\"key\":\"\xff\"}}",
		"fields out of order":  meta + `{"value":"v","key":"k"}}`,
		"field twice":          meta + `{"key":"k","key":"k"}}`,
		"members out of order": `{"tag":1,"table":"ducklake_metadata","key":{"scope":"0","scope_id":"0","key":"k"},"row":{}}`,
		"uint64 as number":     df + `{"record_count":5}}`,
		"int64 as number":      df + `{"footer_size":5}}`,
		"int64 minus zero":     df + `{"footer_size":"-0"}}`,
		"int64 overflow":       df + `{"footer_size":"9223372036854775808"}}`,
		"bool as string":       df + `{"path_is_relative":"true"}}`,
		"uint32 as string":     `{"table":"rocklake_extension_schema","tag":35,"key":{"extension_id":"1","table_name":"t","row_id":"2"},"row":{"extension_id":"1"}}`,
		"uint32 overflow":      `{"table":"rocklake_extension_schema","tag":35,"key":{"extension_id":"1","table_name":"t","row_id":"2"},"row":{"extension_id":4294967296}}`,
		"bytes not base64":     ins + `{"payload":"!"}}`,
		"bytes URL-safe":       ins + `{"payload":"-_8="}}`,
		"bytes unpadded":       ins + `{"payload":"AP8"}}`,
		"list not an array":    hot + `{"table_file_counts":{}}}`,
		"list of numbers":      hot + `{"table_file_counts":[1]}}`,
	} {
		if _, _, err := readAll(strings.NewReader(shardOf(t, format.V1, line))); err == nil {
			t.Errorf("%s: %s read without error", name, line)
		}
	}
	// The smallest int64, bytes and a list survive.
	_, rs, err := readAll(strings.NewReader(shardOf(t, format.V1,
		df+`{"footer_size":"-9223372036854775808"}}`,
		ins+`{"payload":"AP8=","begin_snapshot":"4"}}`,
		hot+`{"current_snapshot_id":"9","table_file_counts":[{"table_id":"1","file_count":"2"},{}]}}`)))
	if err != nil {
		t.Fatal(err)
	}
	if got := rs[0].Row().(*rocklakev1.DataFile).GetFooterSize(); got != math.MinInt64 {
		t.Errorf("footer_size %d", got)
	}
	if got := rs[1].Row().(*rocklakev1.InlinedInsert); !bytes.Equal(got.GetPayload(), []byte{0, 0xFF}) || got.GetBeginSnapshot() != 4 {
		t.Errorf("inlined insert %v", got)
	}
	wantHot := &rocklakev1.HotKey{CurrentSnapshotId: 9, TableFileCounts: []*rocklakev1.TableFileCount{{TableId: 1, FileCount: 2}, {}}}
	if !proto.Equal(rs[2].Row(), wantHot) {
		t.Errorf("hot-key %v, want %v", rs[2].Row(), wantHot)
	}
	for _, r := range rs {
		if _, val := r.Raw(); !bytes.Equal(val, mustEncode(t, format.V1, r.Key(), r.Row())) {
			t.Errorf("%s: value %x is not the canonical encoding", r.Tag(), val)
		}
	}
}

func metadataRow(key, value string) proto.Message {
	return &rocklakev1.Metadata{Key: key, Value: value}
}

func mustEncode(t *testing.T, v format.Version, k format.Key, row proto.Message) []byte {
	t.Helper()
	b, err := format.EncodeValue(v, k, row)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
