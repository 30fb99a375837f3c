package ndjson

import (
	"bytes"
	"fmt"
	"slices"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Record is one catalog entry in one format: its decoded key, its row
// (unknown protobuf fields included) and the raw key and value it stands for.
// Build it with NewRecord or NewRowRecord; the zero Record is not valid.
// A Record, its Key, Row and raw bytes must not be modified: build a new one
// instead, since the raw bytes are fixed when the Record is made.
//
// A Record keeps its row as the bytes of its canonical encoding, which its
// line is printed from, and decodes it into a message only when Row is
// called: most records travel without one.
type Record struct {
	version format.Version
	key     format.Key
	shape   *shapeInfo // nil for raw keys (unknown tags, keys of no known shape)
	// payload: for a row, the canonical encoding of its known fields, and
	// unknown its unknown fields, which follow them in that encoding; for
	// other values, what the row's JSON shows (a counter's 8 bytes, the
	// version's 4, the bytes of a raw or enveloped value).
	payload, unknown []byte
	rawKey, rawValue []byte
	// verbatim: rawValue is not what EncodeValue makes of the row its line
	// shows (a writer that ordered fields differently, say, or unknown
	// fields in a nested message, which have no place in the line), so
	// shard files carry it as it is, next to the row, to give back the
	// stored bytes on import.
	verbatim bool
	// nested: a message nested in the row holds fields its type does not
	// know (so the Record is verbatim).
	nested bool
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
	// One allocation for both copies.
	buf := append(append(make([]byte, 0, len(key)+len(value)), key...), value...)
	r := Record{version: v, key: k, rawKey: buf[:len(key):len(key)], rawValue: buf[len(key):]}
	if k.Raw != nil {
		return r, nil
	}
	if err := r.setValue(); err != nil {
		return Record{}, fmt.Errorf("ndjson: key %x: %w", key, err)
	}
	return r, nil
}

// setValue checks r.rawValue, the value of r.key, and sets what the Record
// keeps of it.
func (r *Record) setValue() error {
	v := r.version
	if r.shape = shapeOf(r.key); r.shape == nil {
		return fmt.Errorf("%w (%s %s %q)", format.ErrNoRowType, v, r.key.Tag, r.key.Name)
	}
	switch r.shape.value {
	case format.ValueRow:
	case format.ValueVersion:
		if _, err := format.DecodeFormatVersion(r.rawValue); err != nil {
			return err
		}
		r.payload = r.rawValue[format.EnvelopeHeaderLen(format.V1):]
		return nil
	case format.ValueRaw:
		r.payload = r.rawValue
		return nil
	default: // counters and enveloped bytes
		if _, err := format.DecodeValue(v, r.key, r.rawValue); err != nil {
			return err
		}
		r.payload = r.rawValue[format.EnvelopeHeaderLen(v):]
		return nil
	}
	t := r.shape.rows[v]
	if t.err != nil {
		return t.err
	}
	payload, err := format.DecodeEnvelope(v, r.rawValue)
	if err != nil {
		return err
	}
	sc, err := t.scan(payload)
	if err != nil {
		return fmt.Errorf("%w (%s %s): %w", format.ErrBadRow, v, r.key.Tag, err)
	}
	r.nested, r.verbatim = sc.nested, !sc.canonical || sc.nested
	if !sc.canonical {
		// Rare (another writer's field order, say): the line shows the
		// row Go decodes, encoded as EncodeValue encodes it.
		row, err := format.DecodeValue(v, r.key, r.rawValue)
		if err != nil {
			return err
		}
		enc, err := format.EncodeValue(v, r.key, row)
		if err != nil {
			return err
		}
		payload = enc[format.EnvelopeHeaderLen(v):]
		if sc, err = t.scan(payload); err != nil || !sc.canonical {
			return fmt.Errorf("ndjson: %s %s: the row's own encoding is not canonical (%v)", v, r.key.Tag, err)
		}
	}
	r.payload, r.unknown = payload[:sc.known:sc.known], payload[sc.known:]
	return nil
}

// NewRowRecord makes the format-v Record of key k and row, as a transform
// does; row must be the row message of k.Tag in format v (format.NewRow),
// unknown fields included. Records of raw keys (unknown tags, counter and
// system keys of no known shape) come only from NewRecord.
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
	r := Record{version: v, key: k, rawKey: rawKey, rawValue: value}
	if err := r.setValue(); err != nil {
		return Record{}, fmt.Errorf("ndjson: key %x: %w", rawKey, err)
	}
	return r, nil
}

// Move returns r's row as the format-v Record of key k stored as value: for
// a migration that moves a row's protobuf payload as it is into another
// format's key and envelope. Where r's value is its row's canonical
// encoding and the row's type is alike in both formats
// (format.RowsAlike), nothing is decoded or re-encoded, so nothing can be
// lost: the Record keeps r's payload for its line and unknown fields, its
// line too where k is r's key (WithLine). Any other record is decoded from
// its bytes as NewRecord does. Either way the Record is the one NewRecord
// makes of k's encoding and value, and its line the same bytes. value's
// payload must be r's: Move refuses another.
func (r Record) Move(v format.Version, k format.Key, value []byte) (Record, error) {
	rawKey, err := format.EncodeKey(v, k)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: move: %w", err)
	}
	if r.shape == nil || r.shape.value != format.ValueRow || r.verbatim ||
		k.Tag != r.key.Tag || k.Name != r.key.Name || !format.RowsAlike(r.version, v, k) {
		return NewRecord(v, rawKey, value)
	}
	to, err := format.DecodeEnvelope(v, value)
	if err != nil {
		return Record{}, fmt.Errorf("ndjson: move: key %x: %w", rawKey, err)
	}
	from := r.rawValue[format.EnvelopeHeaderLen(r.version):]
	if !bytes.Equal(from, to) {
		return Record{}, fmt.Errorf("ndjson: move: key %x: the value's payload is not the row's", rawKey)
	}
	n := len(r.payload)
	out := Record{version: v, key: k, shape: r.shape, payload: to[:n:n], unknown: to[n:], rawKey: rawKey, rawValue: value}
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

// Row returns the decoded row, a new message of format.NewRow's type for
// the Record's version and key, with the unknown fields in it (those of
// nested messages too); nil for a raw key. It decodes the Record's value at
// each call.
func (r Record) Row() proto.Message {
	if r.shape == nil {
		return nil
	}
	row, err := format.DecodeValue(r.version, r.key, r.rawValue)
	if err != nil {
		// The Record was made from this value, after it was checked.
		panic(fmt.Sprintf("ndjson: record %x does not decode: %v", r.rawKey, err))
	}
	return row
}

// Unknown returns the row's unknown fields as raw protobuf wire bytes (what
// a newer binary added), nil if there are none or the tag is unknown. Those
// of nested messages are in the value only (NestedUnknown).
func (r Record) Unknown() []byte {
	if len(r.unknown) == 0 {
		return nil
	}
	return r.unknown
}

// NestedUnknown reports whether a message nested in the row holds fields
// its type does not know. Such a record travels as its stored bytes (its
// line has no place for them): a migration that rebuilds its row from the
// decoded message must refuse it rather than drop them.
func (r Record) NestedUnknown() bool { return r.nested }

// Raw returns the raw key and value of the Record in its format, Version():
// the bytes a catalog stores, identical to those NewRecord was given.
func (r Record) Raw() (key, value []byte) { return r.rawKey, r.rawValue }
