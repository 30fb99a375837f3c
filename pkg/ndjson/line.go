package ndjson

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Record lines, for example:
//
//	{"table":"ducklake_data_file","tag":11,"key":{"table_id":"3","data_file_id":"7"},"row":{"data_file_id":"7","table_id":"3"},"unknown":"oDgB"}
//	{"table":"ducklake_metadata","tag":1,"key":{"scope":"0","scope_id":"0","key":"data_path"},"row":{"key":"data_path","value":"s3://b/"}}
//	{"table":"rocklake_counters","tag":254,"name":"next_column_id","key":{"table_id":"5"},"row":"8"}
//	{"table":"rocklake_system","tag":255,"name":"catalog-format-version","row":1}
//	{"table":"rocklake_system","tag":255,"name":"writer-nonce","row":"NmYxYw=="}
//	{"table":"rocklake_system","tag":255,"raw_key":"/2Z1dHVyZQ==","raw_value":"eA=="}
//	{"table":null,"tag":80,"raw_key":"UAE=","raw_value":"AVNES1YK"}
//
// Members come in the order of lineMembers, each at most once, so that a
// record has one spelling. "name" names the key's shape where its tag has
// several (format.ShapeNames). Integer key components are decimal strings,
// as protobuf JSON writes 64-bit integers, since JSON numbers lose precision
// past 2^53 in most parsers; string components are strings. Keys of unknown
// tags, and counter and system keys of no known shape, travel as raw bytes.
// "raw_value" appears on a known-shape record only when the stored value is
// not the canonical encoding of its row (Record.verbatim).
var lineMembers = [...]string{"table", "tag", "name", "key", "row", "unknown", "raw_key", "raw_value"}

const (
	mTable = iota
	mTag
	mName
	mKey
	mRow
	mUnknown
	mRawKey
	mRawValue
)

// b64 is strict so that each byte string has one spelling.
var b64 = base64.StdEncoding.Strict()

type shapeID struct {
	tag  format.Tag
	name string
}

// keyFields caches format.Fields, which allocates, by tag and shape name.
var keyFields = func() map[shapeID][]format.Field {
	m := map[shapeID][]format.Field{}
	for _, k := range format.Shapes() {
		m[shapeID{k.Tag, k.Name}] = format.Fields(k.Tag, k.Name)
	}
	return m
}()

// appendRecordLine appends r's line, newline included, to dst.
func appendRecordLine(dst []byte, r Record) ([]byte, error) {
	t := r.key.Tag
	dst = append(dst, `{"table":`...)
	if r.row == nil {
		if t.Known() {
			dst = appendString(dst, t.Name())
		} else {
			dst = append(dst, `null`...)
		}
		dst = append(dst, `,"tag":`...)
		dst = strconv.AppendUint(dst, uint64(t), 10)
		dst = appendBase64Member(dst, "raw_key", r.rawKey)
		dst = appendBase64Member(dst, "raw_value", r.rawValue)
		return append(dst, "}\n"...), nil
	}
	dst = append(dst, '"')
	dst = append(dst, t.Name()...)
	dst = append(dst, `","tag":`...)
	dst = strconv.AppendUint(dst, uint64(t), 10)
	if r.key.Name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, r.key.Name)
	}
	if fields := keyFields[shapeID{t, r.key.Name}]; len(fields) > 0 {
		dst = append(dst, `,"key":{`...)
		pi, si := 0, 0
		for i, f := range fields {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, f.Name...)
			dst = append(dst, '"', ':')
			if f.Str {
				dst = appendString(dst, r.key.Strs[si])
				si++
			} else {
				dst = appendQuotedUint(dst, r.key.Parts[pi])
				pi++
			}
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"row":`...)
	dst, err := appendRow(dst, r.row.ProtoReflect())
	if err != nil {
		return dst, fmt.Errorf("ndjson: key %x: row to JSON: %w", r.rawKey, err)
	}
	if u := r.Unknown(); u != nil {
		dst = appendBase64Member(dst, "unknown", u)
	}
	if r.verbatim {
		dst = appendBase64Member(dst, "raw_value", r.rawValue)
	}
	return append(dst, "}\n"...), nil
}

func appendBase64Member(dst []byte, name string, b []byte) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, name...)
	dst = append(dst, `":"`...)
	dst = b64.AppendEncode(dst, b)
	return append(dst, '"')
}

// recordLine is what a record line holds, before it is checked.
type recordLine struct {
	seen                      [len(lineMembers)]bool
	table                     []byte // nil for null; aliases the line
	tag                       format.Tag
	key                       format.Key
	row                       proto.Message // empty until the payload is unmarshalled
	payload                   []byte        // the row's encoding, from its JSON
	unknown, rawKey, rawValue []byte
}

// lineDecoder decodes the record lines of a format-v shard, reusing its
// buffer for each row's encoding.
type lineDecoder struct {
	v    format.Version
	wire []byte
}

func (d *lineDecoder) decode(line []byte) (Record, error) {
	s := scanner{b: line}
	l := recordLine{payload: d.wire[:0]}
	err := s.members(d.v, &l)
	d.wire = l.payload
	if err != nil {
		return Record{}, err
	}
	if s.peek() != 0 {
		return Record{}, s.errorf("data after the JSON object")
	}
	if !l.seen[mTag] {
		return Record{}, errors.New(`no "tag"`)
	}
	if l.seen[mRawKey] {
		return rawRecord(d.v, &l)
	}
	if !l.tag.Known() {
		return Record{}, fmt.Errorf(`a record of unknown %s needs "raw_key"`, l.tag)
	}
	if string(l.table) != l.tag.Name() {
		return Record{}, fmt.Errorf(`tag %d is table %q, the line says %s`, l.tag, l.tag.Name(), quoteOrNull(l.table))
	}
	if !l.seen[mRow] {
		return Record{}, errors.New(`no "row"`)
	}
	l.key.Tag = l.tag
	if fields := keyFields[shapeID{l.tag, l.key.Name}]; len(fields) > 0 && !l.seen[mKey] {
		return Record{}, errors.New(`no "key"`)
	}
	rawKey, err := format.EncodeKey(d.v, l.key)
	if err != nil {
		return Record{}, err
	}
	if l.seen[mUnknown] && format.ValueKindOf(l.key) != format.ValueRow {
		// Only protobuf rows are stored with their unknown fields.
		return Record{}, fmt.Errorf(`a %s %s record has no "unknown"`, l.tag, l.key.Name)
	}
	// proto.Marshal writes unknown fields after the known ones.
	payload := append(l.payload, l.unknown...)
	d.wire = payload
	if err := proto.Unmarshal(payload, l.row); err != nil {
		return Record{}, fmt.Errorf(`"unknown" is not protobuf: %w`, err)
	}
	if !bytes.Equal(l.row.ProtoReflect().GetUnknown(), l.unknown) {
		// They would decode as known fields: not the same row.
		return Record{}, errors.New(`"unknown" holds fields the row type knows`)
	}
	r := Record{version: d.v, key: l.key, row: l.row, rawKey: rawKey}
	if l.rawValue == nil {
		if format.ValueKindOf(l.key) == format.ValueRow {
			r.rawValue = format.EncodeEnvelope(d.v, payload)
		} else if r.rawValue, err = format.EncodeValue(d.v, l.key, l.row); err != nil {
			return Record{}, err
		}
		return r, nil
	}
	// The stored bytes rule; the row must say the same.
	stored, err := format.DecodeValue(d.v, l.key, l.rawValue)
	if err != nil {
		return Record{}, fmt.Errorf("raw_value: %w", err)
	}
	if !proto.Equal(stored, l.row) {
		return Record{}, errors.New(`"raw_value" and "row"/"unknown" differ`)
	}
	r.rawValue, r.verbatim = l.rawValue, true
	return r, nil
}

// members reads the line's object into l.
func (s *scanner) members(v format.Version, l *recordLine) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	last := -1
	for first := true; ; first = false {
		more, err := s.more('}', first)
		if err != nil || !more {
			return err
		}
		name, err := s.key()
		if err != nil {
			return err
		}
		m := -1
		for i, n := range lineMembers {
			if n == string(name) {
				m = i
			}
		}
		switch {
		case m < 0:
			return s.errorf("unknown member %q", name)
		case m <= last:
			return s.errorf("member %q out of order or repeated (the order is %v)", name, lineMembers)
		case m > mTag && !l.seen[mTag]:
			return s.errorf(`member %q before "tag"`, name)
		}
		last, l.seen[m] = m, true
		if err := s.member(v, m, l); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func (s *scanner) member(v format.Version, m int, l *recordLine) error {
	var err error
	switch m {
	case mTable:
		if !s.literal("null") {
			l.table, err = s.rawString()
		}
	case mTag:
		var n int64
		if n, err = s.number(); err == nil && (n < 0 || n > 0xFF) {
			err = fmt.Errorf("%d is not a byte", n)
		}
		l.tag = format.Tag(n)
	case mName:
		if format.ShapeNames(l.tag) == nil {
			return fmt.Errorf(`a %s record has no "name"`, l.tag)
		}
		l.key.Name, err = s.string()
	case mKey:
		l.key.Parts, l.key.Strs, err = s.parseKey(l.tag, l.key.Name)
	case mRow:
		l.key.Tag = l.tag
		if l.row, err = format.NewRow(v, l.key); err != nil {
			return err
		}
		l.payload, err = s.appendRowWire(l.payload, l.row.ProtoReflect().Descriptor())
	case mUnknown:
		l.unknown, err = s.base64()
	case mRawKey:
		l.rawKey, err = s.base64()
	case mRawValue:
		l.rawValue, err = s.base64()
	}
	return err
}

// parseKey reads the components of a key with tag t and shape name, by
// name, in order.
func (s *scanner) parseKey(t format.Tag, name string) (parts []uint64, strs []string, err error) {
	fields := keyFields[shapeID{t, name}]
	if len(fields) == 0 {
		return nil, nil, fmt.Errorf(`a %s %q record has no "key"`, t, name)
	}
	bad := func(err error) error { return fmt.Errorf("a %s %s key is %v: %w", t, name, fields, err) }
	if err := s.expect('{'); err != nil {
		return nil, nil, bad(err)
	}
	for i, f := range fields {
		if i > 0 {
			if err := s.expect(','); err != nil {
				return nil, nil, bad(err)
			}
		}
		k, err := s.key()
		if err == nil && string(k) != f.Name {
			err = fmt.Errorf("found %q", k)
		}
		if err != nil {
			return nil, nil, bad(err)
		}
		if f.Str {
			str, err := s.string()
			if err != nil {
				return nil, nil, bad(err)
			}
			strs = append(strs, str)
			continue
		}
		x, err := s.uintString()
		if err != nil {
			return nil, nil, bad(err)
		}
		parts = append(parts, x)
	}
	if err := s.expect('}'); err != nil {
		return nil, nil, bad(err)
	}
	return parts, strs, nil
}

// base64 reads a string of base64 and returns the bytes, which do not alias
// the line.
func (s *scanner) base64() ([]byte, error) {
	b, err := s.rawString()
	if err != nil {
		return nil, err
	}
	out, err := b64.AppendDecode(make([]byte, 0, b64.DecodedLen(len(b))), b)
	if err != nil {
		return nil, s.errorf("bad base64: %v", err)
	}
	return out, nil
}

// rawRecord is a record of an unknown tag, or a counter or system key of no
// known shape: raw key and value only.
func rawRecord(v format.Version, l *recordLine) (Record, error) {
	if l.seen[mName] || l.seen[mKey] || l.seen[mRow] || l.seen[mUnknown] {
		return Record{}, fmt.Errorf(`a raw record of %s has only "table", "tag", "raw_key" and "raw_value"`, l.tag)
	}
	if want := l.tag.Name(); (want == "" && l.table != nil) || (want != "" && string(l.table) != want) {
		return Record{}, fmt.Errorf(`tag %d is table %q, the line says %s`, l.tag, want, quoteOrNull(l.table))
	}
	if len(l.rawKey) == 0 || l.rawKey[0] != byte(l.tag) || l.rawValue == nil {
		return Record{}, fmt.Errorf(`a raw record of %s needs "raw_key" starting with that tag, and "raw_value"`, l.tag)
	}
	k, err := format.DecodeKey(v, l.rawKey)
	if err != nil {
		return Record{}, err
	}
	if k.Raw == nil {
		return Record{}, fmt.Errorf(`raw_key %x has a known shape: it travels decoded`, l.rawKey)
	}
	return Record{version: v, key: k, rawKey: l.rawKey, rawValue: l.rawValue}, nil
}

func quoteOrNull(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}
