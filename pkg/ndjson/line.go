package ndjson

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

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
// not the canonical encoding of its row, or a nested message of the row
// holds unknown fields (Record.verbatim).
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

// appendRecordLine appends r's line, newline included, to dst.
func appendRecordLine(dst []byte, r Record) ([]byte, error) {
	t := r.key.Tag
	dst = append(dst, `{"table":`...)
	if r.shape == nil {
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
	if fields := r.shape.fields; len(fields) > 0 {
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
	// Values that are not rows are bare, as protojson writes the wrapper
	// types format.NewRow gives them.
	switch r.shape.value {
	case format.ValueRow:
		t := r.shape.rows[r.version]
		if t.err != nil {
			return dst, fmt.Errorf("ndjson: key %x: row to JSON: %w", r.rawKey, t.err)
		}
		dst = t.appendJSON(dst, r.payload)
	case format.ValueCounter:
		dst = appendQuotedUint(dst, binary.BigEndian.Uint64(r.payload))
	case format.ValueVersion:
		dst = strconv.AppendUint(dst, uint64(binary.BigEndian.Uint32(r.payload)), 10)
	default:
		dst = appendBase64(dst, r.payload)
	}
	if len(r.unknown) > 0 {
		dst = appendBase64Member(dst, "unknown", r.unknown)
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
	seen    [len(lineMembers)]bool
	table   []byte // nil for null; aliases the line
	tag     format.Tag
	key     format.Key
	shape   *shapeInfo // the key's, once "row" is read
	payload []byte     // a row's canonical encoding, from its JSON
	number  uint64     // a counter's or the format version's value
	// bytes: an enveloped or raw value's bytes; the others are members.
	bytes, unknown, rawKey, rawValue []byte
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
	if len(l.shape.fields) > 0 && !l.seen[mKey] {
		return Record{}, errors.New(`no "key"`)
	}
	// A row's raw key and value share one allocation, the key first.
	keyLen := 16
	for _, str := range l.key.Strs {
		keyLen += 2 + len(str)
	}
	keyLen += 10 * len(l.key.Parts)
	h := format.EnvelopeHeaderLen(d.v)
	buf := make([]byte, 0, keyLen+h+len(l.payload)+len(l.unknown))
	rawKey, err := format.AppendKey(buf, d.v, l.key)
	if err != nil {
		return Record{}, err
	}
	rawKey = rawKey[:len(rawKey):len(rawKey)]
	r := Record{version: d.v, key: l.key, shape: l.shape, rawKey: rawKey}
	var value []byte
	switch l.shape.value {
	case format.ValueRow:
		if err := l.shape.rows[d.v].checkUnknown(l.unknown); err != nil {
			return Record{}, err
		}
		value = buf[len(rawKey) : len(rawKey)+h]
		if len(rawKey) > keyLen {
			value = make([]byte, h, h+len(l.payload)+len(l.unknown))
		}
		value = format.SealEnvelope(d.v, append(append(value, l.payload...), l.unknown...))
		r.payload, r.unknown = value[h:h+len(l.payload):h+len(l.payload)], value[h+len(l.payload):]
	case format.ValueCounter:
		value = format.EncodeCounter(d.v, l.number)
		r.payload = value[format.EnvelopeHeaderLen(d.v):]
	case format.ValueVersion:
		value = format.EncodeFormatVersion(uint32(l.number))
		r.payload = value[format.EnvelopeHeaderLen(format.V1):]
	case format.ValueEnveloped:
		value = format.EncodeEnvelope(d.v, l.bytes)
		r.payload = value[format.EnvelopeHeaderLen(d.v):]
	default:
		value, r.payload = l.bytes, l.bytes
	}
	if l.seen[mUnknown] && l.shape.value != format.ValueRow {
		// Only protobuf rows are stored with their unknown fields.
		return Record{}, fmt.Errorf(`a %s %s record has no "unknown"`, l.tag, l.key.Name)
	}
	if l.rawValue == nil {
		r.rawValue = value
		return r, nil
	}
	// The stored bytes rule; the row must say the same, but for the
	// unknown fields of nested messages, which only the stored bytes hold.
	stored, err := format.DecodeValue(d.v, l.key, l.rawValue)
	if err != nil {
		return Record{}, fmt.Errorf("raw_value: %w", err)
	}
	mine, err := format.DecodeValue(d.v, l.key, value)
	if err != nil {
		return Record{}, err
	}
	r.nested = dropNestedUnknown(stored.ProtoReflect(), 0)
	if !proto.Equal(stored, mine) {
		return Record{}, errors.New(`"raw_value" and "row"/"unknown" differ`)
	}
	r.rawValue, r.verbatim = l.rawValue, true
	return r, nil
}

// dropNestedUnknown clears the unknown fields of the messages nested in m,
// depth levels down, and reports whether there were any.
func dropNestedUnknown(m protoreflect.Message, depth int) bool {
	found := false
	if depth > 0 && len(m.GetUnknown()) > 0 {
		m.SetUnknown(nil)
		found = true
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind || fd.IsMap():
		case fd.IsList():
			for i := range v.List().Len() {
				found = dropNestedUnknown(v.List().Get(i).Message(), depth+1) || found
			}
		default:
			found = dropNestedUnknown(v.Message(), depth+1) || found
		}
		return true
	})
	return found
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
		if l.shape = shapes[shapeID{l.tag, l.key.Name}]; l.shape == nil {
			return fmt.Errorf("%w (%s %s %q)", format.ErrNoRowType, v, l.tag, l.key.Name)
		}
		switch l.shape.value {
		case format.ValueRow:
			l.payload, err = s.appendRowWire(l.payload, l.shape.rows[v])
		case format.ValueCounter:
			l.number, err = s.uintString()
		case format.ValueVersion:
			var n uint32
			n, err = s.u32()
			l.number = uint64(n)
		default:
			l.bytes, err = s.base64()
		}
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
	var fields []format.Field
	if sh := shapes[shapeID{t, name}]; sh != nil {
		fields = sh.fields
	}
	if len(fields) == 0 {
		return nil, nil, fmt.Errorf(`a %s %q record has no "key"`, t, name)
	}
	bad := func(err error) error { return fmt.Errorf("a %s %s key is %v: %w", t, name, fields, err) }
	if err := s.expect('{'); err != nil {
		return nil, nil, bad(err)
	}
	for i, f := range fields {
		if i == 0 && !f.Str {
			parts = make([]uint64, 0, len(fields))
		}
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
