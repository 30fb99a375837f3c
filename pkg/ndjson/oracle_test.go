package ndjson

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The oracle: the codec as it was before wire.go, on protoreflect and
// dynamic messages, kept to hold the wire codec to it (TestCodecLikeOracle,
// FuzzCodecLikeOracle). Its lines are the contract; it differs only where
// it lost data: the unknown fields of a nested message, which it drops.

// oracleRecord is the Record of the oracle: a decoded row.
type oracleRecord struct {
	version  format.Version
	key      format.Key
	row      proto.Message // nil for unknown tags
	rawKey   []byte
	rawValue []byte
	verbatim bool
}

func (r oracleRecord) unknownFields() []byte {
	if u := r.row.ProtoReflect().GetUnknown(); len(u) > 0 {
		return u
	}
	return nil
}

// oracleLine is the line the oracle writes for a raw entry.
func oracleLine(v format.Version, key, value []byte) ([]byte, error) {
	r, err := oracleNewRecord(v, key, value)
	if err != nil {
		return nil, err
	}
	return oracleRecordLine(nil, r)
}

// oracleRead is the raw entry the oracle reads from a line, without its
// newline.
func oracleRead(v format.Version, line []byte) (key, value []byte, err error) {
	d := oracleDecoder{v: v}
	r, err := d.decode(line)
	return r.rawKey, r.rawValue, err
}

// The wrapper types format.NewRow gives for values that are not rows.
const (
	uint64ValueName = "google.protobuf.UInt64Value" // counters
	uint32ValueName = "google.protobuf.UInt32Value" // catalog-format-version
	bytesValueName  = "google.protobuf.BytesValue"  // raw and enveloped bytes
)

func oracleNewRecord(v format.Version, key, value []byte) (oracleRecord, error) {
	k, err := format.DecodeKey(v, key)
	if err != nil {
		return oracleRecord{}, err
	}
	r := oracleRecord{version: v, key: k, rawKey: bytes.Clone(key)}
	if k.Raw != nil {
		r.rawValue = bytes.Clone(value)
		return r, nil
	}
	row, err := format.DecodeValue(v, k, value)
	if err != nil {
		return oracleRecord{}, fmt.Errorf("ndjson: key %x: %w", key, err)
	}
	enc, err := format.EncodeValue(v, k, row)
	if err != nil {
		return oracleRecord{}, fmt.Errorf("ndjson: key %x: %w", key, err)
	}
	r.row, r.rawValue = row, enc
	if !bytes.Equal(enc, value) {
		r.rawValue, r.verbatim = bytes.Clone(value), true
	}
	return r, nil
}

// oracleRecordLine appends r's line, newline included, to dst.
func oracleRecordLine(dst []byte, r oracleRecord) ([]byte, error) {
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
	dst, err := oracleRow(dst, r.row.ProtoReflect())
	if err != nil {
		return dst, fmt.Errorf("ndjson: key %x: row to JSON: %w", r.rawKey, err)
	}
	if u := r.unknownFields(); u != nil {
		dst = appendBase64Member(dst, "unknown", u)
	}
	if r.verbatim {
		dst = appendBase64Member(dst, "raw_value", r.rawValue)
	}
	return append(dst, "}\n"...), nil
}

// oracleLineFields is what a record line holds, before it is checked.
type oracleLineFields struct {
	seen                      [len(lineMembers)]bool
	table                     []byte // nil for null; aliases the line
	tag                       format.Tag
	key                       format.Key
	row                       proto.Message // empty until the payload is unmarshalled
	payload                   []byte        // the row's encoding, from its JSON
	unknown, rawKey, rawValue []byte
}

// oracleDecoder decodes the record lines of a format-v shard, reusing its
// buffer for each row's encoding.
type oracleDecoder struct {
	v    format.Version
	wire []byte
}

func (d *oracleDecoder) decode(line []byte) (oracleRecord, error) {
	s := scanner{b: line}
	l := oracleLineFields{payload: d.wire[:0]}
	err := s.oracleMembers(d.v, &l)
	d.wire = l.payload
	if err != nil {
		return oracleRecord{}, err
	}
	if s.peek() != 0 {
		return oracleRecord{}, s.errorf("data after the JSON object")
	}
	if !l.seen[mTag] {
		return oracleRecord{}, errors.New(`no "tag"`)
	}
	if l.seen[mRawKey] {
		return oracleRawRecord(d.v, &l)
	}
	if !l.tag.Known() {
		return oracleRecord{}, fmt.Errorf(`a record of unknown %s needs "raw_key"`, l.tag)
	}
	if string(l.table) != l.tag.Name() {
		return oracleRecord{}, fmt.Errorf(`tag %d is table %q, the line says %s`, l.tag, l.tag.Name(), quoteOrNull(l.table))
	}
	if !l.seen[mRow] {
		return oracleRecord{}, errors.New(`no "row"`)
	}
	l.key.Tag = l.tag
	if fields := keyFields[shapeID{l.tag, l.key.Name}]; len(fields) > 0 && !l.seen[mKey] {
		return oracleRecord{}, errors.New(`no "key"`)
	}
	rawKey, err := format.EncodeKey(d.v, l.key)
	if err != nil {
		return oracleRecord{}, err
	}
	if l.seen[mUnknown] && format.ValueKindOf(l.key) != format.ValueRow {
		// Only protobuf rows are stored with their unknown fields.
		return oracleRecord{}, fmt.Errorf(`a %s %s record has no "unknown"`, l.tag, l.key.Name)
	}
	// proto.Marshal writes unknown fields after the known ones.
	payload := append(l.payload, l.unknown...)
	d.wire = payload
	if err := proto.Unmarshal(payload, l.row); err != nil {
		return oracleRecord{}, fmt.Errorf(`"unknown" is not protobuf: %w`, err)
	}
	if !bytes.Equal(l.row.ProtoReflect().GetUnknown(), l.unknown) {
		// They would decode as known fields: not the same row.
		return oracleRecord{}, errors.New(`"unknown" holds fields the row type knows`)
	}
	r := oracleRecord{version: d.v, key: l.key, row: l.row, rawKey: rawKey}
	if l.rawValue == nil {
		if format.ValueKindOf(l.key) == format.ValueRow {
			r.rawValue = format.EncodeEnvelope(d.v, payload)
		} else if r.rawValue, err = format.EncodeValue(d.v, l.key, l.row); err != nil {
			return oracleRecord{}, err
		}
		return r, nil
	}
	// The stored bytes rule; the row must say the same.
	stored, err := format.DecodeValue(d.v, l.key, l.rawValue)
	if err != nil {
		return oracleRecord{}, fmt.Errorf("raw_value: %w", err)
	}
	if !proto.Equal(stored, l.row) {
		return oracleRecord{}, errors.New(`"raw_value" and "row"/"unknown" differ`)
	}
	r.rawValue, r.verbatim = l.rawValue, true
	return r, nil
}

// oracleMembers reads the line's object into l.
func (s *scanner) oracleMembers(v format.Version, l *oracleLineFields) error {
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
		if err := s.oracleMember(v, m, l); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func (s *scanner) oracleMember(v format.Version, m int, l *oracleLineFields) error {
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
		l.payload, err = s.oracleRowWire(l.payload, l.row.ProtoReflect().Descriptor())
	case mUnknown:
		l.unknown, err = s.base64()
	case mRawKey:
		l.rawKey, err = s.base64()
	case mRawValue:
		l.rawValue, err = s.base64()
	}
	return err
}

// oracleRawRecord is a record of an unknown tag, or a counter or system key of no
// known shape: raw key and value only.
func oracleRawRecord(v format.Version, l *oracleLineFields) (oracleRecord, error) {
	if l.seen[mName] || l.seen[mKey] || l.seen[mRow] || l.seen[mUnknown] {
		return oracleRecord{}, fmt.Errorf(`a raw record of %s has only "table", "tag", "raw_key" and "raw_value"`, l.tag)
	}
	if want := l.tag.Name(); (want == "" && l.table != nil) || (want != "" && string(l.table) != want) {
		return oracleRecord{}, fmt.Errorf(`tag %d is table %q, the line says %s`, l.tag, want, quoteOrNull(l.table))
	}
	if len(l.rawKey) == 0 || l.rawKey[0] != byte(l.tag) || l.rawValue == nil {
		return oracleRecord{}, fmt.Errorf(`a raw record of %s needs "raw_key" starting with that tag, and "raw_value"`, l.tag)
	}
	k, err := format.DecodeKey(v, l.rawKey)
	if err != nil {
		return oracleRecord{}, err
	}
	if k.Raw == nil {
		return oracleRecord{}, fmt.Errorf(`raw_key %x has a known shape: it travels decoded`, l.rawKey)
	}
	return oracleRecord{version: v, key: k, rawKey: l.rawKey, rawValue: l.rawValue}, nil
}

// oracleRow appends m as protobuf JSON: proto field names, populated fields
// only, in field order; 64-bit integers as decimal strings, enums by name.
// The wrapper types are bare values, as protojson writes them.
func oracleRow(dst []byte, m protoreflect.Message) ([]byte, error) {
	d := m.Descriptor()
	switch d.FullName() {
	case uint64ValueName, uint32ValueName, bytesValueName:
		fd := d.Fields().ByNumber(1)
		return oracleValue(dst, m.Get(fd), fd)
	}
	dst = append(dst, '{')
	fields := d.Fields()
	first := true
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if !m.Has(fd) {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(dst, '"')
		dst = append(dst, fd.TextName()...)
		dst = append(dst, '"', ':')
		var err error
		if fd.IsList() {
			dst, err = oracleList(dst, m.Get(fd).List(), fd)
		} else {
			dst, err = oracleValue(dst, m.Get(fd), fd)
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func oracleList(dst []byte, l protoreflect.List, fd protoreflect.FieldDescriptor) ([]byte, error) {
	dst = append(dst, '[')
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = oracleValue(dst, l.Get(i), fd); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func oracleValue(dst []byte, v protoreflect.Value, fd protoreflect.FieldDescriptor) ([]byte, error) {
	switch fd.Kind() {
	case protoreflect.Uint64Kind:
		return appendQuotedUint(dst, v.Uint()), nil
	case protoreflect.Uint32Kind:
		return strconv.AppendUint(dst, v.Uint(), 10), nil
	case protoreflect.BytesKind:
		dst = append(dst, '"')
		dst = b64.AppendEncode(dst, v.Bytes())
		return append(dst, '"'), nil
	case protoreflect.Int64Kind:
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, v.Int(), 10)
		return append(dst, '"'), nil
	case protoreflect.BoolKind:
		return strconv.AppendBool(dst, v.Bool()), nil
	case protoreflect.StringKind:
		return appendString(dst, v.String()), nil
	case protoreflect.EnumKind:
		if ev := fd.Enum().Values().ByNumber(v.Enum()); ev != nil {
			dst = append(dst, '"')
			dst = append(dst, ev.Name()...)
			return append(dst, '"'), nil
		}
		return strconv.AppendInt(dst, int64(v.Enum()), 10), nil
	case protoreflect.MessageKind:
		return oracleRow(dst, v.Message())
	}
	return dst, oracleUnsupported(fd)
}

func oracleUnsupported(fd protoreflect.FieldDescriptor) error {
	return fmt.Errorf("ndjson: field %s has kind %s, which shard files do not support yet", fd.FullName(), fd.Kind())
}

// oracleRowWire reads the JSON of a row of type d, as appendRow writes it,
// and appends the row's protobuf encoding to dst: the encoding EncodeValue
// gives, fields in number order, implicit-presence zero values left out.
// Building the bytes and unmarshalling them once is much faster than
// setting fields one by one through protoreflect. Fields must come in
// field order, each once, so that a line has one spelling.
func (s *scanner) oracleRowWire(dst []byte, d protoreflect.MessageDescriptor) ([]byte, error) {
	switch d.FullName() {
	case uint64ValueName, uint32ValueName, bytesValueName:
		return s.oracleFieldWire(dst, d.Fields().ByNumber(1))
	}
	if err := s.expect('{'); err != nil {
		return dst, err
	}
	fields := d.Fields()
	next := 0 // index of the first field that may come next
	var lastNumber protoreflect.FieldNumber
	for first := true; ; first = false {
		more, err := s.more('}', first)
		if err != nil || !more {
			return dst, err
		}
		name, err := s.key()
		if err != nil {
			return dst, err
		}
		fd := oracleFieldAfter(fields, next, name)
		switch {
		case fd == nil && fields.ByTextName(string(name)) != nil:
			return dst, s.errorf("field %q out of order or repeated", name)
		case fd == nil:
			return dst, s.errorf("%s has no field %q", d.FullName(), name)
		case fd.Number() < lastNumber:
			// JSON goes in declaration order, the encoding in number
			// order: for this fast path the two must agree.
			return dst, fmt.Errorf("ndjson: %s declares fields out of number order", d.FullName())
		}
		next, lastNumber = fd.Index()+1, fd.Number()
		if fd.IsList() {
			dst, err = s.oracleListWire(dst, fd)
		} else {
			dst, err = s.oracleFieldWire(dst, fd)
		}
		if err != nil {
			return dst, fmt.Errorf("%s: %w", fd.TextName(), err)
		}
	}
}

// oracleFieldAfter finds field name at index from or later: usually the first
// one tried, since rows come in field order.
func oracleFieldAfter(fields protoreflect.FieldDescriptors, from int, name []byte) protoreflect.FieldDescriptor {
	for i := from; i < fields.Len(); i++ {
		if fd := fields.Get(i); fd.TextName() == string(name) {
			return fd
		}
	}
	return nil
}

func (s *scanner) oracleListWire(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	if fd.Kind() != protoreflect.MessageKind {
		return dst, oracleUnsupported(fd) // scalars would be packed
	}
	if err := s.expect('['); err != nil {
		return dst, err
	}
	for first := true; ; first = false {
		more, err := s.more(']', first)
		if err != nil || !more {
			return dst, err
		}
		if dst, err = s.oracleMessageWire(dst, fd); err != nil {
			return dst, err
		}
	}
}

// oracleMessageWire appends a message field: tag, length, encoding.
func (s *scanner) oracleMessageWire(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	dst = protowire.AppendTag(dst, fd.Number(), protowire.BytesType)
	start := len(dst)
	dst, err := s.oracleRowWire(dst, fd.Message())
	if err != nil {
		return dst, err
	}
	// The length goes in front of the encoding, now that it is known.
	n := len(dst) - start
	prefix := protowire.SizeVarint(uint64(n))
	dst = append(dst, make([]byte, prefix)...)
	copy(dst[start+prefix:], dst[start:start+n])
	protowire.AppendVarint(dst[start:start], uint64(n))
	return dst, nil
}

// oracleFieldWire appends a singular field, or nothing for the zero value
// of a field without presence, as proto.Marshal does.
func (s *scanner) oracleFieldWire(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	var x uint64 // the value of a varint field
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return s.oracleMessageWire(dst, fd)
	case protoreflect.Uint64Kind:
		v, err := s.uintString()
		if err != nil {
			return dst, err
		}
		x = v
	case protoreflect.Uint32Kind:
		v, err := s.number()
		if err == nil && (v < 0 || v > math.MaxUint32) {
			err = s.errorf("%d is not a u32", v)
		}
		if err != nil {
			return dst, err
		}
		x = uint64(v)
	case protoreflect.Int64Kind:
		v, err := s.intString()
		if err != nil {
			return dst, err
		}
		x = uint64(v)
	case protoreflect.BytesKind:
		b, err := s.base64()
		if err != nil {
			return dst, err
		}
		if len(b) == 0 && !fd.HasPresence() {
			return dst, nil
		}
		dst = protowire.AppendTag(dst, fd.Number(), protowire.BytesType)
		return protowire.AppendBytes(dst, b), nil
	case protoreflect.BoolKind:
		switch {
		case s.literal("true"):
			x = 1
		case s.literal("false"):
		default:
			return dst, s.errorf("want true or false")
		}
	case protoreflect.EnumKind:
		n, err := s.oracleEnum(fd)
		if err != nil {
			return dst, err
		}
		x = uint64(int64(n))
	case protoreflect.StringKind:
		b, err := s.rawString()
		if err != nil {
			return dst, err
		}
		if !utf8.Valid(b) {
			return dst, s.errorf("string is not valid UTF-8")
		}
		if len(b) == 0 && !fd.HasPresence() {
			return dst, nil
		}
		dst = protowire.AppendTag(dst, fd.Number(), protowire.BytesType)
		return protowire.AppendBytes(dst, b), nil
	default:
		return dst, oracleUnsupported(fd)
	}
	if x == 0 && !fd.HasPresence() {
		return dst, nil
	}
	dst = protowire.AppendTag(dst, fd.Number(), protowire.VarintType)
	return protowire.AppendVarint(dst, x), nil
}

// enum reads an enum value by name, or by number for a value the enum
// does not name, as protojson writes them.
func (s *scanner) oracleEnum(fd protoreflect.FieldDescriptor) (protoreflect.EnumNumber, error) {
	if s.peek() != '"' {
		n, err := s.number()
		if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
			err = s.errorf("enum number %d out of range", n)
		}
		return protoreflect.EnumNumber(n), err
	}
	name, err := s.rawString()
	if err != nil {
		return 0, err
	}
	ev := fd.Enum().Values().ByName(protoreflect.Name(name))
	if ev == nil {
		return 0, s.errorf("%s has no value %q", fd.Enum().FullName(), name)
	}
	return ev.Number(), nil
}

// keyFields is format.Fields by tag and shape name.
var keyFields = func() map[shapeID][]format.Field {
	m := map[shapeID][]format.Field{}
	for _, k := range format.Shapes() {
		m[shapeID{k.Tag, k.Name}] = format.Fields(k.Tag, k.Name)
	}
	return m
}()
