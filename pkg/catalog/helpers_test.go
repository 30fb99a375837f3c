package catalog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/localstack/localstacktest"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// eachBackend runs f on file:// and on s3:// (a versitygw on loopback,
// started for the test); newURL gives a fresh catalog location each call.
func eachBackend(t *testing.T, f func(t *testing.T, newURL func() string)) {
	t.Run("file", func(t *testing.T) {
		dir, n := t.TempDir(), 0
		f(t, func() string { n++; return fmt.Sprintf("file://%s/catalog-%d", dir, n) })
	})
	t.Run("s3", func(t *testing.T) {
		s := localstacktest.Start(t)
		localstacktest.SetEnv(t, s)
		if err := s.CreateBucket(testCtx(t), "catalogs", true); err != nil {
			t.Fatal(err)
		}
		n := 0
		f(t, func() string { n++; return fmt.Sprintf("s3://catalogs/catalog-%d", n) })
	})
}

// writeRaw writes key/value pairs (alternating) straight through SlateDB, as
// any other client could: the way to build catalogs that pkg/catalog itself
// refuses to make.
func writeRaw(t testing.TB, url string, kv ...[]byte) {
	t.Helper()
	ctx := testCtx(t)
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	for i := 0; i+1 < len(kv); i += 2 {
		b.Put(kv[i], kv[i+1])
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// versionValue is the catalog-format-version value n in the format-1
// envelope, as a format-1 binary (or a newer one reusing it) would write.
func versionValue(n uint64) []byte { return format.EncodeUint64(format.V1, n) }

func mustKey(t testing.TB, v format.Version, k format.Key) []byte {
	t.Helper()
	b, err := format.EncodeKey(v, k)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustValue(t testing.TB, v format.Version, m proto.Message) []byte {
	t.Helper()
	b, err := format.EncodeValue(v, m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleRow returns the row of tag t in format v with every field set to a
// value derived from seed, so that round trips cover every field.
func sampleRow(t testing.TB, v format.Version, tag format.Tag, seed uint64) proto.Message {
	t.Helper()
	m, err := format.NewRow(v, tag)
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
		x := seed*1000 + uint64(fd.Number())
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
		case protoreflect.Int64Kind:
			val = protoreflect.ValueOfInt64(-int64(x))
		case protoreflect.BoolKind:
			val = protoreflect.ValueOfBool(true)
		case protoreflect.StringKind:
			val = protoreflect.ValueOfString(fmt.Sprintf("%s-%d", fd.Name(), seed))
		case protoreflect.EnumKind:
			val = protoreflect.ValueOfEnum(fd.Enum().Values().Get(1).Number())
		default:
			t.Fatalf("fill: field %s has kind %s", fd.FullName(), fd.Kind())
		}
		m.Set(fd, val)
	}
}

// sampleKey is the key of row in format v: components take the values of
// the row's same-named fields, as a catalog writer would, others seed.
func sampleKey(v format.Version, tag format.Tag, row proto.Message, seed uint64) format.Key {
	switch tag {
	case format.TagCounter:
		return format.Key{Tag: tag, Name: fmt.Sprintf("next-test-%d-id", seed)}
	case format.TagSystem:
		return format.Key{Tag: tag, Name: fmt.Sprintf("test-flag-%d", seed)}
	}
	rm := row.ProtoReflect()
	var parts []uint64
	for _, name := range format.ComponentNames(v, tag) {
		if fd := rm.Descriptor().Fields().ByName(protoreflect.Name(name)); fd != nil {
			parts = append(parts, rm.Get(fd).Uint())
		} else {
			parts = append(parts, seed)
		}
	}
	return format.Key{Tag: tag, Parts: parts}
}
