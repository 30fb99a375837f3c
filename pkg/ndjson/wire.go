package ndjson

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Rows go between their protobuf encoding and their JSON here, on the wire
// bytes, with a table per message built once from its descriptor: no
// message is built, so a record costs a few allocations, not one per
// field. What this code must agree with is proto.Unmarshal and
// proto.MarshalOptions{Deterministic: true} (which format.DecodeValue and
// EncodeValue use) and protojson.MarshalOptions{UseProtoNames: true}
// (minus its random spaces) for the field kinds rows use; the tests hold
// it to those themselves (oracle_test.go, fuzzed). A row type with
// another kind fails loudly.

// msgTable is what the codec needs of one message type.
type msgTable struct {
	name   protoreflect.FullName
	fields []fieldEntry // in declaration order, which is number order
	byNum  []int16      // index in fields by field number, -1 for none
	byName map[string]int
	err    error // not nil: a field kind or layout the codec does not support
}

type fieldEntry struct {
	num      protowire.Number
	name     string // the proto (text) name
	key      string // `"name":`
	kind     protoreflect.Kind
	wire     protowire.Type
	list     bool
	presence bool // explicit presence: written even when zero
	msg      *msgTable
	enum     protoreflect.EnumDescriptor
	enumName map[int32]string
	enumNum  map[string]int32
}

// field returns the entry of field num, or nil if the message has none.
func (t *msgTable) field(num protowire.Number) *fieldEntry {
	if num < 0 || int(num) >= len(t.byNum) || t.byNum[num] < 0 {
		return nil
	}
	return &t.fields[t.byNum[num]]
}

var tables = map[protoreflect.FullName]*msgTable{}

// tableOf builds the table of md once; tables are read-only afterwards.
func tableOf(md protoreflect.MessageDescriptor) *msgTable {
	if t := tables[md.FullName()]; t != nil {
		return t
	}
	t := &msgTable{name: md.FullName(), byName: map[string]int{}}
	tables[md.FullName()] = t
	fds := md.Fields()
	var last protowire.Number
	for i := range fds.Len() {
		fd := fds.Get(i)
		f := fieldEntry{
			num: fd.Number(), name: fd.TextName(), key: `"` + fd.TextName() + `":`,
			kind: fd.Kind(), list: fd.IsList(), presence: fd.HasPresence(),
		}
		switch {
		case fd.Number() < last:
			// JSON goes in declaration order, the encoding in number order:
			// the codec walks both at once.
			t.err = fmt.Errorf("ndjson: %s declares fields out of number order", md.FullName())
		case fd.IsMap() || fd.Cardinality() == protoreflect.Required || fd.HasDefault() ||
			(fd.ContainingOneof() != nil && !fd.ContainingOneof().IsSynthetic()) ||
			(fd.IsList() && fd.Kind() != protoreflect.MessageKind):
			t.err = unsupported(fd)
		}
		last = fd.Number()
		switch fd.Kind() {
		case protoreflect.Uint64Kind, protoreflect.Uint32Kind, protoreflect.Int64Kind, protoreflect.BoolKind:
			f.wire = protowire.VarintType
		case protoreflect.EnumKind:
			f.wire = protowire.VarintType
			f.enum = fd.Enum()
			f.enumName, f.enumNum = map[int32]string{}, map[string]int32{}
			vals := fd.Enum().Values()
			for j := range vals.Len() {
				ev := vals.Get(j)
				if _, dup := f.enumName[int32(ev.Number())]; !dup {
					f.enumName[int32(ev.Number())] = string(ev.Name())
				}
				f.enumNum[string(ev.Name())] = int32(ev.Number())
			}
		case protoreflect.StringKind, protoreflect.BytesKind:
			f.wire = protowire.BytesType
		case protoreflect.MessageKind:
			f.wire = protowire.BytesType
			f.msg = tableOf(fd.Message())
			if f.msg.err != nil && t.err == nil {
				t.err = f.msg.err
			}
		default:
			t.err = unsupported(fd)
		}
		t.byName[f.name] = len(t.fields)
		t.fields = append(t.fields, f)
		for int(f.num) >= len(t.byNum) {
			t.byNum = append(t.byNum, -1)
		}
		t.byNum[f.num] = int16(len(t.fields) - 1)
	}
	return t
}

func unsupported(fd protoreflect.FieldDescriptor) error {
	return fmt.Errorf("ndjson: field %s (%s %s) is of a kind shard files do not support yet", fd.FullName(), fd.Cardinality(), fd.Kind())
}

// shapeInfo is what a record line needs of a key shape, found with one
// map lookup per record.
type shapeInfo struct {
	fields []format.Field // the key's components (format.Fields, which allocates)
	value  format.ValueKind
	rows   [format.V2 + 1]*msgTable // by version, for format.ValueRow
}

type shapeID struct {
	tag  format.Tag
	name string
}

var shapes = func() map[shapeID]*shapeInfo {
	m := map[shapeID]*shapeInfo{}
	for _, k := range format.Shapes() {
		s := &shapeInfo{fields: format.Fields(k.Tag, k.Name), value: format.ValueKindOf(k)}
		if s.value == format.ValueRow {
			for _, v := range []format.Version{format.V1, format.V2} {
				row, err := format.NewRow(v, k)
				if err != nil {
					panic(err) // format.Shapes names only shapes with rows
				}
				s.rows[v] = tableOf(row.ProtoReflect().Descriptor())
			}
		}
		m[shapeID{k.Tag, k.Name}] = s
	}
	return m
}()

func shapeOf(k format.Key) *shapeInfo {
	if k.Raw != nil {
		return nil
	}
	return shapes[shapeID{k.Tag, k.Name}]
}

// errMalformed: the payload is not protobuf at all.
var errMalformed = errors.New("malformed protobuf")

// scanned is what scan finds in a row's encoding.
type scanned struct {
	known     int  // the length of the known fields; the unknown ones follow
	canonical bool // the bytes are what EncodeValue makes of the row they decode to
	nested    bool // a nested message holds fields its type does not know
}

// scan checks b, the encoding of a message of type t, as proto.Unmarshal
// reads it: an error where Unmarshal fails, and whether re-encoding the
// message gives b back. Go keeps a field it does not know (or one of a
// known number with another wire type) as unknown, and writes the unknown
// fields after the known ones, so b is canonical only if its known fields
// come first, in number order, each once (a repeated one in a run), in
// their shortest encoding, zero values of fields without presence left
// out, and nested messages canonical in turn.
func (t *msgTable) scan(b []byte) (scanned, error) {
	out := scanned{known: -1, canonical: true}
	var last protowire.Number
	for i := 0; i < len(b); {
		tag, n := protowire.ConsumeVarint(b[i:])
		if n < 0 || tag>>3 < uint64(protowire.MinValidNumber) || tag>>3 > uint64(protowire.MaxValidNumber) {
			return out, errMalformed
		}
		num, wt := protowire.Number(tag>>3), protowire.Type(tag&7)
		if wt == protowire.EndGroupType {
			return out, errMalformed
		}
		if n != protowire.SizeVarint(tag) {
			out.canonical = false
		}
		i += n
		f := t.field(num)
		if f == nil || f.wire != wt {
			m := protowire.ConsumeFieldValue(num, wt, b[i:])
			if m < 0 {
				return out, errMalformed
			}
			if out.known < 0 {
				out.known = i - n
			}
			i += m
			continue
		}
		if out.known >= 0 || num < last || (num == last && !f.list) {
			// Go would move it ahead of the unknown fields, or into
			// order, or merge it with the one before.
			out.canonical = false
		}
		last = num
		if wt == protowire.VarintType {
			x, m := protowire.ConsumeVarint(b[i:])
			if m < 0 {
				return out, errMalformed
			}
			i += m
			if m != protowire.SizeVarint(x) || !f.canonicalVarint(x) {
				out.canonical = false
			}
			continue
		}
		v, m := protowire.ConsumeBytes(b[i:])
		if m < 0 {
			return out, errMalformed
		}
		i += m
		if m-len(v) != protowire.SizeVarint(uint64(len(v))) {
			out.canonical = false
		}
		switch f.kind {
		case protoreflect.MessageKind:
			in, err := f.msg.scan(v)
			if err != nil {
				return out, err
			}
			out.canonical = out.canonical && in.canonical
			out.nested = out.nested || in.nested || in.known < len(v)
		case protoreflect.StringKind:
			if !utf8.Valid(v) {
				return out, fmt.Errorf("field %s: string is not valid UTF-8", f.name)
			}
			fallthrough
		default:
			if len(v) == 0 && !f.presence {
				out.canonical = false
			}
		}
	}
	if out.known < 0 {
		out.known = len(b)
	}
	return out, nil
}

// canonicalVarint reports whether x is what Go writes for the value it
// decodes to in field f.
func (f *fieldEntry) canonicalVarint(x uint64) bool {
	zero := false
	switch f.kind {
	case protoreflect.Uint32Kind:
		if x > math.MaxUint32 {
			return false
		}
		zero = x == 0
	case protoreflect.BoolKind:
		if x > 1 {
			return false
		}
		zero = x == 0
	case protoreflect.EnumKind:
		if x != uint64(int64(int32(x))) {
			return false
		}
		zero = x == 0
	default: // uint64, int64
		zero = x == 0
	}
	return !zero || f.presence
}

// checkUnknown checks that b, a row's "unknown" member, is protobuf that
// proto.Unmarshal keeps as unknown fields of a message of type t.
func (t *msgTable) checkUnknown(b []byte) error {
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		if n < 0 || num > protowire.MaxValidNumber {
			return fmt.Errorf(`"unknown" is not protobuf: %w`, errMalformed)
		}
		if f := t.field(num); f != nil && f.wire == wt {
			// It would decode as a known field: not the same row.
			return errors.New(`"unknown" holds fields the row type knows`)
		}
		m := protowire.ConsumeFieldValue(num, wt, b[n:])
		if m < 0 {
			return fmt.Errorf(`"unknown" is not protobuf: %w`, protowire.ParseError(m))
		}
		b = b[n+m:]
	}
	return nil
}

// appendJSON appends the row b encodes, which scan found well formed, as
// protobuf JSON: proto field names, populated fields only, in field order;
// 64-bit integers as decimal strings, enums by name. b holds the known
// fields of the row; the unknown fields of nested messages, which have no
// place in the JSON, are skipped (their records carry the stored bytes).
func (t *msgTable) appendJSON(dst, b []byte) []byte {
	dst = append(dst, '{')
	first := true
	var list protowire.Number // the repeated field whose array is open
	for len(b) > 0 {
		num, wt, n := protowire.ConsumeTag(b)
		b = b[n:]
		f := t.field(num)
		if f == nil || f.wire != wt {
			b = b[max(protowire.ConsumeFieldValue(num, wt, b), 0):]
			continue
		}
		if list != 0 && num != list {
			dst = append(dst, ']')
			list = 0
		}
		switch {
		case list != 0:
			dst = append(dst, ',')
		default:
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = append(dst, f.key...)
			if f.list {
				dst = append(dst, '[')
				list = num
			}
		}
		if wt == protowire.VarintType {
			x, m := protowire.ConsumeVarint(b)
			b = b[m:]
			dst = f.appendVarintJSON(dst, x)
			continue
		}
		v, m := protowire.ConsumeBytes(b)
		b = b[m:]
		switch f.kind {
		case protoreflect.MessageKind:
			dst = f.msg.appendJSON(dst, v)
		case protoreflect.StringKind:
			dst = appendString(dst, v)
		default:
			dst = appendBase64(dst, v)
		}
	}
	if list != 0 {
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

func (f *fieldEntry) appendVarintJSON(dst []byte, x uint64) []byte {
	switch f.kind {
	case protoreflect.Uint64Kind:
		return appendQuotedUint(dst, x)
	case protoreflect.Uint32Kind:
		return strconv.AppendUint(dst, uint64(uint32(x)), 10)
	case protoreflect.Int64Kind:
		dst = append(dst, '"')
		dst = strconv.AppendInt(dst, int64(x), 10)
		return append(dst, '"')
	case protoreflect.BoolKind:
		return strconv.AppendBool(dst, x != 0)
	default: // enum
		if name, ok := f.enumName[int32(x)]; ok {
			dst = append(dst, '"')
			dst = append(dst, name...)
			return append(dst, '"')
		}
		return strconv.AppendInt(dst, int64(int32(x)), 10)
	}
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = b64.AppendEncode(dst, b)
	return append(dst, '"')
}

func appendQuotedUint(dst []byte, x uint64) []byte {
	dst = append(dst, '"')
	dst = strconv.AppendUint(dst, x, 10)
	return append(dst, '"')
}

// appendString appends s as a JSON string escaped as protojson escapes:
// '"', '\' and control characters only, the latter as \b \f \n \r \t or
// \u00XX with lower-case hex. s is valid UTF-8: scan checks strings, and
// so does a reader. It takes bytes too, so that a row's strings are not
// copied out of its encoding first.
func appendString[S string | []byte](dst []byte, s S) []byte {
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

// appendRowWire reads the JSON of a row of type t, as appendJSON writes it,
// and appends the row's canonical encoding to dst: fields in number order,
// implicit-presence zero values left out. Fields must come in field order,
// each once, so that a line has one spelling.
func (s *scanner) appendRowWire(dst []byte, t *msgTable) ([]byte, error) {
	if t.err != nil {
		return dst, t.err
	}
	if err := s.expect('{'); err != nil {
		return dst, err
	}
	next := 0 // index of the first field that may come next
	for first := true; ; first = false {
		more, err := s.more('}', first)
		if err != nil || !more {
			return dst, err
		}
		// Usually the member is spelled as appendJSON spells it: its name
		// and colon match a field's key, no need to scan the name first.
		i, rest := next, s.b[s.i:]
		for i < len(t.fields) && !(len(rest) >= len(t.fields[i].key) && string(rest[:len(t.fields[i].key)]) == t.fields[i].key) {
			i++
		}
		if i < len(t.fields) {
			s.i += len(t.fields[i].key)
		} else if i, err = s.fieldAt(t, next); err != nil {
			return dst, err
		}
		next = i + 1
		f := &t.fields[i]
		if f.list {
			dst, err = s.appendListWire(dst, f)
		} else {
			dst, err = s.appendFieldWire(dst, f)
		}
		if err != nil {
			return dst, fmt.Errorf("%s: %w", f.name, err)
		}
	}
}

// fieldAt reads a member's name, spelled otherwise (spaces, say), and
// returns the index of its field, which must be at index from or later.
func (s *scanner) fieldAt(t *msgTable, from int) (int, error) {
	name, err := s.key()
	if err != nil {
		return 0, err
	}
	for i := from; i < len(t.fields); i++ {
		if t.fields[i].name == string(name) {
			return i, nil
		}
	}
	if _, ok := t.byName[string(name)]; ok {
		return 0, s.errorf("field %q out of order or repeated", name)
	}
	return 0, s.errorf("%s has no field %q", t.name, name)
}

func (s *scanner) appendListWire(dst []byte, f *fieldEntry) ([]byte, error) {
	if err := s.expect('['); err != nil {
		return dst, err
	}
	for first := true; ; first = false {
		more, err := s.more(']', first)
		if err != nil || !more {
			return dst, err
		}
		if dst, err = s.appendMessageWire(dst, f); err != nil {
			return dst, err
		}
	}
}

// appendMessageWire appends a message field: tag, length, encoding.
func (s *scanner) appendMessageWire(dst []byte, f *fieldEntry) ([]byte, error) {
	dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
	start := len(dst)
	dst, err := s.appendRowWire(dst, f.msg)
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
func (s *scanner) appendFieldWire(dst []byte, f *fieldEntry) ([]byte, error) {
	var x uint64 // the value of a varint field
	switch f.kind {
	case protoreflect.MessageKind:
		return s.appendMessageWire(dst, f)
	case protoreflect.Uint64Kind:
		v, err := s.uintString()
		if err != nil {
			return dst, err
		}
		x = v
	case protoreflect.Uint32Kind:
		v, err := s.u32()
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
		if len(b) == 0 && !f.presence {
			return dst, nil
		}
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
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
		n, err := s.enum(f)
		if err != nil {
			return dst, err
		}
		x = uint64(int64(n))
	default: // string
		b, err := s.rawString()
		if err != nil {
			return dst, err
		}
		if !utf8.Valid(b) {
			return dst, s.errorf("string is not valid UTF-8")
		}
		if len(b) == 0 && !f.presence {
			return dst, nil
		}
		dst = protowire.AppendTag(dst, f.num, protowire.BytesType)
		return protowire.AppendBytes(dst, b), nil
	}
	if x == 0 && !f.presence {
		return dst, nil
	}
	dst = protowire.AppendTag(dst, f.num, protowire.VarintType)
	return protowire.AppendVarint(dst, x), nil
}

// u32 reads a bare JSON integer that fits a uint32.
func (s *scanner) u32() (uint32, error) {
	v, err := s.number()
	if err == nil && (v < 0 || v > math.MaxUint32) {
		err = s.errorf("%d is not a u32", v)
	}
	return uint32(v), err
}

// enum reads an enum value by name, or by number for a value the enum
// does not name, as protojson writes them.
func (s *scanner) enum(f *fieldEntry) (int32, error) {
	if s.peek() != '"' {
		n, err := s.number()
		if err == nil && (n < math.MinInt32 || n > math.MaxInt32) {
			err = s.errorf("enum number %d out of range", n)
		}
		return int32(n), err
	}
	name, err := s.rawString()
	if err != nil {
		return 0, err
	}
	n, ok := f.enumNum[string(name)]
	if !ok {
		return 0, s.errorf("%s has no value %q", f.enum.FullName(), name)
	}
	return n, nil
}
