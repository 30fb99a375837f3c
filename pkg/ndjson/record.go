package ndjson

import (
	"bytes"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Record is one catalog entry in one format: its decoded key, its decoded row
// (unknown protobuf fields included) and the raw key and value it stands for.
// Build it with NewRecord or NewRowRecord; the zero Record is not valid.
// A Record, its Key, Row and raw bytes must not be modified: build a new one
// instead, since the raw bytes are fixed when the Record is made.
type Record struct {
	version  format.Version
	key      format.Key
	row      proto.Message // nil for unknown tags
	rawKey   []byte
	rawValue []byte
	// verbatim: rawValue is not what EncodeValue makes of row (a writer
	// that ordered fields differently, say), so shard files carry it as it
	// is, next to the row, to give back the stored bytes on import.
	verbatim bool
	// moved: row is the row of another format whose type is alike
	// (format.RowsAlike), as Move leaves it: its JSON and unknown fields
	// are this Record's, and Row decodes rawValue for the message of this
	// format.
	moved bool
	// line is the record line, newline included, once WithLine made it:
	// Writer.Write writes it as it is.
	line []byte
}

// NewRecord decodes the raw key and value of a format-v catalog entry. Keys
// and values of unknown tags are kept as opaque bytes. The Record does not
// alias key or value.
func NewRecord(v format.Version, key, value []byte) (Record, error) {
	k, err := format.DecodeKey(v, key)
	if err != nil {
		return Record{}, err
	}
	r := Record{version: v, key: k, rawKey: bytes.Clone(key)}
	if k.Raw != nil {
		r.rawValue = bytes.Clone(value)
		return r, nil
	}
	row, err := format.DecodeValue(v, k, value)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: key %x: %w", key, err)
	}
	enc, err := format.EncodeValue(v, k, row)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: key %x: %w", key, err)
	}
	r.row, r.rawValue = row, enc
	if !bytes.Equal(enc, value) {
		r.rawValue, r.verbatim = bytes.Clone(value), true
	}
	return r, nil
}

// NewRowRecord makes the format-v Record of key k and row, as a transform
// does; row must be the row message of k.Tag in format v (format.NewRow),
// unknown fields included. The Record keeps row: do not modify it after.
// Records of raw keys (unknown tags, counter and system keys of no known
// shape) come only from NewRecord.
func NewRowRecord(v format.Version, k format.Key, row proto.Message) (Record, error) {
	if k.Raw != nil || !k.Tag.Known() {
		// format.NewRow gives raw keys a BytesValue, but a line cannot
		// carry a raw key with a row: it would not read back.
		return Record{}, fmt.Errorf("ndjson: %s key of no known shape: its record comes from NewRecord", k.Tag)
	}
	want, err := format.NewRow(v, k)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: %w", err)
	}
	if row == nil || row.ProtoReflect().Descriptor() != want.ProtoReflect().Descriptor() {
		return Record{}, fmt.Errorf("ndjson: %s %s row must be a %s", v, k.Tag, want.ProtoReflect().Descriptor().FullName())
	}
	if format.ValueKindOf(k) != format.ValueRow && len(row.ProtoReflect().GetUnknown()) > 0 {
		// Counters, the version and bytes values are not protobuf where
		// they are stored: unknown fields would be lost.
		return Record{}, fmt.Errorf("ndjson: %s %s value cannot carry unknown fields", v, k.Tag)
	}
	rawKey, err := format.EncodeKey(v, k)
	if err != nil {
		return Record{}, err
	}
	value, err := format.EncodeValue(v, k, row)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: key %x: %w", rawKey, err)
	}
	return Record{version: v, key: k, row: row, rawKey: rawKey, rawValue: value}, nil
}

// Move returns r's row as the format-v Record of key k stored as value: for
// a migration that moves a row's protobuf payload as it is into another
// format's key and envelope. Where r's value is its row's canonical
// encoding and the row's type is alike in both formats
// (format.RowsAlike), nothing is decoded or re-encoded, so nothing can be
// lost: the Record keeps r's row for its line and unknown fields, its line
// too where k is r's key (WithLine), and Row decodes value on demand. Any
// other record is decoded from its bytes as NewRecord does. Either way the
// Record is the one NewRecord makes of k's encoding and value, and its
// line the same bytes. value's payload must be r's: Move refuses another.
func (r Record) Move(v format.Version, k format.Key, value []byte) (Record, error) {
	rawKey, err := format.EncodeKey(v, k)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: move: %w", err)
	}
	if r.row == nil || r.verbatim || k.Tag != r.key.Tag || k.Name != r.key.Name || !format.RowsAlike(r.version, v, k) {
		return NewRecord(v, rawKey, value)
	}
	to, err := format.DecodeEnvelope(v, value)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: move: key %x: %w", rawKey, err)
	}
	from, err := format.DecodeEnvelope(r.version, r.rawValue)
	if err != nil || !bytes.Equal(from, to) {
		return Record{}, fmt.Errorf("ndjson: move: key %x: the value's payload is not the row's", rawKey)
	}
	out := Record{version: v, key: k, row: r.row, rawKey: rawKey, rawValue: value, moved: true}
	if sameKey(k, r.key) {
		out.line = r.line
	}
	return out, nil
}

func sameKey(a, b format.Key) bool {
	return a.Tag == b.Tag && a.Name == b.Name && a.Raw == nil && b.Raw == nil &&
		slices.Equal(a.Parts, b.Parts) && slices.Equal(a.Strs, b.Strs)
}

// WithLine returns r with its record line made, so that a record written
// into two shards, as ExportTransformShard writes it and what Move makes of
// it, builds its line once. The line is what Writer.Write would write.
func (r Record) WithLine() (Record, error) {
	if r.line != nil {
		return r, nil
	}
	// Room for the usual line (the row's JSON is at most about twice its
	// bytes): one allocation, not a growth per member.
	line, err := appendRecordLine(make([]byte, 0, 96+len(r.rawKey)+2*len(r.rawValue)), r)
	if err != nil {
		return Record{}, err
	}
	r.line = line
	return r, nil
}

// Version returns the catalog format the Record is in.
func (r Record) Version() format.Version { return r.version }

// Tag returns the Record's tag.
func (r Record) Tag() format.Tag { return r.key.Tag }

// Key returns the decoded key (format.Key: Name, Parts and Strs, or Raw).
func (r Record) Key() format.Key { return r.key }

// Row returns the decoded row, a message of format.NewRow's type for the
// Record's version and key, with the unknown fields in it; nil for a raw
// key. A Record made by Move decodes it from its value at each call.
func (r Record) Row() proto.Message {
	if !r.moved {
		return r.row
	}
	row, err := format.DecodeValue(r.version, r.key, r.rawValue)
	if err != nil {
		// Move checked that the value holds the payload a row of an
		// alike type decoded from: this cannot fail.
		panic(fmt.Sprintf("ndjson: moved record %x does not decode: %v", r.rawKey, err))
	}
	return row
}

// Unknown returns the row's unknown fields as raw protobuf wire bytes (what
// a newer binary added), nil if there are none or the tag is unknown.
func (r Record) Unknown() []byte {
	if r.row == nil {
		return nil
	}
	if u := r.row.ProtoReflect().GetUnknown(); len(u) > 0 {
		return u
	}
	return nil
}

// Raw returns the raw key and value of the Record in its format, Version():
// the bytes a catalog stores, identical to those NewRecord was given.
func (r Record) Raw() (key, value []byte) { return r.rawKey, r.rawValue }
