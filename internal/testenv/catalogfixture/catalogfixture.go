// Package catalogfixture builds catalog entries for tests of the packages
// that carry them (format, ndjson, migration): for every key shape of every
// known tag, in either format, a row with every field set and an empty row.
package catalogfixture

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Entry is a catalog entry as stored: raw key and value.
type Entry struct{ Key, Value []byte }

// Keys returns one key of every shape of every known tag, with components
// derived from seed.
func Keys(seed uint64) []format.Key {
	var out []format.Key
	for _, k := range format.Shapes() {
		for i, f := range format.Fields(k.Tag, k.Name) {
			if f.Str {
				k.Strs = append(k.Strs, "s"+strings.Repeat("é", i+int(seed%3)))
			} else {
				k.Parts = append(k.Parts, uint64(i+1)*(seed+1)%251)
			}
		}
		out = append(out, k)
	}
	return out
}

// Entries returns, for every key of Keys(1) and Keys(2), the format-v entry
// with every field of its value set (Fill) and, for row values, with an
// empty row. It panics on a format error: the inputs are fixed.
func Entries(v format.Version) []Entry {
	var out []Entry
	for seed := uint64(1); seed <= 2; seed++ {
		for _, k := range Keys(seed) {
			key, err := format.EncodeKey(v, k)
			if err != nil {
				panic(err)
			}
			row, err := format.NewRow(v, k)
			if err != nil {
				panic(err)
			}
			if seed == 1 || format.ValueKindOf(k) != format.ValueRow {
				Fill(row.ProtoReflect(), seed)
			}
			if format.ValueKindOf(k) == format.ValueVersion {
				row.ProtoReflect().Set(row.ProtoReflect().Descriptor().Fields().ByNumber(1), protoreflect.ValueOfUint32(uint32(v)))
			}
			val, err := format.EncodeValue(v, k, row)
			if err != nil {
				panic(err)
			}
			out = append(out, Entry{key, val})
		}
	}
	return out
}

// Fill sets every field of m to a non-zero value derived from seed, over
// varints of several lengths.
func Fill(m protoreflect.Message, seed uint64) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		n := uint64(fd.Number())
		x := seed<<(7*(n%9)) + n
		if fd.IsList() {
			l := m.Mutable(fd).List()
			e := l.NewElement()
			Fill(e.Message(), seed+1)
			l.Append(e)
			continue
		}
		var val protoreflect.Value
		switch fd.Kind() {
		case protoreflect.MessageKind:
			Fill(m.Mutable(fd).Message(), seed)
			continue
		case protoreflect.Uint64Kind:
			val = protoreflect.ValueOfUint64(x)
		case protoreflect.Uint32Kind:
			val = protoreflect.ValueOfUint32(uint32(x))
		case protoreflect.Int64Kind:
			val = protoreflect.ValueOfInt64(int64(x))
		case protoreflect.BoolKind:
			val = protoreflect.ValueOfBool(true)
		case protoreflect.StringKind:
			val = protoreflect.ValueOfString("v" + strings.Repeat("x", int(n)))
		case protoreflect.BytesKind:
			val = protoreflect.ValueOfBytes([]byte{byte(n), 0, 0xFF, byte(seed)})
		default:
			panic("catalogfixture: field kind " + fd.Kind().String())
		}
		m.Set(fd, val)
	}
}
