package ndjson_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// FuzzRecordLine reads a shard of one arbitrary record line: the reader
// must never panic, and a record it accepts must write and read back as
// the same raw key and value. Seeds: the lines of every kind of entry.
// Run: go test ./pkg/ndjson -run '^$' -fuzz '^FuzzRecordLine$' -fuzztime 30s
func FuzzRecordLine(f *testing.F) {
	for _, v := range versions {
		file := string(encode(f, header(v), records(f, v, allEntries(f, v))))
		lines := strings.Split(file, "\n")
		for _, l := range lines[1 : len(lines)-2] {
			f.Add(uint8(v), l)
		}
	}
	f.Fuzz(func(t *testing.T, vb uint8, line string) {
		v := format.Version(vb%2 + 1)
		if strings.ContainsRune(line, '\n') {
			return
		}
		_, rs, err := readAll(strings.NewReader(shardOf(t, v, line)))
		if err != nil {
			return
		}
		_, again, err := readAll(bytes.NewReader(encode(t, header(v), rs)))
		if err != nil {
			t.Fatalf("%s line %q read, but its re-encoding does not: %v", v, line, err)
		}
		k1, v1 := rs[0].Raw()
		k2, v2 := again[0].Raw()
		if !bytes.Equal(k1, k2) || !bytes.Equal(v1, v2) {
			t.Fatalf("%s line %q: raw %x=%x, after re-encoding %x=%x", v, line, k1, v1, k2, v2)
		}
	})
}
