package format_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

var versions = []format.Version{format.V1, format.V2}

// sampleRow returns the row of tag t in format v with every field set to a
// deterministic non-zero value derived from seed, so that round trips
// exercise every field, and varints of several lengths.
func sampleRow(t testing.TB, v format.Version, tag format.Tag, seed uint64) proto.Message {
	t.Helper()
	m, err := format.NewRow(v, tag)
	if err != nil {
		t.Fatal(err)
	}
	fill(m.ProtoReflect(), seed)
	return m
}

func fill(m protoreflect.Message, seed uint64) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		n := uint64(fd.Number())
		// Spread the values over 1..8-byte varints.
		x := seed<<(7*(n%9)) + n
		switch {
		case fd.IsList():
			list := m.Mutable(fd).List()
			for j := uint64(0); j < 2; j++ {
				e := list.NewElement()
				fill(e.Message(), seed+j)
				list.Append(e)
			}
			continue
		case fd.Kind() == protoreflect.MessageKind:
			fill(m.Mutable(fd).Message(), seed)
			continue
		}
		var val protoreflect.Value
		switch fd.Kind() {
		case protoreflect.Uint64Kind:
			val = protoreflect.ValueOfUint64(x)
		case protoreflect.Int64Kind:
			val = protoreflect.ValueOfInt64(int64(x))
		case protoreflect.BoolKind:
			val = protoreflect.ValueOfBool(true)
		case protoreflect.StringKind:
			val = protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), seed))
		case protoreflect.EnumKind:
			val = protoreflect.ValueOfEnum(fd.Enum().Values().Get(1).Number())
		default:
			panic(fmt.Sprintf("fill: field %s has kind %s, teach fill about it", fd.FullName(), fd.Kind()))
		}
		m.Set(fd, val)
	}
}

// sampleKey returns a key of tag t in format v whose components take the
// values of the same-named fields of row where there are any, as a catalog
// writer would.
func sampleKey(v format.Version, tag format.Tag, row proto.Message, seed uint64) format.Key {
	switch {
	case tag == format.TagCounter:
		return format.Key{Tag: tag, Name: format.CounterNextFileID}
	case tag == format.TagSystem:
		return format.Key{Tag: tag, Name: format.SystemWriterEpoch}
	}
	names := format.ComponentNames(v, tag)
	parts := make([]uint64, len(names))
	rm := row.ProtoReflect()
	for i, name := range names {
		if fd := rm.Descriptor().Fields().ByName(protoreflect.Name(name)); fd != nil && fd.Kind() == protoreflect.Uint64Kind {
			parts[i] = rm.Get(fd).Uint()
		} else {
			parts[i] = seed<<(8*uint(i)) + uint64(i)
		}
	}
	return format.Key{Tag: tag, Parts: parts}
}
