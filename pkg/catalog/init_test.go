package catalog_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The initialisation batch is exactly what docs/schema-version.md shows.
func TestCreateWritesTheInitialisationBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testCtx(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			url := newURL()
			if err := catalog.Create(ctx, url, v, slatedb.Options{}); err != nil {
				t.Fatal(err)
			}
			c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]uint64{string(format.FormatVersionKey()): uint64(v), string(format.SystemKey(format.SystemWriterEpoch)): 1}
			for _, n := range format.CounterNames() {
				want[string(format.CounterKey(n))] = 1
			}
			got := map[string]uint64{}
			for e, err := range c.ScanRaw(ctx, nil, nil) {
				if err != nil {
					t.Fatal(err)
				}
				n, err := format.DecodeUint64(v, e.Value)
				if err != nil {
					t.Fatalf("key %q: %v", e.Key, err)
				}
				got[string(e.Key)] = n
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s catalog holds %v, want %v", v, got, want)
			}
			if n, err := c.Counter(ctx, format.CounterNextFileID); err != nil || n != 1 {
				t.Fatalf("Counter = %d, %v", n, err)
			}
			if n, err := c.SystemValue(ctx, format.SystemWriterEpoch); err != nil || n != 1 {
				t.Fatalf("SystemValue = %d, %v", n, err)
			}
			if _, err := c.SystemValue(ctx, format.SystemHotKey); !errors.Is(err, catalog.ErrNotFound) {
				t.Fatalf("missing system key: %v, want ErrNotFound", err)
			}
			c.Close()
		}
	})
}

func TestCreateRefusesNonEmpty(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testCtx(t)
		// A catalog already there.
		url := newURL()
		if err := catalog.Create(ctx, url, format.V1, slatedb.Options{}); err != nil {
			t.Fatal(err)
		}
		if err := catalog.Create(ctx, url, format.V1, slatedb.Options{}); !errors.Is(err, catalog.ErrTargetNotEmpty) {
			t.Fatalf("create over a catalog: %v, want ErrTargetNotEmpty", err)
		}
		// Any key at all, without a version.
		url = newURL()
		writeRaw(t, url, []byte{0x0E, 1}, []byte("x"))
		if err := catalog.Create(ctx, url, format.V2, slatedb.Options{}); !errors.Is(err, catalog.ErrTargetNotEmpty) {
			t.Fatalf("create over a stray key: %v, want ErrTargetNotEmpty", err)
		}
		// A catalog of a format this binary does not know: the startup check's refusal.
		url = newURL()
		writeRaw(t, url, format.FormatVersionKey(), versionValue(99))
		err := catalog.Create(ctx, url, format.V1, slatedb.Options{})
		mismatch(t, err, 99, 1, false)

		// None of the refusals wrote anything.
		c, err := catalog.Open(ctx, url, catalog.Options{SkipVersionCheck: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		n := 0
		for _, err := range c.ScanRaw(ctx, nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("refused create left %d keys, want the 1 that was there", n)
		}
	})
}

// Rows go in before the version key; an initialisation that never reaches
// Finalize leaves a location that no open accepts and no create reuses.
func TestInitializerWithoutFinalize(t *testing.T) {
	ctx := testCtx(t)
	url := "file://" + t.TempDir() + "/c"
	in, err := catalog.NewInitializer(ctx, url, format.V1, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Version() != format.V1 {
		t.Fatalf("version %s", in.Version())
	}
	var b slatedb.Batch
	b.Put(mustKey(t, format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}), mustValue(t, format.V1, sampleRow(t, format.V1, format.TagSnapshot, 1)))
	if err := in.WriteAsync(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := in.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = catalog.Open(ctx, url, catalog.Options{})
	mismatch(t, err, 0, uint64(catalog.Newest), true)
	if _, err := catalog.NewInitializer(ctx, url, format.V1, slatedb.Options{}); !errors.Is(err, catalog.ErrTargetNotEmpty) {
		t.Fatalf("initializer over an unfinished one: %v, want ErrTargetNotEmpty", err)
	}
}

func TestFinalizeCounters(t *testing.T) {
	ctx := testCtx(t)
	url := "file://" + t.TempDir() + "/c"
	in, err := catalog.NewInitializer(ctx, url, format.V2, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if err := in.Finalize(ctx, map[string]uint64{format.CounterNextFileID: 42, "next-partition-id": 7}); err != nil {
		t.Fatal(err)
	}
	if err := in.Finalize(ctx, nil); err == nil {
		t.Fatal("second Finalize succeeded")
	}
	var b slatedb.Batch
	b.Put([]byte{0x01}, []byte{})
	if err := in.WriteAsync(ctx, &b); err == nil {
		t.Fatal("WriteAsync after Finalize succeeded")
	}
	in.Close()
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for name, want := range map[string]uint64{format.CounterNextFileID: 42, "next-partition-id": 7, format.CounterNextTagID: 1} {
		if n, err := c.Counter(ctx, name); err != nil || n != want {
			t.Fatalf("counter %s = %d, %v, want %d", name, n, err, want)
		}
	}
	raw, err := c.GetRaw(ctx, format.FormatVersionKey())
	if err != nil || !bytes.Equal(raw, format.EncodeUint64(format.V2, 2)) {
		t.Fatalf("version key = %x, %v", raw, err)
	}
}
