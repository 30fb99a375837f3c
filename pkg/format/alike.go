package format

import (
	"google.golang.org/protobuf/reflect/protoreflect"
)

// RowsAlike reports whether the value of key k is a protobuf row whose
// messages in formats v and w are alike: the same fields (names, numbers,
// kinds, cardinality, presence, packing, enum values, nested messages
// alike in turn) and the same reserved numbers. A payload then decodes the
// same in both, known and unknown fields split alike, marshals back to the
// same bytes and prints the same JSON, so a migration can move it between
// the formats without decoding it again (ndjson.Record.Move).
func RowsAlike(v, w Version, k Key) bool {
	if !Supported(v) || !Supported(w) {
		return false
	}
	s := shapeOf(k)
	return s != nil && s.value == ValueRow && s.alike[v][w]
}

// init fills each row shape's alike table once: the tables are read-only
// afterwards.
func init() {
	for t := range shapes {
		for i := range shapes[t] {
			s := &shapes[t][i]
			if s.value != ValueRow {
				continue
			}
			for v := V1; v <= V2; v++ {
				for w := V1; w <= V2; w++ {
					s.alike[v][w] = messagesAlike(s.rows[v].Descriptor(), s.rows[w].Descriptor(), 0)
				}
			}
		}
	}
}

// messagesAlike compares two message descriptors as RowsAlike says; depth
// bounds the recursion of self-referencing messages (rows have none).
func messagesAlike(a, b protoreflect.MessageDescriptor, depth int) bool {
	if a == b {
		return true
	}
	if depth > 8 {
		return false
	}
	fa, fb := a.Fields(), b.Fields()
	if fa.Len() != fb.Len() || !rangesAlike(a.ReservedRanges(), b.ReservedRanges()) ||
		a.ReservedNames().Len() != b.ReservedNames().Len() || a.ExtensionRanges().Len() != 0 || b.ExtensionRanges().Len() != 0 ||
		a.Oneofs().Len() != b.Oneofs().Len() {
		return false
	}
	for i := 0; i < fa.Len(); i++ {
		x, y := fa.Get(i), fb.Get(i)
		if x.Name() != y.Name() || x.TextName() != y.TextName() || x.JSONName() != y.JSONName() ||
			x.Number() != y.Number() || x.Kind() != y.Kind() || x.Cardinality() != y.Cardinality() ||
			x.HasPresence() != y.HasPresence() || x.IsPacked() != y.IsPacked() || x.IsMap() != y.IsMap() ||
			x.HasDefault() != y.HasDefault() || (x.ContainingOneof() == nil) != (y.ContainingOneof() == nil) {
			return false
		}
		if x.HasDefault() && !x.Default().Equal(y.Default()) {
			return false
		}
		switch x.Kind() {
		case protoreflect.EnumKind:
			if !enumsAlike(x.Enum(), y.Enum()) {
				return false
			}
		case protoreflect.MessageKind, protoreflect.GroupKind:
			if !messagesAlike(x.Message(), y.Message(), depth+1) {
				return false
			}
		}
	}
	return true
}

func rangesAlike(a, b protoreflect.FieldRanges) bool {
	if a.Len() != b.Len() {
		return false
	}
	for i := 0; i < a.Len(); i++ {
		if a.Get(i) != b.Get(i) {
			return false
		}
	}
	return true
}

func enumsAlike(a, b protoreflect.EnumDescriptor) bool {
	va, vb := a.Values(), b.Values()
	if va.Len() != vb.Len() || a.IsClosed() != b.IsClosed() {
		return false
	}
	for i := 0; i < va.Len(); i++ {
		if va.Get(i).Name() != vb.Get(i).Name() || va.Get(i).Number() != vb.Get(i).Number() {
			return false
		}
	}
	return true
}
