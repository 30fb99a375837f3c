package catalog_test

import (
	"errors"
	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/testcatalog"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// PutRaw writes only what the catalog's format stores under the key, and
// DeleteRaw never the version key: a refused write leaves the catalog as it
// was.
func TestPutRawChecksTheValue(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	if err := catalog.Create(ctx, url, format.V1, slatedb.Options{}); err != nil {
		t.Fatal(err)
	}
	snap := mustKey(t, format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}})
	counter := []byte{0xfe, 0x01}
	for name, kv := range map[string][2][]byte{
		"not an envelope":          {snap, {0}},
		"a format-2 envelope":      {snap, format.EncodeEnvelope(format.V2, nil)},
		"a counter of one byte":    {counter, format.EncodeEnvelope(format.V1, []byte{1})},
		"a bad format version key": {format.FormatVersionKey(), []byte("\x01SDKV")},
	} {
		if err := catalog.PutRaw(ctx, url, catalog.Options{}, kv[0], kv[1]); !errors.Is(err, catalog.ErrInvalidValue) {
			t.Fatalf("%s: %v, want InvalidValue", name, err)
		}
	}
	if err := catalog.DeleteRaw(ctx, url, catalog.Options{}, format.FormatVersionKey()); !errors.Is(err, catalog.ErrVersionKeyDelete) {
		t.Fatalf("delete of the version key: %v", err)
	}
	read := func(key []byte) []byte {
		t.Helper()
		c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		v, err := c.GetRaw(ctx, key)
		if err != nil && !errors.Is(err, slatedb.ErrNotFound) {
			t.Fatal(err)
		}
		return v
	}
	if v := read(snap); v != nil {
		t.Fatalf("a refused put wrote %x", v)
	}
	good := format.EncodeEnvelope(format.V1, nil)
	if err := catalog.PutRaw(ctx, url, catalog.Options{}, snap, good); err != nil {
		t.Fatal(err)
	}
	if v := read(snap); string(v) != string(good) {
		t.Fatalf("put wrote %x, want %x", v, good)
	}
	if err := catalog.DeleteRaw(ctx, url, catalog.Options{}, snap); err != nil {
		t.Fatal(err)
	}
	if v := read(snap); v != nil {
		t.Fatalf("delete left %x", v)
	}
}

// The version key's repair: a wrong version makes the catalog refused,
// writes included, until PutRaw with the check skipped puts the right one.
func TestPutRawRepairsTheVersionKey(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	if err := catalog.Create(ctx, url, format.V1, slatedb.Options{}); err != nil {
		t.Fatal(err)
	}
	if err := catalog.PutRaw(ctx, url, catalog.Options{}, format.FormatVersionKey(), versionValue(99)); err != nil {
		t.Fatal(err)
	}
	var mismatch *format.FormatVersionMismatch
	if err := catalog.PutRaw(ctx, url, catalog.Options{}, format.FormatVersionKey(), versionValue(1)); !errors.As(err, &mismatch) {
		t.Fatalf("put into a version-99 catalog: %v, want the startup check's refusal", err)
	}
	if err := catalog.PutRaw(ctx, url, catalog.Options{SkipVersionCheck: true}, format.FormatVersionKey(), versionValue(1)); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatalf("the repaired catalog: %v", err)
	}
	c.Close()
}

// ScanPrefix yields exactly the keys under a prefix, one ending in 0xFF
// included, and every key for none (tags 0x2F and 0x30: no catalog has them).
func TestScanPrefix(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	if err := catalog.Create(ctx, url, format.V1, slatedb.Options{}); err != nil {
		t.Fatal(err)
	}
	kvscan.Put(t, url, []byte{0x2f, 0xff}, nil, []byte{0x30, 0x01}, nil, []byte{0x30, 0xff}, nil, []byte{0x30, 0xff, 0x02}, nil)
	c := testcatalog.OpenV1(t, url)
	count := func(prefix []byte) (n int) {
		t.Helper()
		for e, err := range c.ScanPrefix(ctx, prefix) {
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Key) < len(prefix) || string(e.Key[:len(prefix)]) != string(prefix) {
				t.Fatalf("prefix %x: key %x", prefix, e.Key)
			}
			n++
		}
		return n
	}
	all := 0
	for _, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all++
	}
	for _, c := range []struct {
		prefix []byte
		want   int
	}{{[]byte{0x30}, 3}, {[]byte{0x30, 0xff}, 2}, {[]byte{0x2f}, 1}, {nil, all}} {
		if got := count(c.prefix); got != c.want {
			t.Errorf("prefix %x: %d keys, want %d", c.prefix, got, c.want)
		}
	}
}
