package ndjson

import "github.com/rocklake/rocklake-migrate/pkg/format"

// LineOf is r's record line, newline included.
func LineOf(r Record) ([]byte, error) { return appendRecordLine(nil, r) }

// ReadLine decodes one record line of a format-v shard.
func ReadLine(v format.Version, line []byte) (Record, error) {
	d := lineDecoder{v: v}
	return d.decode(line)
}
