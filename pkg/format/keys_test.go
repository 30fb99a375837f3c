package format_test

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

func TestComponentNamesMatchDesign(t *testing.T) {
	v1 := map[format.Tag][]string{
		format.TagMetadata:         {"metadata_id"},
		format.TagSnapshot:         {"snapshot_id"},
		format.TagSnapshotChanges:  {"snapshot_id"},
		format.TagSchema:           {"schema_id", "begin_snapshot"},
		format.TagTable:            {"table_id", "begin_snapshot"},
		format.TagView:             {"view_id", "begin_snapshot"},
		format.TagTag:              {"object_id", "begin_snapshot", "tag_id"},
		format.TagColumnTag:        {"table_id", "column_id", "begin_snapshot", "tag_id"},
		format.TagDataFile:         {"data_file_id"},
		format.TagDeleteFile:       {"delete_file_id"},
		format.TagColumn:           {"table_id", "column_id", "begin_snapshot"},
		format.TagTableStats:       {"table_id"},
		format.TagTableColumnStats: {"table_id", "column_id"},
		format.TagNameIndex:        {"parent_id", "name_hash"},
		format.TagFileDeletion:     {"data_file_id"},
		format.TagCommitLog:        {"snapshot_id"},
		format.TagCounter:          nil,
		format.TagSystem:           nil,
	}
	v2 := map[format.Tag][]string{}
	for tag, names := range v1 {
		v2[tag] = names
	}
	v2[format.TagDataFile] = []string{"table_id", "data_file_id"}
	v2[format.TagDeleteFile] = []string{"table_id", "delete_file_id"}

	for v, want := range map[format.Version]map[format.Tag][]string{format.V1: v1, format.V2: v2} {
		for _, tag := range format.KnownTags() {
			if got := format.ComponentNames(v, tag); !slices.Equal(got, want[tag]) {
				t.Errorf("ComponentNames(%s, %s) = %v, want %v", v, tag, got, want[tag])
			}
		}
		if got := format.ComponentNames(v, 0x0E); got != nil {
			t.Errorf("ComponentNames(%s, unknown) = %v", v, got)
		}
	}
	if got := format.ComponentNames(3, format.TagSnapshot); got != nil {
		t.Errorf("ComponentNames(v3) = %v", got)
	}
	format.ComponentNames(format.V1, format.TagSchema)[0] = "changed"
	if format.ComponentNames(format.V1, format.TagSchema)[0] != "schema_id" {
		t.Error("ComponentNames exposes its table")
	}
}

// Literal encodings: the contract, independent of the encoder.
func TestKeyEncodings(t *testing.T) {
	cases := []struct {
		v   format.Version
		key format.Key
		hex string
	}{
		{format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}, "02" + "0000000000000001"},
		{format.V1, format.Key{Tag: format.TagSchema, Parts: []uint64{0, 1<<64 - 1}}, "04" + "0000000000000000" + "ffffffffffffffff"},
		{format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{0x0102}}, "09" + "0000000000000102"},
		{format.V2, format.Key{Tag: format.TagSnapshot, Parts: []uint64{0}}, "02" + "00"},
		{format.V2, format.Key{Tag: format.TagSnapshot, Parts: []uint64{255}}, "02" + "01ff"},
		{format.V2, format.Key{Tag: format.TagSnapshot, Parts: []uint64{256}}, "02" + "020100"},
		{format.V2, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1 << 56}}, "02" + "080100000000000000"},
		{format.V2, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1<<64 - 1}}, "02" + "08ffffffffffffffff"},
		{format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{5, 0x0102}}, "09" + "0105" + "020102"},
		{format.V2, format.Key{Tag: format.TagColumnTag, Parts: []uint64{7, 0, 300, 1}}, "08" + "0107" + "00" + "02012c" + "0101"},
		{format.V1, format.Key{Tag: format.TagSystem, Name: "catalog-format-version"}, "ff" + hex.EncodeToString([]byte("catalog-format-version"))},
		{format.V2, format.Key{Tag: format.TagCounter, Name: "next-file-id"}, "fe" + hex.EncodeToString([]byte("next-file-id"))},
		{format.V1, format.Key{Tag: 0x0E, Raw: []byte{1, 2, 3}}, "0e010203"},
		{format.V2, format.Key{Tag: 0x42, Raw: []byte{}}, "42"},
	}
	for _, c := range cases {
		got, err := format.EncodeKey(c.v, c.key)
		if err != nil || hex.EncodeToString(got) != c.hex {
			t.Errorf("EncodeKey(%s, %+v) = %x, %v; want %s", c.v, c.key, got, err, c.hex)
			continue
		}
		back, err := format.DecodeKey(c.v, got)
		if err != nil || !keysEqual(back, c.key) {
			t.Errorf("DecodeKey(%s, %s) = %+v, %v; want %+v", c.v, c.hex, back, err, c.key)
		}
	}
}

func keysEqual(a, b format.Key) bool {
	return a.Tag == b.Tag && slices.Equal(a.Parts, b.Parts) && a.Name == b.Name && bytes.Equal(a.Raw, b.Raw)
}

var edgeValues = []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<56 - 1, 1 << 56, 1<<63 - 1, 1 << 63, 1<<64 - 1}

func TestKeyRoundTripEveryTag(t *testing.T) {
	for _, v := range versions {
		for _, tag := range format.KnownTags() {
			if tag == format.TagCounter || tag == format.TagSystem {
				continue
			}
			n := len(format.ComponentNames(v, tag))
			for i, x := range edgeValues {
				parts := make([]uint64, n)
				for j := range parts {
					parts[j] = edgeValues[(i+j)%len(edgeValues)]
				}
				parts[0] = x
				k := format.Key{Tag: tag, Parts: parts}
				b, err := format.EncodeKey(v, k)
				if err != nil {
					t.Fatalf("EncodeKey(%s, %+v): %v", v, k, err)
				}
				back, err := format.DecodeKey(v, b)
				if err != nil || !keysEqual(back, k) {
					t.Fatalf("%s %s: %x decoded to %+v, %v", v, tag, b, back, err)
				}
			}
		}
		for _, name := range append(format.SystemNames(), format.CounterNames()...) {
			for _, tag := range []format.Tag{format.TagSystem, format.TagCounter} {
				k := format.Key{Tag: tag, Name: name}
				b, err := format.EncodeKey(v, k)
				if err != nil {
					t.Fatal(err)
				}
				if back, err := format.DecodeKey(v, b); err != nil || !keysEqual(back, k) {
					t.Fatalf("%s %+v: decoded %+v, %v", v, k, back, err)
				}
			}
		}
	}
}

// TestV2IntegerOrder checks that format-2 keys sort as their numbers do, one
// component and several, which is what makes range scans and shard
// boundaries work.
func TestV2IntegerOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func() uint64 {
		// Uniform bit length, so that every encoded length is common.
		return rng.Uint64() >> rng.UintN(65)
	}
	enc := func(tag format.Tag, parts ...uint64) []byte {
		b, err := format.EncodeKey(format.V2, format.Key{Tag: tag, Parts: parts})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var pairs [][2]uint64
	for _, a := range edgeValues {
		for _, b := range edgeValues {
			pairs = append(pairs, [2]uint64{a, b})
		}
	}
	for range 20000 {
		a := random()
		pairs = append(pairs, [2]uint64{a, random()}, [2]uint64{a, a + 1}, [2]uint64{a, a - 1})
	}
	for _, p := range pairs {
		a, b := p[0], p[1]
		if got, want := bytes.Compare(enc(format.TagSnapshot, a), enc(format.TagSnapshot, b)), cmp.Compare(a, b); got != want {
			t.Fatalf("compare(enc(%d), enc(%d)) = %d, want %d", a, b, got, want)
		}
		// Tuples: the first component decides, the second breaks ties.
		c := random()
		ta, tb := enc(format.TagDataFile, a, c), enc(format.TagDataFile, b, random())
		if want := cmp.Compare(a, b); want != 0 && bytes.Compare(ta, tb) != want {
			t.Fatalf("tuple (%d,…) vs (%d,…) misordered", a, b)
		}
		if got, want := bytes.Compare(enc(format.TagDataFile, c, a), enc(format.TagDataFile, c, b)), cmp.Compare(a, b); got != want {
			t.Fatalf("tuple (%d,%d) vs (%d,%d): %d, want %d", c, a, c, b, got, want)
		}
	}
}

func TestKeyPrefix(t *testing.T) {
	for _, v := range versions {
		for _, x := range edgeValues {
			prefix, err := format.KeyPrefix(v, format.TagColumn, x)
			if err != nil {
				t.Fatal(err)
			}
			for _, y := range edgeValues {
				in, _ := format.EncodeKey(v, format.Key{Tag: format.TagColumn, Parts: []uint64{x, y, 3}})
				out, _ := format.EncodeKey(v, format.Key{Tag: format.TagColumn, Parts: []uint64{x + 1, y, 3}})
				if !bytes.HasPrefix(in, prefix) || bytes.HasPrefix(out, prefix) {
					t.Fatalf("%s prefix %x: in %x, out %x", v, prefix, in, out)
				}
			}
		}
		if p, err := format.KeyPrefix(v, format.TagTable); err != nil || !bytes.Equal(p, []byte{byte(format.TagTable)}) {
			t.Errorf("%s empty prefix = %x, %v", v, p, err)
		}
	}
	// Format 2's point: a table's files share a prefix.
	p, _ := format.KeyPrefix(format.V2, format.TagDataFile, 7)
	k, _ := format.EncodeKey(format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{7, 1 << 40}})
	if !bytes.HasPrefix(k, p) {
		t.Errorf("v2 data file key %x lacks its table prefix %x", k, p)
	}
	for _, bad := range []struct {
		tag   format.Tag
		parts []uint64
		err   error
	}{
		{format.TagSnapshot, []uint64{1, 2}, format.ErrComponentCount},
		{format.TagSystem, nil, format.ErrKeyShape},
		{0x0E, nil, format.ErrKeyShape},
	} {
		if _, err := format.KeyPrefix(format.V2, bad.tag, bad.parts...); !errors.Is(err, bad.err) {
			t.Errorf("KeyPrefix(%s, %v) error %v, want %v", bad.tag, bad.parts, err, bad.err)
		}
	}
}

func TestDecodeKeyRejects(t *testing.T) {
	h := func(s string) []byte {
		b, err := hex.DecodeString(s)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		v    format.Version
		key  []byte
		want error
	}{
		{format.V1, nil, format.ErrEmptyKey},
		{format.V2, []byte{}, format.ErrEmptyKey},
		{format.V1, h("02"), format.ErrKeyLength},
		{format.V1, h("02000000000000000001"[:16]), format.ErrKeyLength},
		{format.V1, h("02" + "0000000000000001" + "00"), format.ErrKeyLength},
		{format.V1, h("04" + "0000000000000001"), format.ErrKeyLength},
		{format.V2, h("02"), format.ErrKeyTruncated},
		{format.V2, h("0202ff"), format.ErrKeyTruncated},
		{format.V2, h("0209" + "010000000000000000"), format.ErrIntLength},
		{format.V2, h("02ff"), format.ErrIntLength},
		{format.V2, h("020100"), format.ErrNonMinimalInt},
		{format.V2, h("02020001"), format.ErrNonMinimalInt},
		{format.V2, h("020101" + "00"), format.ErrTrailingBytes},
		{format.V2, h("090105"), format.ErrKeyTruncated}, // v2 data file needs two components
		{format.V2, h("0901"), format.ErrKeyTruncated},
		{format.V1, h("ff"), format.ErrKeyName},
		{format.V2, append([]byte{0xFE}, "next\x00id"...), format.ErrKeyName},
		{format.V2, append([]byte{0xFF}, "caf\xc3\xa9"...), format.ErrKeyName},
	}
	for _, c := range cases {
		if k, err := format.DecodeKey(c.v, c.key); !errors.Is(err, c.want) {
			t.Errorf("DecodeKey(%s, %x) = %+v, %v; want %v", c.v, c.key, k, err, c.want)
		}
	}
	// A format-1 data file key is not a format-2 one, nor the reverse.
	k1, _ := format.EncodeKey(format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{5}})
	if _, err := format.DecodeKey(format.V2, k1); err == nil {
		t.Errorf("v1 key %x decoded as v2", k1)
	}
	if _, err := format.DecodeKey(3, k1); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Errorf("DecodeKey(v3): %v", err)
	}
}

func TestEncodeKeyRejects(t *testing.T) {
	cases := []struct {
		key  format.Key
		want error
	}{
		{format.Key{Tag: format.TagSnapshot}, format.ErrComponentCount},
		{format.Key{Tag: format.TagSchema, Parts: []uint64{1}}, format.ErrComponentCount},
		{format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}, Name: "x"}, format.ErrKeyShape},
		{format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}, Raw: []byte{1}}, format.ErrKeyShape},
		{format.Key{Tag: format.TagSystem}, format.ErrKeyName},
		{format.Key{Tag: format.TagSystem, Name: "tab\there"}, format.ErrKeyName},
		{format.Key{Tag: format.TagCounter, Name: "x", Parts: []uint64{1}}, format.ErrKeyShape},
		{format.Key{Tag: 0x0E, Parts: []uint64{1}}, format.ErrKeyShape},
		{format.Key{Tag: 0x0E, Name: "x"}, format.ErrKeyShape},
	}
	for _, v := range versions {
		for _, c := range cases {
			if b, err := format.EncodeKey(v, c.key); !errors.Is(err, c.want) {
				t.Errorf("EncodeKey(%s, %+v) = %x, %v; want %v", v, c.key, b, err, c.want)
			}
		}
	}
	if _, err := format.EncodeKey(0, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Errorf("EncodeKey(v0): %v", err)
	}
}

func TestAppendKeyReusesBuffer(t *testing.T) {
	buf := make([]byte, 0, 64)
	k := format.Key{Tag: format.TagColumn, Parts: []uint64{1, 2, 3}}
	for _, v := range versions {
		out, err := format.AppendKey(buf[:0], v, k)
		if err != nil {
			t.Fatal(err)
		}
		if &out[0] != &buf[:1][0] {
			t.Errorf("%s: AppendKey reallocated a buffer with room", v)
		}
		want, _ := format.EncodeKey(v, k)
		if !bytes.Equal(out, want) {
			t.Errorf("%s: AppendKey %x, EncodeKey %x", v, out, want)
		}
	}
	if out, err := format.AppendKey([]byte("pre"), format.V1, format.Key{Tag: format.TagSnapshot}); err == nil || string(out) != "pre" {
		t.Errorf("AppendKey on error = %q, %v; want dst unchanged and an error", out, err)
	}
}

func TestDecodeKeyDoesNotAlias(t *testing.T) {
	for _, v := range versions {
		in := []byte{0x0E, 1, 2}
		k, err := format.DecodeKey(v, in)
		if err != nil {
			t.Fatal(err)
		}
		in[1] = 9
		if !reflect.DeepEqual(k.Raw, []byte{1, 2}) {
			t.Errorf("%s: Raw aliases the input: %v", v, k.Raw)
		}
	}
}
