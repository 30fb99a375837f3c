package ndjson_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// The wire codec against the oracle (oracle_test.go): protojson and the
// line's documented members. The same entries accepted, the same lines,
// the same entries read back.

// sameAsOracle checks the codec against the oracle on one stored entry,
// and that the entry reads back from its line as the same bytes.
func sameAsOracle(t *testing.T, v format.Version, key, value []byte) {
	t.Helper()
	r, err := ndjson.NewRecord(v, key, value)
	want, oerr := oracleLine(v, key, value)
	if (err == nil) != (oerr == nil) {
		t.Fatalf("%s %x=%x: codec error %v, oracle error %v", v, key, value, err, oerr)
	}
	if err != nil {
		return
	}
	line, err := ndjson.LineOf(r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(line, want) {
		t.Fatalf("%s %x=%x:\ncodec  %s\noracle %s", v, key, value, line, want)
	}
	back, err := ndjson.ReadLine(v, line[:len(line)-1])
	if err != nil {
		t.Fatalf("%s line %s does not read back: %v", v, line, err)
	}
	if k, val := back.Raw(); !bytes.Equal(k, key) || !bytes.Equal(val, value) {
		t.Fatalf("%s line %s reads back as %x=%x, want %x=%x", v, line, k, val, key, value)
	}
	if back.NestedUnknown() != r.NestedUnknown() {
		t.Fatalf("%s line %s: NestedUnknown %t, read back %t", v, line, r.NestedUnknown(), back.NestedUnknown())
	}
	if ok, ov, canonical := oracleCanonical(v, want[:len(want)-1]); !canonical || !bytes.Equal(ok, key) || !bytes.Equal(ov, value) {
		t.Fatalf("%s oracle reads its line %s as %x=%x (canonical %t)", v, want, ok, ov, canonical)
	}
}

// sameLineAsOracle reads one line with both. A line the codec reads, the
// oracle reads as the same entry; a line that is the one spelling of an
// entry (oracleCanonical), the codec reads. The oracle alone reads what
// the codec refuses as another spelling (members out of order, say).
func sameLineAsOracle(t *testing.T, v format.Version, line []byte) {
	t.Helper()
	r, err := ndjson.ReadLine(v, line)
	ck, cv, canonical := oracleCanonical(v, line)
	switch {
	case err == nil:
		ok, ov, oerr := oracleRead(v, line)
		if k, val := r.Raw(); oerr != nil || !bytes.Equal(k, ok) || !bytes.Equal(val, ov) {
			t.Fatalf("%s line %q: codec reads %x=%x, oracle %x=%x (%v)", v, line, k, val, ok, ov, oerr)
		}
	case canonical:
		t.Fatalf("%s line %q, the line of %x=%x: codec error %v", v, line, ck, cv, err)
	}
}

// randomUnknown returns up to three fields of numbers no row uses, of
// every wire type, a group included.
func randomUnknown(rng *rand.Rand) []byte {
	var b []byte
	for range 1 + rng.IntN(3) {
		num := protowire.Number(500 + rng.IntN(3000))
		switch rng.IntN(5) {
		case 0:
			b = protowire.AppendVarint(protowire.AppendTag(b, num, protowire.VarintType), rng.Uint64()>>rng.IntN(64))
		case 1:
			b = protowire.AppendString(protowire.AppendTag(b, num, protowire.BytesType), edgeStrings[rng.IntN(len(edgeStrings))])
		case 2:
			b = protowire.AppendFixed32(protowire.AppendTag(b, num, protowire.Fixed32Type), rng.Uint32())
		case 3:
			b = protowire.AppendFixed64(protowire.AppendTag(b, num, protowire.Fixed64Type), rng.Uint64())
		default:
			b = protowire.AppendTag(b, num, protowire.StartGroupType)
			b = protowire.AppendVarint(protowire.AppendTag(b, 1, protowire.VarintType), 7)
			b = protowire.AppendTag(b, num, protowire.EndGroupType)
		}
	}
	return b
}

// addNestedUnknown gives nested messages of m unknown fields, at random;
// it reports whether it gave any.
func addNestedUnknown(rng *rand.Rand, m protoreflect.Message, depth int) bool {
	added := false
	if depth > 0 && rng.IntN(2) == 0 {
		m.SetUnknown(append(m.GetUnknown(), randomUnknown(rng)...))
		added = true
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind:
		case fd.IsList():
			for i := range v.List().Len() {
				added = addNestedUnknown(rng, v.List().Get(i).Message(), depth+1) || added
			}
		default:
			added = addNestedUnknown(rng, v.Message(), depth+1) || added
		}
		return true
	})
	return added
}

// fieldsOf splits an encoding into its fields, or nil if it is not one.
func fieldsOf(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return nil
		}
		out, b = append(out, b[:n+m]), b[n+m:]
	}
	return out
}

// scramble changes a row's encoding as another writer, or a damaged
// value, might: fields reordered or repeated, an unknown field first,
// longer varints than needed, a zero written out, a bool of 2, bytes
// flipped or cut.
func scramble(rng *rand.Rand, p []byte) []byte {
	fs := fieldsOf(p)
	switch rng.IntN(9) {
	case 0:
		slices.Reverse(fs)
	case 1:
		if len(fs) > 0 {
			i := rng.IntN(len(fs))
			fs = slices.Insert(fs, rng.IntN(len(fs)+1), fs[i])
		}
	case 2:
		fs = slices.Insert(fs, 0, randomUnknown(rng))
	case 3:
		if len(fs) > 0 && fs[0][0] < 0x80 {
			// A tag of two bytes where one would do.
			i := rng.IntN(len(fs))
			if fs[i][0] < 0x80 {
				fs[i] = append([]byte{fs[i][0] | 0x80, 0}, fs[i][1:]...)
			}
		}
	case 4:
		// Field 1 (or 2) as a zero varint: implicit zeros are not written.
		fs = slices.Insert(fs, 0, []byte{byte(1+rng.IntN(2)) << 3, 0})
	case 5:
		fs = slices.Insert(fs, 0, []byte{byte(1+rng.IntN(20)) << 3, 2})
	case 6:
		b := bytes.Clone(p)
		if len(b) > 0 {
			b[rng.IntN(len(b))] ^= byte(1 << rng.IntN(8))
		}
		return b
	case 7:
		return p[:rng.IntN(len(p)+1)]
	default:
		// A known field with another wire type: Go keeps it as unknown.
		fs = append(fs, protowire.AppendFixed32(protowire.AppendTag(nil, protowire.Number(1+rng.IntN(6)), protowire.Fixed32Type), 1))
	}
	return bytes.Join(fs, nil)
}

// randomEntry is a random entry of key shape k: a random row, with
// unknown fields at the top or nested at random, scrambled at random.
func randomEntry(t *testing.T, rng *rand.Rand, v format.Version, shape format.Key) (key, value []byte) {
	k := randomKey(rng, v, shape)
	key, err := format.EncodeKey(v, k)
	if err != nil {
		t.Fatal(err)
	}
	row, err := format.NewRow(v, k)
	if err != nil {
		t.Fatal(err)
	}
	randomRow(rng, row.ProtoReflect())
	if format.ValueKindOf(k) != format.ValueRow {
		value, err := format.EncodeValue(v, k, row)
		if err != nil {
			t.Fatal(err)
		}
		return key, value
	}
	if rng.IntN(3) == 0 {
		row.ProtoReflect().SetUnknown(randomUnknown(rng))
	}
	if rng.IntN(3) == 0 {
		addNestedUnknown(rng, row.ProtoReflect(), 0)
	}
	value, err = format.EncodeValue(v, k, row)
	if err != nil {
		t.Fatal(err)
	}
	if rng.IntN(4) == 0 {
		payload, _ := format.DecodeEnvelope(v, value)
		value = format.EncodeEnvelope(v, scramble(rng, payload))
	}
	return key, value
}

func TestCodecLikeOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, v := range versions {
		for _, e := range allEntries(t, v) {
			sameAsOracle(t, v, e.key, e.value)
		}
		nested := 0
		for _, shape := range catalogfixture.Keys(0) {
			for range 300 {
				key, value := randomEntry(t, rng, v, shape)
				sameAsOracle(t, v, key, value)
				if r, err := ndjson.NewRecord(v, key, value); err == nil {
					if r.NestedUnknown() {
						nested++
					}
					line, _ := ndjson.LineOf(r)
					sameLineAsOracle(t, v, line[:len(line)-1])
				}
			}
		}
		if nested == 0 {
			t.Errorf("%s: no row with a nested message's unknown fields was tried", v)
		}
	}
}

// FuzzCodecLikeOracle: an arbitrary row encoding of any key shape, and an
// arbitrary record line, through the codec and the oracle.
// Run: go test ./pkg/ndjson -run '^$' -fuzz '^FuzzCodecLikeOracle$' -fuzztime 60s
func FuzzCodecLikeOracle(f *testing.F) {
	shapes := catalogfixture.Keys(0)
	for _, v := range versions {
		file := string(encode(f, header(v), records(f, v, allEntries(f, v))))
		lines := strings.Split(file, "\n")
		for i, l := range lines[1 : len(lines)-2] {
			e := allEntries(f, v)[i]
			payload, err := format.DecodeEnvelope(v, e.value)
			if err != nil {
				payload = e.value
			}
			f.Add(uint8(v), uint16(i), payload, l)
		}
	}
	f.Fuzz(func(t *testing.T, vb uint8, si uint16, payload []byte, line string) {
		v := format.Version(vb%2 + 1)
		shape := shapes[int(si)%len(shapes)]
		k := randomKey(rand.New(rand.NewPCG(uint64(si), 1)), v, shape)
		key, err := format.EncodeKey(v, k)
		if err != nil {
			t.Fatal(err)
		}
		var value []byte
		switch format.ValueKindOf(k) {
		case format.ValueRaw:
			value = payload
		case format.ValueVersion:
			value = format.EncodeEnvelope(format.V1, payload)
		default:
			value = format.EncodeEnvelope(v, payload)
		}
		sameAsOracle(t, v, key, value)
		if !strings.ContainsRune(line, '\n') {
			sameLineAsOracle(t, v, []byte(line))
		}
	})
}
