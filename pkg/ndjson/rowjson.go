package ndjson

import (
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// Rows are written and read here rather than with protojson, which is
// several times slower per record, leaves random spaces in its output and
// needs a second JSON pass to pull a row out of its line. The output is
// exactly what protojson.MarshalOptions{UseProtoNames: true} writes, minus
// those spaces (the tests check this on every row type), for the field
// kinds the row messages use; a row type with another kind fails loudly.

// The wrapper types format.NewRow gives for values that are not rows.
const (
	uint64ValueName = "google.protobuf.UInt64Value" // counters
	uint32ValueName = "google.protobuf.UInt32Value" // catalog-format-version
	bytesValueName  = "google.protobuf.BytesValue"  // raw and enveloped bytes
)

// appendRow appends m as protobuf JSON: proto field names, populated fields
// only, in field order; 64-bit integers as decimal strings, enums by name.
// The wrapper types are bare values, as protojson writes them.
func appendRow(dst []byte, m protoreflect.Message) ([]byte, error) {
	d := m.Descriptor()
	switch d.FullName() {
	case uint64ValueName, uint32ValueName, bytesValueName:
		fd := d.Fields().ByNumber(1)
		return appendValue(dst, m.Get(fd), fd)
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
			dst, err = appendList(dst, m.Get(fd).List(), fd)
		} else {
			dst, err = appendValue(dst, m.Get(fd), fd)
		}
		if err != nil {
			return dst, err
		}
	}
	return append(dst, '}'), nil
}

func appendList(dst []byte, l protoreflect.List, fd protoreflect.FieldDescriptor) ([]byte, error) {
	dst = append(dst, '[')
	for i := 0; i < l.Len(); i++ {
		if i > 0 {
			dst = append(dst, ',')
		}
		var err error
		if dst, err = appendValue(dst, l.Get(i), fd); err != nil {
			return dst, err
		}
	}
	return append(dst, ']'), nil
}

func appendValue(dst []byte, v protoreflect.Value, fd protoreflect.FieldDescriptor) ([]byte, error) {
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
		return appendRow(dst, v.Message())
	}
	return dst, unsupported(fd)
}

func unsupported(fd protoreflect.FieldDescriptor) error {
	return fmt.Errorf("ndjson: field %s has kind %s, which shard files do not support yet", fd.FullName(), fd.Kind())
}

func appendQuotedUint(dst []byte, x uint64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, x, 10)
	return append(dst, '"')
}

// appendString appends s as a JSON string escaped as protojson escapes:
// '"', '\' and control characters only, the latter as \b \f \n \r \t or
// \u00XX with lower-case hex. s is valid UTF-8: protobuf checks strings
// both ways, and a reader checks them again.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= ' ' && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendRowWire reads the JSON of a row of type d, as appendRow writes it,
// and appends the row's protobuf encoding to dst: the encoding EncodeValue
// gives, fields in number order, implicit-presence zero values left out.
// Building the bytes and unmarshalling them once is much faster than
// setting fields one by one through protoreflect. Fields must come in
// field order, each once, so that a line has one spelling.
func (s *scanner) appendRowWire(dst []byte, d protoreflect.MessageDescriptor) ([]byte, error) {
	switch d.FullName() {
	case uint64ValueName, uint32ValueName, bytesValueName:
		return s.appendFieldWire(dst, d.Fields().ByNumber(1))
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
		fd := fieldAfter(fields, next, name)
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
			dst, err = s.appendListWire(dst, fd)
		} else {
			dst, err = s.appendFieldWire(dst, fd)
		}
		if err != nil {
			return dst, fmt.Errorf("%s: %w", fd.TextName(), err)
		}
	}
}

// fieldAfter finds field name at index from or later: usually the first
// one tried, since rows come in field order.
func fieldAfter(fields protoreflect.FieldDescriptors, from int, name []byte) protoreflect.FieldDescriptor {
	for i := from; i < fields.Len(); i++ {
		if fd := fields.Get(i); fd.TextName() == string(name) {
			return fd
		}
	}
	return nil
}

func (s *scanner) appendListWire(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	if fd.Kind() != protoreflect.MessageKind {
		return dst, unsupported(fd) // scalars would be packed
	}
	if err := s.expect('['); err != nil {
		return dst, err
	}
	for first := true; ; first = false {
		more, err := s.more(']', first)
		if err != nil || !more {
			return dst, err
		}
		if dst, err = s.appendMessageWire(dst, fd); err != nil {
			return dst, err
		}
	}
}

// appendMessageWire appends a message field: tag, length, encoding.
func (s *scanner) appendMessageWire(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	dst = protowire.AppendTag(dst, fd.Number(), protowire.BytesType)
	start := len(dst)
	dst, err := s.appendRowWire(dst, fd.Message())
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

// appendFieldWire appends a singular field, or nothing for the zero value
// of a field without presence, as proto.Marshal does.
func (s *scanner) appendFieldWire(dst []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	var x uint64 // the value of a varint field
	switch fd.Kind() {
	case protoreflect.MessageKind:
		return s.appendMessageWire(dst, fd)
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
		n, err := s.enum(fd)
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
		return dst, unsupported(fd)
	}
	if x == 0 && !fd.HasPresence() {
		return dst, nil
	}
	dst = protowire.AppendTag(dst, fd.Number(), protowire.VarintType)
	return protowire.AppendVarint(dst, x), nil
}

// enum reads an enum value by name, or by number for a value the enum
// does not name, as protojson writes them.
func (s *scanner) enum(fd protoreflect.FieldDescriptor) (protoreflect.EnumNumber, error) {
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
