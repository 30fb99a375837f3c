package catalog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// written is one row a test put into a catalog.
type written struct {
	key format.Key
	msg proto.Message
	raw catalog.Entry
}

// rowsOfEveryTag returns two rows of every known tag in format v (counter
// and system rows under names of their own), encoded.
func rowsOfEveryTag(t *testing.T, v format.Version) []written {
	var rows []written
	for _, tag := range format.KnownTags() {
		for seed := uint64(1); seed <= 2; seed++ {
			msg := sampleRow(t, v, tag, seed)
			k := sampleKey(v, tag, msg, seed)
			rows = append(rows, written{k, msg, catalog.Entry{Key: mustKey(t, v, k), Value: mustValue(t, v, msg)}})
		}
	}
	return rows
}

func writeRows(t *testing.T, url string, v format.Version, rows []written, extra ...[]byte) {
	kv := [][]byte{format.FormatVersionKey(), format.EncodeUint64(v, uint64(v))}
	for _, r := range rows {
		kv = append(kv, r.raw.Key, r.raw.Value)
	}
	writeRaw(t, url, append(kv, extra...)...)
}

func TestRoundTripEveryRowType(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testCtx(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			t.Run(v.String(), func(t *testing.T) {
				url := newURL()
				rows := rowsOfEveryTag(t, v)
				writeRows(t, url, v, rows)
				c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				for _, r := range rows {
					got, err := c.Get(ctx, r.key)
					if err != nil {
						t.Fatalf("get %s %v: %v", r.key.Tag, r.key, err)
					}
					if !proto.Equal(got, r.msg) {
						t.Fatalf("%s: read %v, wrote %v", r.key.Tag, got, r.msg)
					}
					if again := mustValue(t, v, got); !bytes.Equal(again, r.raw.Value) {
						t.Fatalf("%s: re-encoded %x, stored %x", r.key.Tag, again, r.raw.Value)
					}
				}
				// Each tag's scan yields its rows, decoded, with their raw bytes.
				for _, tag := range format.KnownTags() {
					var want []written
					for _, r := range rows {
						if r.key.Tag == tag {
							want = append(want, r)
						}
					}
					if tag == format.TagSystem {
						want = nil // the version key comes first: compare below
					}
					n := 0
					for row, err := range c.Scan(ctx, tag) {
						if err != nil {
							t.Fatal(err)
						}
						if row.Key.Tag != tag || row.Version != v {
							t.Fatalf("scan %s yielded %s (%s)", tag, row.Key.Tag, row.Version)
						}
						if want != nil {
							w := findRow(t, want, row.Raw.Key)
							if !proto.Equal(row.Msg, w.msg) || !bytes.Equal(row.Raw.Value, w.raw.Value) {
								t.Fatalf("scan %s: %v, want %v", tag, row.Msg, w.msg)
							}
						}
						n++
					}
					if tag == format.TagSystem {
						want = make([]written, 3) // two test keys and the version
					}
					if n != len(want) {
						t.Fatalf("scan %s yielded %d rows, want %d", tag, n, len(want))
					}
				}
				counts, err := c.Counts(ctx)
				if err != nil {
					t.Fatal(err)
				}
				for _, tag := range format.KnownTags() {
					if tag != format.TagCounter && tag != format.TagSystem && counts[tag.Name()] != 2 {
						t.Fatalf("Counts[%s] = %d, want 2 (all: %v)", tag.Name(), counts[tag.Name()], counts)
					}
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
		ctx := testCtx(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			t.Run(v.String(), func(t *testing.T) {
				url := newURL()
				var rows []written
				var unknown []byte
				unknown = protowire.AppendTag(unknown, 1000, protowire.BytesType)
				unknown = protowire.AppendString(unknown, "created_by: a newer binary")
				unknown = protowire.AppendTag(unknown, 1001, protowire.VarintType)
				unknown = protowire.AppendVarint(unknown, 1<<40)
				for _, tag := range []format.Tag{format.TagTable, format.TagDataFile, format.TagSnapshot, format.TagCommitLog} {
					msg := sampleRow(t, v, tag, 3)
					k := sampleKey(v, tag, msg, 3)
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
					if again := mustValue(t, v, got); !bytes.Equal(again, r.raw.Value) {
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
		ctx := testCtx(t)
		url := newURL()
		rows := rowsOfEveryTag(t, format.V1)
		unknown := [][]byte{
			{0x00, 1}, {0x0E, 0, 0, 0, 0, 0, 0, 0, 1}, {0x0E, 2}, {0x7F}, {0x82, 'x'}, {0xFC, 0xFF},
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
		want := map[format.Tag]uint64{0x00: 1, 0x0E: 2, 0x7F: 1, 0x82: 1, 0xFC: 1}
		if len(tags) != len(want) {
			t.Fatalf("UnknownTags = %v, want %v", tags, want)
		}
		for tag, n := range want {
			if tags[tag] != n {
				t.Fatalf("UnknownTags = %v, want %v", tags, want)
			}
		}
		if _, err := c.Get(ctx, format.Key{Tag: 0x0E, Raw: []byte{2}}); !errors.Is(err, format.ErrUnknownTag) {
			t.Fatalf("typed get of an unknown tag: %v, want ErrUnknownTag", err)
		}
		for _, err := range c.Scan(ctx, 0x0E) {
			if !errors.Is(err, format.ErrUnknownTag) {
				t.Fatalf("typed scan of an unknown tag: %v, want ErrUnknownTag", err)
			}
		}
		s, err := c.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.UnknownTags["tag 0x0E"] != 2 || s.Tables["ducklake_data_file"] != 2 {
			t.Fatalf("summary = %+v", s)
		}
	})
}

// A key-range scan yields exactly the range, and a corrupt value ends a
// typed scan with an error naming its key.
func TestScanRange(t *testing.T) {
	ctx := testCtx(t)
	url := "file://" + t.TempDir() + "/c"
	var rows []written
	for id := uint64(1); id <= 10; id++ {
		msg := sampleRow(t, format.V2, format.TagDataFile, id)
		k := format.Key{Tag: format.TagDataFile, Parts: []uint64{id % 3, id}}
		rows = append(rows, written{k, msg, catalog.Entry{Key: mustKey(t, format.V2, k), Value: mustValue(t, format.V2, msg)}})
	}
	bad := mustKey(t, format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{7, 1}})
	writeRows(t, url, format.V2, rows, bad, format.EncodeEnvelope(format.V2, []byte{0xFF}))
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start, _ := format.KeyPrefix(format.V2, format.TagDataFile, 1)
	end, _ := format.KeyPrefix(format.V2, format.TagDataFile, 2)
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
