package ndjson_test

import (
	"bytes"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// Every kind of entry, in both formats: raw → Record → line → Record → raw
// gives back the same bytes, and the decoded rows are equal.
func TestRoundTrip(t *testing.T) {
	for _, v := range versions {
		t.Run(v.String(), func(t *testing.T) {
			es := allEntries(t, v)
			in := records(t, v, es)
			file := encode(t, header(v), in)
			h, out, err := readAll(bytes.NewReader(file))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(h, header(v)) {
				t.Errorf("header %+v, want %+v", h, header(v))
			}
			if len(out) != len(es) {
				t.Fatalf("read %d records, wrote %d", len(out), len(es))
			}
			for i, r := range out {
				k, val := r.Raw()
				if !bytes.Equal(k, es[i].key) || !bytes.Equal(val, es[i].value) {
					t.Errorf("record %d: raw %x=%x, want %x=%x", i, k, val, es[i].key, es[i].value)
				}
				if r.Version() != v || r.Tag() != format.Tag(es[i].key[0]) || !reflect.DeepEqual(r.Key(), in[i].Key()) {
					t.Errorf("record %d: %s %s key %+v, want %s key %+v", i, r.Version(), r.Tag(), r.Key(), v, in[i].Key())
				}
				if !proto.Equal(r.Row(), in[i].Row()) || !bytes.Equal(r.Unknown(), in[i].Unknown()) {
					t.Errorf("record %d: row %v unknown %x, want %v unknown %x", i, r.Row(), r.Unknown(), in[i].Row(), in[i].Unknown())
				}
			}
			// Written again, the records make the same file.
			if again := encode(t, header(v), out); !bytes.Equal(again, file) {
				t.Errorf("re-encoding changed the file:\n%s\nthen\n%s", file, again)
			}
		})
	}
}

func TestUnknownFieldsPreserved(t *testing.T) {
	for _, v := range versions {
		for _, e := range rowEntries(t, v) {
			e = withUnknown(t, v, e)
			r := records(t, v, []entry{e})[0]
			if !bytes.Equal(r.Unknown(), unknownFields) {
				t.Fatalf("%s %s: Unknown() %x, want %x", v, r.Tag(), r.Unknown(), unknownFields)
			}
			_, out, err := readAll(bytes.NewReader(encode(t, header(v), []ndjson.Record{r})))
			if err != nil {
				t.Fatal(err)
			}
			if got := out[0].Unknown(); !bytes.Equal(got, unknownFields) {
				t.Errorf("%s %s: unknown fields %x after the file, want %x", v, r.Tag(), got, unknownFields)
			}
			if _, val := out[0].Raw(); !bytes.Equal(val, e.value) {
				t.Errorf("%s %s: value %x after the file, want %x", v, r.Tag(), val, e.value)
			}
		}
	}
}

// A field unknown to a nested message has no place in a record line: the
// record carries its stored bytes, and the file gives them back.
func TestNestedUnknownFieldsPreserved(t *testing.T) {
	hot := &rocklakev1.HotKey{CurrentSnapshotId: 3, TableFileCounts: []*rocklakev1.TableFileCount{{TableId: 1, FileCount: 2}}}
	hot.TableFileCounts[0].ProtoReflect().SetUnknown(unknownFields)
	k := format.Key{Tag: format.TagSystem, Name: format.SystemHotKey}
	payload, _ := format.DecodeEnvelope(format.V1, mustEncode(t, format.V1, k, hot))
	for _, v := range versions {
		// The same payload in either format: the hot key's row is alike.
		e := entry{format.SystemKey(format.SystemHotKey), format.EncodeEnvelope(v, payload)}
		r := records(t, v, []entry{e})[0]
		if !r.NestedUnknown() || r.Unknown() != nil {
			t.Fatalf("%s: NestedUnknown %t, Unknown %x", v, r.NestedUnknown(), r.Unknown())
		}
		file := encode(t, header(v), []ndjson.Record{r})
		if !bytes.Contains(file, []byte(`"raw_value":`)) {
			t.Fatalf("%s: the line does not carry the stored bytes:\n%s", v, file)
		}
		_, out, err := readAll(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		if _, val := out[0].Raw(); !bytes.Equal(val, e.value) || !out[0].NestedUnknown() {
			t.Fatalf("%s: value %x after the file, want %x", v, val, e.value)
		}
		if !proto.Equal(out[0].Row(), decodeRow(t, v, e)) {
			t.Fatalf("%s: row %v after the file, want %v", v, out[0].Row(), decodeRow(t, v, e))
		}
	}
}

// Keys of unknown tags, and counter and system keys of no known shape, are
// carried as raw records, byte for byte; the known-shape ones are decoded.
func TestRawKeysCarried(t *testing.T) {
	raw := append(append([]entry{}, unknownTagEntries...), rawSystemEntries...)
	for _, v := range versions {
		in := records(t, v, raw)
		file := encode(t, header(v), in)
		_, out, err := readAll(bytes.NewReader(file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(file), "\n")[1:]
		for i, r := range out {
			e := raw[i]
			if r.Row() != nil || r.Unknown() != nil {
				t.Errorf("%s %x: raw record decoded a row %v", v, e.key, r.Row())
			}
			k, val := r.Raw()
			if !bytes.Equal(k, e.key) || !bytes.Equal(val, e.value) {
				t.Errorf("%s: carried %x=%x, want %x=%x", v, k, val, e.key, e.value)
			}
			if key := r.Key(); key.Raw == nil || !bytes.Equal(key.Raw, e.key[1:]) || key.Name != "" || key.Parts != nil || key.Strs != nil {
				t.Errorf("%s %x: Key() %+v, want Raw %x only", v, e.key, key, e.key[1:])
			}
			table := `{"table":null,`
			if r.Tag().Known() {
				table = `{"table":"` + r.Tag().Name() + `",`
			}
			if !strings.HasPrefix(lines[i], table) || !strings.Contains(lines[i], `"raw_key"`) || strings.Contains(lines[i], `"row"`) {
				t.Errorf("%s %x: line %s, want a raw record of table %s", v, e.key, lines[i], table)
			}
		}
	}
	// Counter and system keys of known shapes are decoded, not raw.
	for _, v := range versions {
		for _, r := range records(t, v, systemEntries(v)) {
			if r.Row() == nil || r.Key().Raw != nil || r.Key().Name == "" {
				t.Errorf("%s %s: key %+v row %v, want a decoded key and row", v, r.Tag(), r.Key(), r.Row())
			}
		}
	}
}

// The line format is a contract other tools read: these are its exact bytes.
func TestLineFormat(t *testing.T) {
	row := &rocklakev1.DataFile{DataFileId: 7, TableId: 3, Path: "a b\n\"c\".parquet", FooterSize: proto.Int64(-1)}
	row.ProtoReflect().SetUnknown([]byte{0xA0, 0x38, 0x01}) // field 900, varint 1
	df, err := ndjson.NewRowRecord(format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{3, 7}}, row)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := ndjson.NewRowRecord(format.V1, format.Key{Tag: format.TagMetadata, Parts: []uint64{0, 0}, Strs: []string{"data_path"}},
		&rocklakev1.Metadata{Key: "data_path", Value: "s3://b/"})
	if err != nil {
		t.Fatal(err)
	}
	rs := []ndjson.Record{df, meta}
	rs = append(rs, records(t, format.V1, []entry{
		{format.CounterKey(format.V1, format.NameNextColumnID, 5), format.EncodeCounter(format.V1, 8)},
		{format.FormatVersionKey(), format.EncodeFormatVersion(1)},
		{format.SystemKey(format.SystemWriterNonce), []byte("6f1c")},
		{format.SystemKey("future"), []byte("x")},
		{[]byte{0xFE, 0x06}, format.EncodeCounter(format.V1, 1)},
		unknownTagEntries[0],
		nonCanonicalEntry(t, format.V1),
	})...)
	h := ndjson.Header{CatalogFormat: format.V1, ShardIndex: 0, ShardCount: 4, KeyEnd: []byte{0x0B, 0, 0, 0, 0, 0, 0, 0xC3, 0x50},
		CheckpointID: "0195c0de", Source: "s3://b/catalog", CreatedBy: "rocklake-migrate 0.1.0"}
	got := string(encode(t, h, rs))
	records := `{"table":"ducklake_data_file","tag":11,"key":{"table_id":"3","data_file_id":"7"},"row":{"data_file_id":"7","table_id":"3","path":"a b\n\"c\".parquet","footer_size":"-1"},"unknown":"oDgB"}
{"table":"ducklake_metadata","tag":1,"key":{"scope":"0","scope_id":"0","key":"data_path"},"row":{"key":"data_path","value":"s3://b/"}}
{"table":"rocklake_counters","tag":254,"name":"next_column_id","key":{"table_id":"5"},"row":"8"}
{"table":"rocklake_system","tag":255,"name":"catalog-format-version","row":1}
{"table":"rocklake_system","tag":255,"name":"writer-nonce","row":"NmYxYw=="}
{"table":"rocklake_system","tag":255,"raw_key":"/2Z1dHVyZQ==","raw_value":"eA=="}
{"table":"rocklake_counters","tag":254,"raw_key":"/gY=","raw_value":"AVNES1YAAAAAAAAAAQ=="}
{"table":null,"tag":200,"raw_key":"yAABAg==","raw_value":"AVNES1YIAQ=="}
{"table":"ducklake_data_file","tag":11,"key":{"table_id":"3","data_file_id":"77"},"row":{"data_file_id":"77","table_id":"3"},"raw_value":"AVNES1YQAwhN"}
`
	want := `{"rocklake_export_format":1,"catalog_format_version":1,"shard_index":0,"shard_count":4,"key_start":"","key_end":"0b000000000000c350","checkpoint_id":"0195c0de","source":"s3://b/catalog","created_by":"rocklake-migrate 0.1.0"}
` + records + `{"trailer":{"records":9,"counts":{"ducklake_data_file":2,"ducklake_metadata":1,"rocklake_counters":2,"rocklake_system":3,"tag 0xC8":1},"sha256":"` + sha256Hex(records) + `"}}
`
	if got != want {
		t.Errorf("file:\n%s\nwant:\n%s", got, want)
	}
	if back, _, err := ndjson.Verify(strings.NewReader(got)); err != nil || !reflect.DeepEqual(back, h) {
		t.Errorf("header read back as %+v, %v; want %+v", back, err, h)
	}
}

func TestNewRowRecord(t *testing.T) {
	row := &rocklakev2.DataFile{DataFileId: 9, TableId: 4}
	k := format.Key{Tag: format.TagDataFile, Parts: []uint64{4, 9}}
	r, err := ndjson.NewRowRecord(format.V2, k, row)
	if err != nil {
		t.Fatal(err)
	}
	wantKey, _ := format.EncodeKey(format.V2, k)
	wantValue, _ := format.EncodeValue(format.V2, k, row)
	if gk, gv := r.Raw(); !bytes.Equal(gk, wantKey) || !bytes.Equal(gv, wantValue) || !proto.Equal(r.Row(), row) {
		t.Errorf("Raw() %x=%x, want %x=%x", gk, gv, wantKey, wantValue)
	}
	// Counters and the version key take their wrapper rows.
	counter := format.Key{Tag: format.TagCounter, Name: format.NameNextRowID, Parts: []uint64{4}}
	if r, err := ndjson.NewRowRecord(format.V2, counter, wrapperspb.UInt64(1<<33)); err != nil {
		t.Error(err)
	} else if gk, gv := r.Raw(); !bytes.Equal(gk, format.CounterKey(format.V2, format.NameNextRowID, 4)) || !bytes.Equal(gv, format.EncodeCounter(format.V2, 1<<33)) {
		t.Errorf("counter Raw() %x=%x", gk, gv)
	}
	version := format.Key{Tag: format.TagSystem, Name: format.SystemCatalogFormatVersion}
	if r, err := ndjson.NewRowRecord(format.V2, version, wrapperspb.UInt32(2)); err != nil {
		t.Error(err)
	} else if gk, gv := r.Raw(); !bytes.Equal(gk, format.FormatVersionKey()) || !bytes.Equal(gv, format.EncodeFormatVersion(2)) {
		t.Errorf("version Raw() %x=%x", gk, gv)
	}
	withUnknown := wrapperspb.UInt64(1)
	withUnknown.ProtoReflect().SetUnknown(unknownFields)
	for name, c := range map[string]struct {
		v   format.Version
		k   format.Key
		row proto.Message
	}{
		"row of another format":     {format.V2, k, &rocklakev1.DataFile{}},
		"row of another tag":        {format.V2, k, &rocklakev2.DeleteFile{}},
		"nil row":                   {format.V2, k, nil},
		"key missing a component":   {format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{9}}, row},
		"counter with a row":        {format.V2, counter, row},
		"counter of unknown name":   {format.V2, format.Key{Tag: format.TagCounter, Name: "next_widget_id"}, wrapperspb.UInt64(1)},
		"counter with unknown":      {format.V2, counter, withUnknown},
		"version as u64":            {format.V2, version, wrapperspb.UInt64(2)},
		"unknown tag":               {format.V2, format.Key{Tag: 0xC8, Raw: []byte{1}}, row},
		"unknown tag, bytes row":    {format.V2, format.Key{Tag: 0xC8, Raw: []byte{1}}, wrapperspb.Bytes([]byte{1})},
		"raw system key, bytes row": {format.V2, format.Key{Tag: format.TagSystem, Raw: []byte("future-flag")}, wrapperspb.Bytes([]byte("on"))},
	} {
		if _, err := ndjson.NewRowRecord(c.v, c.k, c.row); err == nil {
			t.Errorf("%s: NewRowRecord accepted it", name)
		}
	}
}

func TestNewRecordRejectsBadEntries(t *testing.T) {
	good := shapeEntries(t, format.V2)[0]
	v1 := shapeEntries(t, format.V1)[0]
	counterV2 := format.CounterKey(format.V2, format.NameNextFileID)
	versionKey := format.FormatVersionKey()
	documented, _ := proto.Marshal(wrapperspb.UInt64(2))
	for name, e := range map[string]entry{
		"empty key":                      {nil, good.value},
		"key of format 1":                {v1.key, good.value},
		"value of format 1":              {good.key, v1.value},
		"bad checksum":                   {good.key, append(bytes.Clone(good.value[:len(good.value)-1]), good.value[len(good.value)-1]^1)},
		"data file key too short":        {[]byte{byte(format.TagDataFile), 1, 3}, good.value},
		"counter of 4 bytes":             {counterV2, format.EncodeEnvelope(format.V2, []byte{0, 0, 0, 1})},
		"counter of format 1":            {counterV2, format.EncodeCounter(format.V1, 1)},
		"version in the docs' form":      {versionKey, format.EncodeEnvelope(format.V1, documented)},
		"version in a format-2 envelope": {versionKey, format.EncodeEnvelope(format.V2, []byte{0, 0, 0, 2})},
	} {
		if _, err := ndjson.NewRecord(format.V2, e.key, e.value); err == nil {
			t.Errorf("%s: NewRecord accepted %x=%x", name, e.key, e.value)
		}
	}
}

func TestWriterRefuses(t *testing.T) {
	if _, err := ndjson.NewWriter(io.Discard, ndjson.Header{CatalogFormat: 3, ShardCount: 1}); !errors.Is(err, ndjson.ErrHeader) {
		t.Errorf("catalog format 3: %v, want ErrHeader", err)
	}
	if _, err := ndjson.NewWriter(io.Discard, ndjson.Header{CatalogFormat: format.V1, ShardIndex: 1, ShardCount: 1}); !errors.Is(err, ndjson.ErrHeader) {
		t.Errorf("shard 1 of 1: %v, want ErrHeader", err)
	}
	if _, err := ndjson.NewWriter(io.Discard, ndjson.Header{CatalogFormat: format.V1, ShardCount: 1, KeyStart: []byte{2}, KeyEnd: []byte{1}}); !errors.Is(err, ndjson.ErrHeader) {
		t.Errorf("empty range: %v, want ErrHeader", err)
	}

	var buf bytes.Buffer
	w, err := ndjson.NewWriter(&buf, header(format.V2))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(records(t, format.V1, shapeEntries(t, format.V1)[:1])[0]); err == nil {
		t.Fatal("a v1 record went into a v2 shard")
	}
	// After a failed write no trailer may make the file look whole.
	if err := w.Close(); err == nil {
		t.Fatal("Close after a failed Write succeeded")
	}
	if _, _, err := ndjson.Verify(&buf); err == nil {
		t.Errorf("the file of a failed Write verifies")
	}
}

func TestWriterRefusesOverlongLine(t *testing.T) {
	row := &rocklakev1.Metadata{Key: "k", Value: strings.Repeat("x", ndjson.MaxLineBytes)}
	r, err := ndjson.NewRowRecord(format.V1, format.Key{Tag: format.TagMetadata, Parts: []uint64{0, 0}, Strs: []string{"k"}}, row)
	if err != nil {
		t.Fatal(err)
	}
	w, err := ndjson.NewWriter(io.Discard, header(format.V1))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(r); err == nil || !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("Write of a %d-byte row: %v, want a line-length error", len(row.Value), err)
	}
}

func TestTrailer(t *testing.T) {
	es := allEntries(t, format.V1)
	rs := records(t, format.V1, es)
	data, w := encodeWith(t, header(format.V1), rs)
	h, tr, err := ndjson.Verify(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(h, header(format.V1)) || !reflect.DeepEqual(tr, w.Trailer()) {
		t.Errorf("Verify: %+v %+v, want %+v %+v", h, tr, header(format.V1), w.Trailer())
	}
	lines := strings.SplitAfter(string(data), "\n")
	if want := sha256Hex(strings.Join(lines[1:len(lines)-2], "")); tr.SHA256 != want || tr.Records != uint64(len(rs)) {
		t.Errorf("trailer %d records sha256 %s, want %d %s", tr.Records, tr.SHA256, len(rs), want)
	}
	if want := countsOf(es); !reflect.DeepEqual(tr.Counts, want) || tr.Counts["ducklake_data_file"] != 5 || tr.Counts["tag 0xC8"] != 1 {
		t.Errorf("trailer counts %v, want %v", tr.Counts, want)
	}
}
