package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// written is one row a test put into a catalog.
type written struct {
	key format.Key
	msg proto.Message
	raw catalog.Entry
}

// rowsOfEveryTag returns two rows of every key shape of every known tag in
// format v (one of shapes without components: counters, system keys), but
// for catalog-format-version, which writeRows writes; and two counter and
// two system keys of no known shape, as a newer binary might leave them.
func rowsOfEveryTag(t *testing.T, v format.Version) []written {
	var rows []written
	for _, shape := range shapes() {
		if shape.Tag == format.TagSystem && shape.Name == format.SystemCatalogFormatVersion {
			continue
		}
		for seed := uint64(1); seed <= 2; seed++ {
			if seed == 2 && len(format.Fields(shape.Tag, shape.Name)) == 0 {
				break // one key only
			}
			msg := sampleRow(t, v, shape, seed)
			k := sampleKey(shape, msg, seed)
			rows = append(rows, written{k, msg, catalog.Entry{Key: mustKey(t, v, k), Value: mustValue(t, v, k, msg)}})
		}
	}
	for seed := uint64(1); seed <= 2; seed++ {
		for _, k := range []format.Key{
			{Tag: format.TagCounter, Raw: []byte{0x42, byte(seed)}},
			{Tag: format.TagSystem, Raw: []byte(fmt.Sprintf("test-flag-%d", seed))},
		} {
			msg := wrapperspb.Bytes([]byte(fmt.Sprintf("a newer binary's value %d", seed)))
			rows = append(rows, written{k, msg, catalog.Entry{Key: mustKey(t, v, k), Value: mustValue(t, v, k, msg)}})
		}
	}
	return rows
}

// versionRow is the catalog-format-version row writeRows writes.
func versionRow(v format.Version) written {
	return written{format.Key{Tag: format.TagSystem, Name: format.SystemCatalogFormatVersion}, wrapperspb.UInt32(uint32(v)),
		catalog.Entry{Key: format.FormatVersionKey(), Value: versionValue(uint64(v))}}
}

func writeRows(t *testing.T, url string, v format.Version, rows []written, extra ...[]byte) {
	kv := [][]byte{format.FormatVersionKey(), versionValue(uint64(v))}
	for _, r := range rows {
		kv = append(kv, r.raw.Key, r.raw.Value)
	}
	kvscan.Put(t, url, append(kv, extra...)...)
}

func TestRoundTripEveryRowType(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			t.Run(v.String(), func(t *testing.T) {
				url := newURL()
				rows := rowsOfEveryTag(t, v)
				writeRows(t, url, v, rows)
				all := append(slices.Clone(rows), versionRow(v))
				c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for _, r := range all {
					got, err := c.Get(ctx, r.key)
					if err != nil {
						t.Fatalf("get %s %+v: %v", r.key.Tag, r.key, err)
					}
					if !proto.Equal(got, r.msg) {
						t.Fatalf("%s %q: read %v, wrote %v", r.key.Tag, r.key.Name, got, r.msg)
					}
					if again := mustValue(t, v, r.key, got); !bytes.Equal(again, r.raw.Value) {
						t.Fatalf("%s %q: re-encoded %x, stored %x", r.key.Tag, r.key.Name, again, r.raw.Value)
					}
				}
				// Each tag's scan yields its rows, decoded, with their keys
				// and raw bytes.
				want := map[string]uint64{}
				for _, tag := range format.KnownTags() {
					n := 0
					for row, err := range c.Scan(ctx, tag) {
						if err != nil {
							t.Fatal(err)
						}
						if row.Key.Tag != tag || row.Version != v {
							t.Fatalf("scan %s yielded %s (%s)", tag, row.Key.Tag, row.Version)
						}
						w := findRow(t, all, row.Raw.Key)
						if !reflect.DeepEqual(row.Key, w.key) {
							t.Fatalf("scan %s: key %+v, want %+v", tag, row.Key, w.key)
						}
						if !proto.Equal(row.Msg, w.msg) || !bytes.Equal(row.Raw.Value, w.raw.Value) {
							t.Fatalf("scan %s: %v, want %v", tag, row.Msg, w.msg)
						}
						n++
					}
					for _, r := range all {
						if r.key.Tag == tag {
							want[tag.Name()]++
						}
					}
					if uint64(n) != want[tag.Name()] {
						t.Fatalf("scan %s yielded %d rows, want %d", tag, n, want[tag.Name()])
					}
				}
				counts, err := c.Counts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if len(counts) != len(format.KnownTags()) || fmt.Sprint(counts) != fmt.Sprint(want) {
					t.Fatalf("Counts = %v, want %v", counts, want)
				}
			})
		}
	})
}

func findRow(t *testing.T, rows []written, key []byte) written {
	t.Helper()
	for _, r := range rows {
		if bytes.Equal(r.raw.Key, key) {
			return r
		}
	}
	t.Fatalf("key %x was not written", key)
	return written{}
}

// A newer binary's fields survive: read without error, kept in the message,
// written back byte for byte, and shown by inspect.
func TestUnknownFieldsArePreserved(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			t.Run(v.String(), func(t *testing.T) {
				url := newURL()
				var rows []written
				var unknown []byte
				unknown = protowire.AppendTag(unknown, 1000, protowire.BytesType)
				unknown = protowire.AppendString(unknown, "created_by: a newer binary")
				unknown = protowire.AppendTag(unknown, 1001, protowire.VarintType)
				unknown = protowire.AppendVarint(unknown, 1<<40)
				for _, shape := range []format.Key{
					{Tag: format.TagTable}, {Tag: format.TagDataFile}, {Tag: format.TagSnapshot},
					{Tag: format.TagInlinedRows, Name: format.InlinedInsert},
					{Tag: format.TagSecondaryIndex, Name: format.IndexSnapshotFiles},
					{Tag: format.TagSystem, Name: format.SystemHotKey},
				} {
					msg := sampleRow(t, v, shape, 3)
					k := sampleKey(shape, msg, 3)
					payload, err := proto.MarshalOptions{Deterministic: true}.Marshal(msg)
					if err != nil {
						t.Fatal(err)
					}
					value := format.EncodeEnvelope(v, append(payload, unknown...))
					rows = append(rows, written{k, msg, catalog.Entry{Key: mustKey(t, v, k), Value: value}})
				}
				writeRows(t, url, v, rows)
				c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for _, r := range rows {
					got, err := c.Get(ctx, r.key)
					if err != nil {
						t.Fatalf("get %s with unknown fields: %v", r.key.Tag, err)
					}
					if u := got.ProtoReflect().GetUnknown(); !bytes.Equal(u, unknown) {
						t.Fatalf("%s: unknown fields %x, want %x", r.key.Tag, u, unknown)
					}
					// Known fields read as written.
					known := proto.Clone(got)
					known.ProtoReflect().SetUnknown(nil)
					if !proto.Equal(known, r.msg) {
						t.Fatalf("%s: known fields %v, want %v", r.key.Tag, known, r.msg)
					}
					if again := mustValue(t, v, r.key, got); !bytes.Equal(again, r.raw.Value) {
						t.Fatalf("%s: re-encoded %x, stored %x", r.key.Tag, again, r.raw.Value)
					}
				}
				var out bytes.Buffer
				if err := c.InspectJSON(ctx, &out, format.TagTable); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(out.String(), `"unknown_fields":"`+hexString(unknown)+`"`) {
					t.Fatalf("inspect does not show the unknown fields:\n%s", out.String())
				}
			})
		}
	})
}

func hexString(b []byte) string {
	var s strings.Builder
	for _, c := range b {
		s.WriteString("0123456789abcdef"[c>>4 : c>>4+1])
		s.WriteString("0123456789abcdef"[c&15 : c&15+1])
	}
	return s.String()
}

// Readers skip keys of tags they do not know (docs/schema-version.md); raw
// scans and the unknown-tag counts still see them.
func TestReadersSkipUnknownTags(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		url := newURL()
		rows := rowsOfEveryTag(t, format.V1)
		// 0x1D-0x20 were RockLake's IVM tables until v0.22; the others are
		// unallocated.
		unknown := [][]byte{
			{0x00, 1}, {0x1D, 0, 0, 0, 0, 0, 0, 0, 1}, {0x1D, 2}, {0x26}, {0x7F}, {0x82, 'x'}, {0xFB, 0xFF},
		}
		var extra [][]byte
		for _, k := range unknown {
			extra = append(extra, k, []byte("an opaque value of a newer binary"))
		}
		writeRows(t, url, format.V1, rows, extra...)
		c, err := catalog.Open(ctx, url, catalog.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()

		decoded := 0
		for row, err := range c.ScanRange(ctx, nil, nil) {
			if err != nil {
				t.Fatalf("scan over unknown tags: %v", err)
			}
			if !row.Key.Tag.Known() {
				t.Fatalf("ScanRange yielded a key of unknown tag %s", row.Key.Tag)
			}
			decoded++
		}
		if want := len(rows) + 1; decoded != want {
			t.Fatalf("ScanRange yielded %d rows, want %d", decoded, want)
		}
		raw := 0
		for _, err := range c.ScanRaw(ctx, nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			raw++
		}
		if want := len(rows) + 1 + len(unknown); raw != want {
			t.Fatalf("ScanRaw yielded %d entries, want %d", raw, want)
		}
		tags, err := c.UnknownTags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := map[format.Tag]uint64{0x00: 1, 0x1D: 2, 0x26: 1, 0x7F: 1, 0x82: 1, 0xFB: 1}
		if len(tags) != len(want) {
			t.Fatalf("UnknownTags = %v, want %v", tags, want)
		}
		for tag, n := range want {
			if tags[tag] != n {
				t.Fatalf("UnknownTags = %v, want %v", tags, want)
			}
		}
		if _, err := c.Get(ctx, format.Key{Tag: 0x1D, Raw: []byte{2}}); !errors.Is(err, format.ErrNoRowType) {
			t.Fatalf("typed get of an unknown tag: %v, want ErrNoRowType", err)
		}
		n := 0
		for _, err := range c.Scan(ctx, 0x1D) {
			if !errors.Is(err, format.ErrNoRowType) {
				t.Fatalf("typed scan of an unknown tag: %v, want ErrNoRowType", err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("typed scan of an unknown tag yielded %d times, want one error", n)
		}
		s, err := c.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.UnknownTags["tag 0x1D"] != 2 || len(s.UnknownTags) != len(want) || s.Tables["ducklake_data_file"] != 2 || s.Tables["ducklake_inlined_data_tables"] != 2 {
			t.Fatalf("summary = %+v", s)
		}
	})
}

// A key-range scan yields exactly the range, and a corrupt value ends a
// typed scan with an error naming its key.
func TestScanRange(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	var rows []written
	for id := uint64(1); id <= 10; id++ {
		k := format.Key{Tag: format.TagDataFile, Parts: []uint64{id % 3, id}}
		msg := sampleRow(t, format.V2, k, id)
		rows = append(rows, written{k, msg, catalog.Entry{Key: mustKey(t, format.V2, k), Value: mustValue(t, format.V2, k, msg)}})
	}
	bad := mustKey(t, format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{7, 1}})
	writeRows(t, url, format.V2, rows, bad, format.EncodeEnvelope(format.V2, []byte{0xFF}))
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start, _ := format.KeyPrefix(format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{1}})
	end, _ := format.KeyPrefix(format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{2}})
	var ids []uint64
	for row, err := range c.ScanRange(ctx, start, end) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, row.Key.Parts[1])
	}
	if got, _ := json.Marshal(ids); string(got) != "[1,4,7,10]" {
		t.Fatalf("table 1's files: %s, want [1,4,7,10]", got)
	}
	var last error
	n := 0
	for _, err := range c.Scan(ctx, format.TagDataFile) {
		if err != nil {
			last = err
			break
		}
		n++
	}
	if n != 10 || last == nil || !strings.Contains(last.Error(), hexString(bad)) {
		t.Fatalf("scan over a corrupt value: %d rows, then %v; want 10 rows, then an error naming %x", n, last, bad)
	}
	// Breaking out of a scan early is fine (the iterator is closed).
	for range c.ScanRaw(ctx, nil, nil) {
		break
	}
}
