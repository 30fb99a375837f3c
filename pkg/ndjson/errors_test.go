package ndjson_test

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// sampleFile is a small valid v1 shard and its lines, newlines included.
func sampleFile(t *testing.T) (string, []string) {
	t.Helper()
	f := string(encode(t, header(format.V1), records(t, format.V1, allEntries(t, format.V1)[:8])))
	lines := strings.SplitAfter(f, "\n")
	return f, lines[:len(lines)-1]
}

// withTrailer closes records (lines without header or trailer) with a
// trailer whose fields are right but for what edit changes.
func withTrailer(t *testing.T, lines []string, edit func(*ndjson.Trailer)) string {
	t.Helper()
	rs := strings.Join(lines[1:len(lines)-1], "")
	_, tr, err := ndjson.Verify(strings.NewReader(strings.Join(lines, "")))
	if err != nil {
		t.Fatal(err)
	}
	edit(&tr)
	return lines[0] + rs + fmt.Sprintf(`{"trailer":{"records":%d,"counts":%s,"sha256":%q}}`+"\n", tr.Records, countsJSON(tr.Counts), tr.SHA256)
}

func countsJSON(m map[string]uint64) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q:%d", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// Every prefix of a file is refused: inside the header as a bad header,
// after it as a file without trailer.
func TestTruncatedFile(t *testing.T) {
	file, lines := sampleFile(t)
	for n := 0; n < len(file); n++ {
		_, _, err := ndjson.Verify(strings.NewReader(file[:n]))
		want := ndjson.ErrNoTrailer
		if n < len(lines[0]) {
			want = ndjson.ErrHeader
		}
		if !errors.Is(err, want) {
			t.Fatalf("first %d of %d bytes: %v, want %v", n, len(file), err, want)
		}
	}
}

func TestMissingTrailer(t *testing.T) {
	_, lines := sampleFile(t)
	_, _, err := ndjson.Verify(strings.NewReader(strings.Join(lines[:len(lines)-1], "")))
	if !errors.Is(err, ndjson.ErrNoTrailer) || !strings.Contains(err.Error(), fmt.Sprintf("line, %d,", len(lines)-1)) {
		t.Errorf("no trailer: %v, want ErrNoTrailer naming line %d", err, len(lines)-1)
	}
}

func TestTrailerMismatch(t *testing.T) {
	_, lines := sampleFile(t)
	if _, _, err := ndjson.Verify(strings.NewReader(withTrailer(t, lines, func(*ndjson.Trailer) {}))); err != nil {
		t.Fatalf("unchanged trailer: %v", err)
	}
	for name, edit := range map[string]func(*ndjson.Trailer){
		"count":  func(tr *ndjson.Trailer) { tr.Records++ },
		"sha256": func(tr *ndjson.Trailer) { tr.SHA256 = strings.Repeat("0", 64) },
		"counts": func(tr *ndjson.Trailer) { tr.Counts["ducklake_metadata"]--; tr.Counts["ducklake_table"]++ },
	} {
		_, _, err := ndjson.Verify(strings.NewReader(withTrailer(t, lines, edit)))
		if !errors.Is(err, ndjson.ErrTrailerMismatch) {
			t.Errorf("wrong trailer %s: %v, want ErrTrailerMismatch", name, err)
		}
	}
	// A record dropped from the middle, or two swapped, changes the hash.
	dropped := append(append([]string{}, lines[:3]...), lines[4:]...)
	swapped := append([]string{}, lines...)
	swapped[2], swapped[3] = swapped[3], swapped[2]
	for name, ls := range map[string][]string{"dropped": dropped, "swapped": swapped} {
		if _, _, err := ndjson.Verify(strings.NewReader(strings.Join(ls, ""))); !errors.Is(err, ndjson.ErrTrailerMismatch) {
			t.Errorf("record %s: %v, want ErrTrailerMismatch", name, err)
		}
	}
}

// Each bad record line is refused with its line number, however the rest
// of the file is.
func TestBadLine(t *testing.T) {
	_, lines := sampleFile(t)
	const at = 3
	const meta = `{"table":"ducklake_metadata","tag":1,"key":{"scope":"0","scope_id":"1","key":"k"}`
	const schema = `{"table":"ducklake_schema","tag":4`
	// The well-formed lines the bad ones below are variations of.
	for _, line := range []string{
		meta + `,"row":{}}`,
		schema + `,"key":{"schema_id":"1"},"row":{}}`,
		`{"table":"ducklake_data_file","tag":11,"key":{"table_id":"1","data_file_id":"2"},"row":{}}`,
		`{"table":"ducklake_metadata","tag":1,"key":{"scope":"255","scope_id":"1","key":"k"},"row":{}}`,
		`{"table":"rocklake_system","tag":255,"name":"excised","key":{"timestamp_millis":"1","seq":"4294967295"},"row":{}}`,
		`{"table":"rocklake_counters","tag":254,"name":"next_column_id","key":{"table_id":"1"},"row":"1"}`,
		`{"table":"rocklake_counters","tag":254,"name":"next_file_id","row":"18446744073709551615"}`,
		`{"table":"rocklake_system","tag":255,"name":"catalog-format-version","row":4294967295}`,
		`{"table":"rocklake_system","tag":255,"name":"writer-nonce","row":"eA=="}`,
		`{"table":"rocklake_counters","tag":254,"raw_key":"/gY=","raw_value":""}`,
		`{"table":"rocklake_system","tag":255,"raw_key":"/3g=","raw_value":""}`,
		`{"table":null,"tag":200,"raw_key":"yA==","raw_value":""}`,
	} {
		if _, _, err := ndjson.Verify(strings.NewReader(shardOf(t, format.V1, line))); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	for name, line := range map[string]string{
		"not JSON":                  `{"table":`,
		"empty line":                ``,
		"array":                     `[1]`,
		"two objects":               `{"table":null,"tag":200,"raw_key":"yA==","raw_value":""} {}`,
		"no tag":                    `{"table":"ducklake_schema","key":{"schema_id":"1"},"row":{}}`,
		"tag out of range":          `{"table":null,"tag":256,"raw_key":"AA==","raw_value":""}`,
		"tag negative":              `{"table":null,"tag":-1,"raw_key":"AA==","raw_value":""}`,
		"table of another tag":      `{"table":"ducklake_table","tag":4,"key":{"schema_id":"1"},"row":{}}`,
		"known tag, no table":       `{"tag":4,"key":{"schema_id":"1"},"row":{}}`,
		"unknown member":            schema + `,"key":{"schema_id":"1"},"row":{},"extra":1}`,
		"key of another tag":        `{"table":"ducklake_data_file","tag":11,"key":{"data_file_id":"2"},"row":{}}`,
		"key component missing":     `{"table":"ducklake_table","tag":5,"key":{"schema_id":"1","table_id":"2"},"row":{}}`,
		"key component extra":       schema + `,"key":{"schema_id":"1","begin_snapshot":"2"},"row":{}}`,
		"key component misnamed":    `{"table":"ducklake_data_file","tag":11,"key":{"table_id":"1","file_id":"2"},"row":{}}`,
		"key components swapped":    `{"table":"ducklake_data_file","tag":11,"key":{"data_file_id":"2","table_id":"1"},"row":{}}`,
		"no key":                    schema + `,"row":{}}`,
		"key not decimal":           schema + `,"key":{"schema_id":"0x1"},"row":{}}`,
		"key leading zero":          schema + `,"key":{"schema_id":"01"},"row":{}}`,
		"key over 64 bits":          schema + `,"key":{"schema_id":"18446744073709551616"},"row":{}}`,
		"key as number":             schema + `,"key":{"schema_id":1},"row":{}}`,
		"key string as number":      `{"table":"ducklake_metadata","tag":1,"key":{"scope":"0","scope_id":"1","key":5},"row":{}}`,
		"key u8 over 255":           `{"table":"ducklake_metadata","tag":1,"key":{"scope":"256","scope_id":"1","key":"k"},"row":{}}`,
		"key u32 over 2^32":         `{"table":"rocklake_system","tag":255,"name":"excised","key":{"timestamp_millis":"1","seq":"4294967296"},"row":{}}`,
		"name on a one-shape tag":   schema + `,"name":"x","key":{"schema_id":"1"},"row":{}}`,
		"name after key":            `{"table":"rocklake_counters","tag":254,"key":{"table_id":"1"},"name":"next_column_id","row":"1"}`,
		"counter without name":      `{"table":"rocklake_counters","tag":254,"row":"1"}`,
		"counter of unknown name":   `{"table":"rocklake_counters","tag":254,"name":"next_widget_id","row":"1"}`,
		"counter name not ASCII":    `{"table":"rocklake_counters","tag":254,"name":"n\u00e9","row":"1"}`,
		"table counter without key": `{"table":"rocklake_counters","tag":254,"name":"next_column_id","row":"1"}`,
		"counter with a key":        `{"table":"rocklake_counters","tag":254,"name":"next_file_id","key":{"table_id":"1"},"row":"1"}`,
		"counter as object":         `{"table":"rocklake_counters","tag":254,"name":"next_file_id","row":{"value":"1"}}`,
		"counter as number":         `{"table":"rocklake_counters","tag":254,"name":"next_file_id","row":1}`,
		"counter over 64 bits":      `{"table":"rocklake_counters","tag":254,"name":"next_file_id","row":"18446744073709551616"}`,
		"counter with unknown":      `{"table":"rocklake_counters","tag":254,"name":"next_file_id","row":"1","unknown":"oDgB"}`,
		"nonce with unknown":        `{"table":"rocklake_system","tag":255,"name":"writer-nonce","row":"eA==","unknown":"oDgB"}`,
		"version as string":         `{"table":"rocklake_system","tag":255,"name":"catalog-format-version","row":"1"}`,
		"version over 32 bits":      `{"table":"rocklake_system","tag":255,"name":"catalog-format-version","row":4294967296}`,
		"nonce not base64":          `{"table":"rocklake_system","tag":255,"name":"writer-nonce","row":"!!"}`,
		"nonce unpadded base64":     `{"table":"rocklake_system","tag":255,"name":"writer-nonce","row":"eA"}`,
		"system key of counters":    `{"table":"rocklake_system","tag":255,"name":"next_file_id","row":"1"}`,
		"no row":                    meta + `}`,
		"row field unknown":         meta + `,"row":{"colour":"red"}}`,
		"row field of wrong type":   meta + `,"row":{"scope_id":"x"}}`,
		"unknown not base64":        meta + `,"row":{},"unknown":"!!"}`,
		"unknown is a known field":  meta + `,"row":{},"unknown":"CgFr"}`,
		"unknown malformed":         meta + `,"row":{},"unknown":"/w=="}`,
		"raw_value differs":         meta + `,"row":{"key":"a"},"raw_value":"AVNES1YKAWI="}`,
		"raw_value not a row":       meta + `,"row":{},"raw_value":"AA=="}`,
		"raw_key on a known key":    meta + `,"row":{},"raw_key":"AQ==","raw_value":""}`,
		"raw_key of a known shape":  `{"table":"rocklake_counters","tag":254,"raw_key":"/gE=","raw_value":"AVNES1YAAAAAAAAAAQ=="}`,
		"raw_key of a table":        `{"table":"ducklake_schema","tag":4,"raw_key":"BAE=","raw_value":""}`,
		"raw system key, no table":  `{"table":null,"tag":255,"raw_key":"/3g=","raw_value":""}`,
		"raw system key with name":  `{"table":"rocklake_system","tag":255,"name":"x","raw_key":"/3g=","raw_value":""}`,
		"raw counter key, no value": `{"table":"rocklake_counters","tag":254,"raw_key":"/gY="}`,
		"unknown tag, no raw_key":   `{"table":null,"tag":200,"row":""}`,
		"unknown tag with table":    `{"table":"x","tag":200,"raw_key":"yA==","raw_value":""}`,
		"unknown tag with row":      `{"table":null,"tag":200,"row":"","raw_key":"yA==","raw_value":""}`,
		"unknown tag, raw_key tag":  `{"table":null,"tag":200,"raw_key":"yQ==","raw_value":""}`,
		"unknown tag, no value":     `{"table":null,"tag":200,"raw_key":"yA=="}`,
		"unknown tag, empty key":    `{"table":null,"tag":200,"raw_key":"","raw_value":""}`,
	} {
		ls := append([]string{}, lines...)
		ls[at-1] = line + "\n"
		_, _, err := ndjson.Verify(strings.NewReader(strings.Join(ls, "")))
		var le *ndjson.LineError
		if !errors.Is(err, ndjson.ErrBadLine) || !errors.As(err, &le) || le.Line != at || !strings.Contains(err.Error(), fmt.Sprintf("line %d:", at)) {
			t.Errorf("%s: %v, want ErrBadLine at line %d", name, err, at)
		}
	}
}

func TestLineAfterTrailer(t *testing.T) {
	file, lines := sampleFile(t)
	_, _, err := ndjson.Verify(strings.NewReader(file + lines[1]))
	var le *ndjson.LineError
	if !errors.As(err, &le) || le.Line != len(lines) {
		t.Errorf("a record after the trailer: %v, want ErrBadLine at line %d", err, len(lines))
	}
}

func TestOverlongLine(t *testing.T) {
	_, lines := sampleFile(t)
	// An endless line: the reader must stop at MaxLineBytes, not run out
	// of memory.
	endless := io.MultiReader(strings.NewReader(lines[0]), repeatReader('x'))
	_, _, err := ndjson.Verify(endless)
	var le *ndjson.LineError
	if !errors.As(err, &le) || le.Line != 2 || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("endless line 2: %v, want ErrBadLine at line 2", err)
	}
	if _, err := ndjson.NewReader(repeatReader('{')); !errors.Is(err, ndjson.ErrHeader) {
		t.Errorf("endless header: %v, want ErrHeader", err)
	}
}

type repeatReader byte

func (c repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}

func TestBadHeader(t *testing.T) {
	_, lines := sampleFile(t)
	rest := strings.Join(lines[1:], "")
	for name, c := range map[string]struct{ line, says string }{
		"not JSON":         {"hello\n", "not a rocklake-migrate shard header"},
		"other JSON":       {`{"table":"ducklake_metadata"}` + "\n", "not a rocklake-migrate shard header"},
		"export format 2":  {strings.Replace(lines[0], `"rocklake_export_format":1`, `"rocklake_export_format":2`, 1), "export format version 2"},
		"catalog format 3": {strings.Replace(lines[0], `"catalog_format_version":1`, `"catalog_format_version":3`, 1), "unsupported catalog format"},
		"shard past count": {strings.Replace(lines[0], `"shard_index":2`, `"shard_index":5`, 1), "shard 5 of 5"},
		"bad key range":    {strings.Replace(lines[0], `"key_start":"05"`, `"key_start":"0g"`, 1), "key range"},
		"unknown field":    {strings.Replace(lines[0], `{`, `{"compression":"lz4",`, 1), "unknown field"},
	} {
		_, _, err := ndjson.Verify(strings.NewReader(c.line + rest))
		if !errors.Is(err, ndjson.ErrHeader) || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want ErrHeader saying %q", name, err, c.says)
		}
	}
	if _, _, err := ndjson.Verify(strings.NewReader("")); !errors.Is(err, ndjson.ErrHeader) || !strings.Contains(err.Error(), "empty file") {
		t.Errorf("empty file: %v, want ErrHeader", err)
	}
	if _, _, err := ndjson.Verify(strings.NewReader(lines[0])); !errors.Is(err, ndjson.ErrNoTrailer) {
		t.Errorf("header only: %v, want ErrNoTrailer", err)
	}
}

// Errors stay: a caller that goes on calling Next never gets io.EOF for a
// damaged file.
func TestErrorsAreFinal(t *testing.T) {
	_, lines := sampleFile(t)
	ls := append([]string{}, lines...)
	ls[2] = "garbage\n"
	rd, err := ndjson.NewReader(strings.NewReader(strings.Join(ls, "")))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rd.Next(); err != nil {
		t.Fatal(err)
	}
	_, first := rd.Next()
	for range 3 {
		if _, err := rd.Next(); !errors.Is(err, first) {
			t.Fatalf("Next after %v: %v", first, err)
		}
	}
	if !errors.Is(first, ndjson.ErrBadLine) || rd.Trailer().SHA256 != "" {
		t.Errorf("first error %v, trailer %+v", first, rd.Trailer())
	}
}

// A failing source is reported as it is, not as a damaged file.
func TestReadErrorPassedOn(t *testing.T) {
	file, _ := sampleFile(t)
	boom := errors.New("connection reset")
	r := io.MultiReader(strings.NewReader(file[:len(file)/2]), errReader{boom})
	_, _, err := ndjson.Verify(r)
	if !errors.Is(err, boom) || errors.Is(err, ndjson.ErrNoTrailer) || errors.Is(err, ndjson.ErrBadLine) {
		t.Errorf("read error: %v, want %v", err, boom)
	}
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// Skim refuses what Verify refuses about a file's framing and checksum (a
// cut-short file, a changed line, a wrong count or SHA-256, a bad header)
// and returns the same header and trailer for a good file; per-table counts
// and whether lines decode are left to the reader, as documented.
func TestSkim(t *testing.T) {
	file, lines := sampleFile(t)
	h, tr, err := ndjson.Skim(strings.NewReader(file))
	vh, vtr, verr := ndjson.Verify(strings.NewReader(file))
	if err != nil || verr != nil || h.ShardIndex != vh.ShardIndex || tr.SHA256 != vtr.SHA256 || tr.Records != vtr.Records {
		t.Fatalf("good file: skim %+v %+v %v, verify %+v %+v %v", h, tr, err, vh, vtr, verr)
	}
	for n := 0; n < len(file); n++ {
		_, _, err := ndjson.Skim(strings.NewReader(file[:n]))
		want := ndjson.ErrNoTrailer
		if n < len(lines[0]) {
			want = ndjson.ErrHeader
		}
		if !errors.Is(err, want) {
			t.Fatalf("first %d of %d bytes: %v, want %v", n, len(file), err, want)
		}
	}
	changed := append([]string(nil), lines...)
	changed[2] = strings.Replace(changed[2], `"`, `'`, 1)
	for name, f := range map[string]string{
		"changed line": strings.Join(changed, ""),
		"count":        withTrailer(t, lines, func(tr *ndjson.Trailer) { tr.Records++ }),
		"sha256":       withTrailer(t, lines, func(tr *ndjson.Trailer) { tr.SHA256 = strings.Repeat("0", 64) }),
	} {
		if _, _, err := ndjson.Skim(strings.NewReader(f)); !errors.Is(err, ndjson.ErrTrailerMismatch) {
			t.Errorf("%s: %v, want ErrTrailerMismatch", name, err)
		}
	}
	wrongCounts := withTrailer(t, lines, func(tr *ndjson.Trailer) { tr.Counts["ducklake_metadata"]--; tr.Counts["ducklake_table"]++ })
	if _, _, err := ndjson.Skim(strings.NewReader(wrongCounts)); err != nil {
		t.Errorf("per-table counts are the reader's to check, skim refused them: %v", err)
	}
	if _, _, err := ndjson.Skim(strings.NewReader(strings.Replace(file, `"rocklake_export_format":1`, `"rocklake_export_format":9`, 1))); !errors.Is(err, ndjson.ErrHeader) {
		t.Errorf("header of another export format: %v, want ErrHeader", err)
	}
}
