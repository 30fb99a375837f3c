package catalog_test

import (
	"fmt"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// eachBackend runs f on file:// and on s3:// (a versitygw on loopback,
// started for the test); newURL gives a fresh catalog location each call.
func eachBackend(t *testing.T, f func(t *testing.T, newURL func() string)) {
	t.Run("file", func(t *testing.T) {
		dir, n := t.TempDir(), 0
		f(t, func() string { n++; return fmt.Sprintf("file://%s/catalog-%d", dir, n) })
	})
	t.Run("s3", func(t *testing.T) {
		s := s3server.Start(t)
		s3server.SetEnv(t, s)
		if err := s.CreateBucket(testenv.Context(t), "catalogs", true); err != nil {
			t.Fatal(err)
		}
		n := 0
		f(t, func() string { n++; return fmt.Sprintf("s3://catalogs/catalog-%d", n) })
	})
}

// versionValue is the catalog-format-version value n as RockLake writes it
// (01 'SDKV' + u32 big-endian), the same in every format.
func versionValue(n uint64) []byte { return format.EncodeFormatVersion(uint32(n)) }

func mustKey(t testing.TB, v format.Version, k format.Key) []byte {
	t.Helper()
	b, err := format.EncodeKey(v, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustValue(t testing.TB, v format.Version, k format.Key, m proto.Message) []byte {
	t.Helper()
	b, err := format.EncodeValue(v, k, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleRow returns the value of key k (its shape: Tag and Name) in format
// v with every field set to a value derived from seed, so that round trips
// cover every field: a row message, or the wrapper of a counter, version or
// bytes value.
func sampleRow(t testing.TB, v format.Version, k format.Key, seed uint64) proto.Message {
	t.Helper()
	m, err := format.NewRow(v, k)
	if err != nil {
		t.Fatal(err)
	}
	fill(t, m.ProtoReflect(), seed)
	return m
}

func fill(t testing.TB, m protoreflect.Message, seed uint64) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		// Small enough for u8 and u32 key components taken from the row.
		x := seed*100 + uint64(fd.Number())
		switch {
		case fd.IsList():
			l := m.Mutable(fd).List()
			for j := uint64(0); j < 2; j++ {
				e := l.NewElement()
				fill(t, e.Message(), seed+j)
				l.Append(e)
			}
			continue
		case fd.Kind() == protoreflect.MessageKind:
			fill(t, m.Mutable(fd).Message(), seed)
			continue
		}
		var val protoreflect.Value
		switch fd.Kind() {
		case protoreflect.Uint64Kind:
			val = protoreflect.ValueOfUint64(x)
		case protoreflect.Uint32Kind:
			val = protoreflect.ValueOfUint32(uint32(x))
		case protoreflect.Int64Kind:
			val = protoreflect.ValueOfInt64(-int64(x))
		case protoreflect.Int32Kind:
			val = protoreflect.ValueOfInt32(-int32(x))
		case protoreflect.BoolKind:
			val = protoreflect.ValueOfBool(true)
		case protoreflect.StringKind:
			val = protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), seed))
		case protoreflect.BytesKind:
			val = protoreflect.ValueOfBytes([]byte{byte(fd.Number()), 0, 0xFF, byte(seed)})
		case protoreflect.EnumKind:
			val = protoreflect.ValueOfEnum(fd.Enum().Values().Get(1).Number())
		default:
			t.Fatalf("fill: field %s has kind %s", fd.FullName(), fd.Kind())
		}
		m.Set(fd, val)
	}
}

// sampleKey is the key of row with the shape of k (Tag and Name) in format
// v: components take the values of the row's same-named integer or string
// fields, as a catalog writer would, others seed.
func sampleKey(k format.Key, row proto.Message, seed uint64) format.Key {
	out := format.Key{Tag: k.Tag, Name: k.Name}
	rm := row.ProtoReflect()
	for _, f := range format.Fields(k.Tag, k.Name) {
		fd := rm.Descriptor().Fields().ByName(protoreflect.Name(f.Name))
		switch {
		case f.Str && fd != nil && fd.Kind() == protoreflect.StringKind:
			out.Strs = append(out.Strs, rm.Get(fd).String())
		case f.Str:
			out.Strs = append(out.Strs, fmt.Sprintf("%s-%d", f.Name, seed))
		case fd != nil && (fd.Kind() == protoreflect.Uint64Kind || fd.Kind() == protoreflect.Uint32Kind):
			out.Parts = append(out.Parts, rm.Get(fd).Uint())
		default:
			out.Parts = append(out.Parts, seed)
		}
	}
	return out
}

// shapes returns one Key (Tag and Name, no components) per key shape of
// every known tag.
func shapes() []format.Key { return format.Shapes() }
