package format_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

var versions = []format.Version{format.V1, format.V2}

func unhex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The format-1 key bytes below are what RockLake v0.47.11's keys.rs builds
// (tag, big-endian u64s, u8 scopes, u16-prefixed strings, selector bytes);
// the format-2 ones follow DESIGN 2.2 (compact integers, the rest unchanged).
func TestKeyBytes(t *testing.T) {
	cases := []struct {
		name   string
		key    format.Key
		v1, v2 string
	}{
		{"metadata", format.Key{Tag: format.TagMetadata, Parts: []uint64{2, 7}, Strs: []string{"data_path"}},
			"01 02 0000000000000007 0009 646174615f70617468",
			"01 02 0107 0009 646174615f70617468"},
		{"snapshot", format.Key{Tag: format.TagSnapshot, Parts: []uint64{0}}, "02 0000000000000000", "02 00"},
		{"table", format.Key{Tag: format.TagTable, Parts: []uint64{1, 300, 5}},
			"05 0000000000000001 000000000000012c 0000000000000005", "05 0101 02012c 0105"},
		{"data file", format.Key{Tag: format.TagDataFile, Parts: []uint64{3, 1 << 40}},
			"0b 0000000000000003 0000010000000000", "0b 0103 06010000000000"},
		{"lease", format.Key{Tag: format.TagSnapshotLease, Strs: []string{"pgtrickle:s1"}},
			"22 000c 7067747269636b6c653a7331", "22 000c 7067747269636b6c653a7331"},
		{"extension", format.Key{Tag: format.TagExtensionSchema, Parts: []uint64{1, 9}, Strs: []string{"t"}},
			"23 01 0001 74 0000000000000009", "23 01 0001 74 0109"},
		{"table by id", format.Key{Tag: format.TagSecondaryIndex, Name: format.IndexTableByID, Parts: []uint64{4}},
			"fc 0000000000000004", "fc 0104"},
		{"snapshot files", format.Key{Tag: format.TagSecondaryIndex, Name: format.IndexSnapshotFiles, Parts: []uint64{2, 4, 6}},
			"fc 0000000000000002 0000000000000004 0000000000000006", "fc 0102 0104 0106"},
		{"inlined insert", format.Key{Tag: format.TagInlinedRows, Name: format.InlinedInsert, Parts: []uint64{1, 2, 3}},
			"fd 01 0000000000000001 0000000000000002 0000000000000003", "fd 01 0101 0102 0103"},
		{"inlined delete", format.Key{Tag: format.TagInlinedRows, Name: format.InlinedDelete, Parts: []uint64{1, 2, 3}},
			"fd 02 0000000000000001 0000000000000002 0000000000000003", "fd 02 0101 0102 0103"},
		{"counter", format.Key{Tag: format.TagCounter, Name: format.NameNextSnapshotID}, "fe 01", "fe 01"},
		{"column counter", format.Key{Tag: format.TagCounter, Name: format.NameNextColumnID, Parts: []uint64{9}},
			"fe 10 0000000000000009", "fe 10 0109"},
		{"row counter", format.Key{Tag: format.TagCounter, Name: format.NameNextRowID, Parts: []uint64{9}},
			"fe 11 0000000000000009", "fe 11 0109"},
		{"version", format.Key{Tag: format.TagSystem, Name: format.SystemCatalogFormatVersion},
			"ff 636174616c6f672d666f726d61742d76657273696f6e", "ff 636174616c6f672d666f726d61742d76657273696f6e"},
		{"audit", format.Key{Tag: format.TagSystem, Name: format.SystemAudit, Parts: []uint64{12}},
			"ff 6175646974 000000000000000c", "ff 6175646974 010c"},
		{"excised", format.Key{Tag: format.TagSystem, Name: format.SystemExcised, Parts: []uint64{1000, 3}},
			"ff 657863697365643a 00000000000003e8 3a 00000003", "ff 657863697365643a 0203e8 3a 00000003"},
		{"unknown system", format.Key{Tag: format.TagSystem, Raw: []byte("future-flag")},
			"ff 6675747572652d666c6167", "ff 6675747572652d666c6167"},
		{"unknown counter", format.Key{Tag: format.TagCounter, Raw: []byte{0x06}}, "fe 06", "fe 06"},
		{"unknown tag", format.Key{Tag: 0x50, Raw: []byte{1, 2}}, "50 0102", "50 0102"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range versions {
				want := unhex(t, map[format.Version]string{format.V1: c.v1, format.V2: c.v2}[v])
				got, err := format.EncodeKey(v, c.key)
				if err != nil {
					t.Fatalf("%s: %v", v, err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: EncodeKey = %x, want %x", v, got, want)
				}
				back, err := format.DecodeKey(v, want)
				if err != nil {
					t.Fatalf("%s: DecodeKey(%x): %v", v, want, err)
				}
				if !keyEqual(back, c.key) {
					t.Fatalf("%s: DecodeKey = %+v, want %+v", v, back, c.key)
				}
			}
		})
	}
}

func keyEqual(a, b format.Key) bool {
	return a.Tag == b.Tag && a.Name == b.Name && slices.Equal(a.Parts, b.Parts) &&
		slices.Equal(a.Strs, b.Strs) && bytes.Equal(a.Raw, b.Raw)
}

func TestKeyErrors(t *testing.T) {
	cases := []struct {
		v    format.Version
		key  string
		want error
	}{
		{format.V1, "", format.ErrEmptyKey},
		{format.V1, "0b 0000000000000003", format.ErrKeyTruncated},
		{format.V1, "0b 0000000000000003 0000000000000004 00", format.ErrTrailingBytes},
		{format.V1, "01 02 0000000000000007 0009 6461", format.ErrKeyTruncated},
		{format.V1, "22 0002 ffff", format.ErrKeyString},
		{format.V1, "fc 0000000000000002 0000000000000004", format.ErrTrailingBytes},
		{format.V1, "fd 03 0000000000000001", format.ErrKeyShape},
		{format.V2, "0b 09 01", format.ErrIntLength},
		{format.V2, "0b 0200ff 01", format.ErrNonMinimalInt},
		{format.V2, "0b 01", format.ErrKeyTruncated},
	}
	for _, c := range cases {
		_, err := format.DecodeKey(c.v, unhex(t, c.key))
		if !errors.Is(err, c.want) {
			t.Errorf("DecodeKey(%s, %s) = %v, want %v", c.v, c.key, err, c.want)
		}
	}
	if _, err := format.EncodeKey(format.V1, format.Key{Tag: format.TagDataFile, Raw: []byte{1}}); !errors.Is(err, format.ErrKeyShape) {
		t.Errorf("raw data file key: %v, want ErrKeyShape", err)
	}
	if _, err := format.EncodeKey(format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{1}}); !errors.Is(err, format.ErrComponentCount) {
		t.Errorf("short data file key: %v, want ErrComponentCount", err)
	}
	if _, err := format.EncodeKey(format.V1, format.Key{Tag: format.TagMetadata, Parts: []uint64{256, 1}, Strs: []string{"k"}}); !errors.Is(err, format.ErrIntRange) {
		t.Errorf("scope 256: %v, want ErrIntRange", err)
	}
}

// Compact integers keep byte order equal to numeric order, tuple-wise.
func TestV2KeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a := []uint64{r.Uint64() >> r.IntN(64), r.Uint64() >> r.IntN(64)}
		b := []uint64{r.Uint64() >> r.IntN(64), r.Uint64() >> r.IntN(64)}
		if r.IntN(4) == 0 {
			b[0] = a[0]
		}
		ka, _ := format.EncodeKey(format.V2, format.Key{Tag: format.TagDataFile, Parts: a})
		kb, _ := format.EncodeKey(format.V2, format.Key{Tag: format.TagDataFile, Parts: b})
		if got, want := bytes.Compare(ka, kb), slices.Compare(a, b); got != want {
			t.Fatalf("%v vs %v: bytes compare %d, numbers %d", a, b, got, want)
		}
	}
}

func TestKeyPrefix(t *testing.T) {
	for _, v := range versions {
		p, err := format.KeyPrefix(v, format.Key{Tag: format.TagDataFile, Parts: []uint64{7}})
		if err != nil {
			t.Fatal(err)
		}
		in, _ := format.EncodeKey(v, format.Key{Tag: format.TagDataFile, Parts: []uint64{7, 1 << 33}})
		out, _ := format.EncodeKey(v, format.Key{Tag: format.TagDataFile, Parts: []uint64{8, 1}})
		if !bytes.HasPrefix(in, p) || bytes.HasPrefix(out, p) {
			t.Fatalf("%s: prefix %x, in %x, out %x", v, p, in, out)
		}
	}
}

// Every shape of every tag: a key and a value with every field set go
// through encode and decode unchanged, in both formats.
func TestRoundTripEveryShape(t *testing.T) {
	if n := len(format.Shapes()); n < len(format.KnownTags())+10 {
		t.Fatalf("%d shapes", n)
	}
	for _, v := range versions {
		for _, k := range catalogfixture.Keys(2) {
			raw, err := format.EncodeKey(v, k)
			if err != nil {
				t.Fatalf("%s %s %s: %v", v, k.Tag, k.Name, err)
			}
			back, err := format.DecodeKey(v, raw)
			if err != nil || !keyEqual(back, k) {
				t.Fatalf("%s %s %s: DecodeKey(%x) = %+v, %v", v, k.Tag, k.Name, raw, back, err)
			}
			row, err := format.NewRow(v, k)
			if err != nil {
				t.Fatal(err)
			}
			catalogfixture.Fill(row.ProtoReflect(), 5)
			val, err := format.EncodeValue(v, k, row)
			if err != nil {
				t.Fatalf("%s %s %s: %v", v, k.Tag, k.Name, err)
			}
			got, err := format.DecodeValue(v, k, val)
			if err != nil {
				t.Fatalf("%s %s %s: DecodeValue: %v", v, k.Tag, k.Name, err)
			}
			if !proto.Equal(got, row) {
				t.Fatalf("%s %s %s: round trip %v != %v", v, k.Tag, k.Name, got, row)
			}
		}
	}
}

// Values as RockLake's values.rs writes them.
func TestValueBytes(t *testing.T) {
	counter := format.Key{Tag: format.TagCounter, Name: format.NameNextFileID}
	if got, want := format.EncodeCounter(format.V1, 42), unhex(t, "01 53444b56 000000000000002a"); !bytes.Equal(got, want) {
		t.Fatalf("v1 counter = %x, want %x", got, want)
	}
	// CRC-32C of 00..2a (8 bytes) computed independently: crc32c("\0\0\0\0\0\0\0*").
	v2 := format.EncodeCounter(format.V2, 42)
	if !bytes.Equal(v2[:5], []byte("\x02SDKV")) || len(v2) != 17 {
		t.Fatalf("v2 counter = %x", v2)
	}
	for _, v := range versions {
		m, err := format.DecodeValue(v, counter, format.EncodeCounter(v, 42))
		if err != nil || m.(*wrapperspb.UInt64Value).GetValue() != 42 {
			t.Fatalf("%s counter: %v %v", v, m, err)
		}
	}
	v2[len(v2)-1] ^= 1
	if _, err := format.DecodeCounter(format.V2, v2); !errors.Is(err, format.ErrChecksum) {
		t.Fatalf("flipped v2 counter: %v, want ErrChecksum", err)
	}
	if got, want := format.EncodeFormatVersion(1), unhex(t, "01 53444b56 00000001"); !bytes.Equal(got, want) {
		t.Fatalf("version value = %x, want %x", got, want)
	}
	// Raw values are stored as they are.
	nonce := format.Key{Tag: format.TagSystem, Name: format.SystemWriterNonce}
	for _, v := range versions {
		got, err := format.EncodeValue(v, nonce, wrapperspb.Bytes([]byte("6f1c")))
		if err != nil || string(got) != "6f1c" {
			t.Fatalf("%s nonce = %q, %v", v, got, err)
		}
	}
	// A prost-encoded DataFileRow: fields in number order, zero scalars
	// omitted, Some(0) optionals written.
	df := &rocklakev1.DataFile{DataFileId: 5, TableId: 2, Path: "a.parquet", FileFormat: "parquet", RecordCount: 0, BeginSnapshot: proto.Uint64(0)}
	got, err := format.EncodeValue(format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{2, 5}}, df)
	if err != nil {
		t.Fatal(err)
	}
	want := unhex(t, "01 53444b56 0805 1002 1a09612e70617271756574 22077061727175657 4 5000")
	if !bytes.Equal(got, want) {
		t.Fatalf("data file = %x, want %x", got, want)
	}
}

func TestFormatVersionCheck(t *testing.T) {
	if err := format.CheckVersion(format.EncodeFormatVersion(1), format.V1); err != nil {
		t.Fatal(err)
	}
	// Format 2's version key is in the format-1 envelope on purpose.
	if err := format.CheckVersion(format.EncodeFormatVersion(2), format.V2); err != nil {
		t.Fatal(err)
	}
	var m *format.FormatVersionMismatch
	err := format.CheckVersion(format.EncodeFormatVersion(99), format.V1)
	if !errors.As(err, &m) || m.Found != 99 || m.Expected != 1 || m.SQLState() != "0A000" {
		t.Fatalf("version 99: %v", err)
	}
	if !strings.Contains(err.Error(), "FormatVersionMismatch (SQLSTATE 0A000)") {
		t.Fatalf("message %q", err)
	}
	if err := format.CheckVersion(nil, format.V1); !errors.As(err, &m) || !m.Missing {
		t.Fatalf("missing: %v", err)
	}
	// The documentation's form: the envelope around UInt64Value{1}.
	err = format.CheckVersion(unhex(t, "01 53444b56 0801"), format.V1)
	if !errors.Is(err, format.ErrDocumentedVersionForm) || !strings.Contains(err.Error(), "holds 1") {
		t.Fatalf("documented form: %v", err)
	}
	if err := format.CheckVersion(unhex(t, "02 53444b56 00000001"), format.V1); !errors.Is(err, format.ErrEnvelopeVersion) {
		t.Fatalf("v2 envelope: %v", err)
	}
}

// A refusal read back from its message, as it crosses the workflow's JSON
// boundary wrapped in others' words.
func TestParseMismatch(t *testing.T) {
	for _, want := range []*format.FormatVersionMismatch{{Found: 99, Expected: 1}, {Found: 1, Expected: 2}, {Missing: true, Expected: 1}} {
		got, ok := format.ParseMismatch("workflow: snapshot s3://b/c: " + want.Error())
		if !ok || *got != *want {
			t.Fatalf("ParseMismatch(%q) = %+v, %v", want.Error(), got, ok)
		}
	}
	if got, ok := format.ParseMismatch("workflow: snapshot: the source is gone"); ok {
		t.Fatalf("ParseMismatch of another error = %+v", got)
	}
}

// Vectors from Rust's DefaultHasher (rustc 1.95, `str::hash`), the hash
// RockLake keys tags by in format 1.
func TestTagKeyHash(t *testing.T) {
	for s, want := range map[string]uint64{
		"":        3476900567878811119,
		"owner":   9263238938318464677,
		"comment": 3616381835328684213,
		"a-much-longer-tag-key-over-sixteen-bytes": 10330136775885220568,
		"ünïcode": 18138779418014350959,
	} {
		if got := format.TagKeyHash(format.V1, s); got != want {
			t.Errorf("v1 hash %q = %d, want %d", s, got, want)
		}
	}
	// sha256("owner") = 4c6f... ; the first 8 bytes big-endian.
	if got := format.TagKeyHash(format.V2, "owner"); got == format.TagKeyHash(format.V1, "owner") || got == 0 {
		t.Fatalf("v2 hash %d", got)
	}
}

func TestUnknownValueKinds(t *testing.T) {
	k, err := format.DecodeKey(format.V1, unhex(t, "ff 6675747572652d666c6167"))
	if err != nil || k.Raw == nil || format.ValueKindOf(k) != format.ValueRaw {
		t.Fatalf("unknown system key: %+v %v", k, err)
	}
	m, err := format.DecodeValue(format.V1, k, []byte("not-an-integer"))
	if err != nil || string(m.(*wrapperspb.BytesValue).GetValue()) != "not-an-integer" {
		t.Fatalf("unknown system value: %v %v", m, err)
	}
	if _, err := format.NewRow(format.V2, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := mustRow(t, format.V2, format.TagSnapshot).(*rocklakev2.Snapshot); !ok {
		t.Fatal("v2 snapshot row type")
	}
}

func mustRow(t *testing.T, v format.Version, tag format.Tag) proto.Message {
	m, err := format.NewRow(v, format.Key{Tag: tag})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
