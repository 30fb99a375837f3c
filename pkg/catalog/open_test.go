package catalog_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// mismatch asserts err is the startup check's refusal with these versions.
func mismatch(t *testing.T, err error, found, expected uint64, missing bool) {
	t.Helper()
	var m *format.FormatVersionMismatch
	if !errors.As(err, &m) {
		t.Fatalf("err = %v, want a FormatVersionMismatch", err)
	}
	if m.Found != found || m.Expected != expected || m.Missing != missing || m.SQLState() != "0A000" {
		t.Fatalf("mismatch = %+v (SQLSTATE %s), want found %d, expected %d, missing %v, SQLSTATE 0A000", *m, m.SQLState(), found, expected, missing)
	}
	if !strings.Contains(err.Error(), "FormatVersionMismatch (SQLSTATE 0A000)") {
		t.Fatalf("error text %q does not name FormatVersionMismatch (SQLSTATE 0A000)", err)
	}
}

func TestOpenRefusesVersion99(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		url := newURL()
		snap := format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}
		kvscan.Put(t, url, format.FormatVersionKey(), versionValue(99), mustKey(t, format.V1, snap), mustValue(t, format.V1, snap, sampleRow(t, format.V1, snap, 1)))

		for _, tc := range []struct {
			expect   format.Version
			expected uint64
		}{{0, uint64(catalog.Newest)}, {format.V1, 1}, {format.V2, 2}} {
			_, err := catalog.Open(ctx, url, catalog.Options{Expect: tc.expect})
			mismatch(t, err, 99, tc.expected, false)
			if !strings.Contains(err.Error(), "found catalog format version 99") {
				t.Fatalf("error text %q does not name version 99", err)
			}
			_, err = catalog.OpenWriter(ctx, url, catalog.Options{Expect: tc.expect})
			mismatch(t, err, 99, tc.expected, false)
		}
	})
}

func TestOpenRefusesMissingVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		url := newURL()
		// Rows but no version key: an import or seed that never finished.
		snap := format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}
		kvscan.Put(t, url, mustKey(t, format.V1, snap), mustValue(t, format.V1, snap, sampleRow(t, format.V1, snap, 1)))
		_, err := catalog.Open(ctx, url, catalog.Options{})
		mismatch(t, err, 0, uint64(catalog.Newest), true)
		_, err = catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
		mismatch(t, err, 0, 1, true)
		_, err = catalog.OpenWriter(ctx, url, catalog.Options{Expect: format.V1})
		mismatch(t, err, 0, 1, true)
	})
}

func TestOpenNoCatalog(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		url := newURL()
		for _, open := range []func() error{
			func() error { _, err := catalog.Open(ctx, url, catalog.Options{}); return err },
			func() error { _, err := catalog.OpenWriter(ctx, url, catalog.Options{}); return err },
		} {
			err := open()
			if !errors.Is(err, catalog.ErrNoCatalog) || !errors.Is(err, slatedb.ErrNoDatabase) {
				t.Fatalf("open of an empty location: %v, want ErrNoCatalog wrapping slatedb.ErrNoDatabase", err)
			}
		}
		// Neither open created a database there.
		if _, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{}); !errors.Is(err, slatedb.ErrNoDatabase) {
			t.Fatalf("after the refused opens: %v, want still no database", err)
		}
	})
}

// A refused OpenWriter must not fence the writer already there (RockLake's):
// the check runs through a reader before the writer opens.
func TestOpenWriterRefusesWithoutFencing(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		url := newURL()
		rocklake, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer rocklake.Close()
		var b slatedb.Batch
		b.Put(format.FormatVersionKey(), versionValue(99))
		if err := rocklake.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		_, err = catalog.OpenWriter(ctx, url, catalog.Options{})
		mismatch(t, err, 99, uint64(catalog.Newest), false)
		if err := rocklake.Write(ctx, &b); err != nil {
			t.Fatalf("RockLake's writer after a refused OpenWriter: %v, want it still the writer", err)
		}

		// A catalog that passes is opened, and that fences the old writer.
		b.Reset()
		b.Put(format.FormatVersionKey(), versionValue(1))
		if err := rocklake.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: format.V1})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if w.Version() != format.V1 {
			t.Fatalf("version = %s, want v1", w.Version())
		}
		if err := rocklake.Write(ctx, &b); !errors.Is(err, slatedb.ErrFenced) {
			t.Fatalf("old writer after OpenWriter: %v, want ErrFenced", err)
		}
	})
}

func TestOpenAcceptsEitherFormat(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			url := newURL()
			if err := catalog.Create(ctx, url, v, slatedb.Options{}); err != nil {
				t.Fatal(err)
			}
			c, err := catalog.Open(ctx, url, catalog.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if c.Version() != v || c.URL() != url {
				t.Fatalf("opened %s %s, want %s %s", c.Version(), c.URL(), v, url)
			}
			c.Close()
			other := format.V1 + format.V2 - v
			_, err = catalog.Open(ctx, url, catalog.Options{Expect: other})
			mismatch(t, err, uint64(v), uint64(other), false)
		}
	})
}

func TestCheck(t *testing.T) {
	u32 := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	// The documentation's form: the envelope around a protobuf u64 (field 1).
	documented := format.EncodeEnvelope(format.V1, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 1))
	for _, tc := range []struct {
		name   string
		found  []byte
		expect format.Version
		want   format.Version
		err    string
		is     error
	}{
		{"v1", []byte{0x01, 'S', 'D', 'K', 'V', 0, 0, 0, 1}, 0, format.V1, "", nil},
		// Version 2 is in the format-1 envelope too (DESIGN 2.2 item 5).
		{"v2", []byte{0x01, 'S', 'D', 'K', 'V', 0, 0, 0, 2}, 0, format.V2, "", nil},
		{"v1 expected", versionValue(1), format.V1, format.V1, "", nil},
		{"v2 expected", versionValue(2), format.V2, format.V2, "", nil},
		{"v1 not v2", versionValue(1), format.V2, 0, "found catalog format version 1, expected 2", nil},
		{"99", versionValue(99), 0, 0, "found catalog format version 99, expected 2 (this binary supports v1 and v2)", nil},
		{"99 expected v1", versionValue(99), format.V1, 0, "found catalog format version 99, expected 1", nil},
		{"missing", nil, 0, 0, "found no catalog format version (uninitialized catalog), expected 2", nil},
		{"v2 envelope", format.EncodeEnvelope(format.V2, u32(2)), 0, 0, "envelope", format.ErrEnvelopeVersion},
		{"documented form", documented, 0, 0, "documentation's protobuf form", format.ErrDocumentedVersionForm},
		{"u64 payload", format.EncodeEnvelope(format.V1, binary.BigEndian.AppendUint64(nil, 1)), 0, 0, "want a 4-byte big-endian u32", nil},
		{"garbage", []byte("garbage"), 0, 0, "catalog-format-version value", nil},
		{"unsupported expect", versionValue(1), 7, 0, "unsupported catalog format version 7", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := catalog.StartupCheck(tc.found, tc.expect)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("Check = %s, %v, want %s", got, err, tc.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("Check = %s, %v, want an error containing %q", got, err, tc.err)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("Check = %v, want it to wrap %v", err, tc.is)
			}
		})
	}
}

func TestSkipVersionCheck(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	kvscan.Put(t, url, format.FormatVersionKey(), versionValue(99))
	c, err := catalog.Open(ctx, url, catalog.Options{SkipVersionCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Version() != 0 {
		t.Fatalf("version of a version-99 catalog opened unchecked = %s, want 0", c.Version())
	}
	if v, err := c.GetRaw(ctx, format.FormatVersionKey()); err != nil || string(v) != string(versionValue(99)) {
		t.Fatalf("raw read = %x, %v", v, err)
	}
	if _, err := c.Get(ctx, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Fatalf("typed read unchecked: %v, want ErrUnsupportedVersion", err)
	}
	if _, err := catalog.Open(ctx, "file://"+t.TempDir()+"/none", catalog.Options{SkipVersionCheck: true}); !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("unchecked open of nothing: %v, want ErrNoCatalog", err)
	}
}

// A reader pinned to a checkpoint runs the check on, and sees, the
// checkpoint's state only.
func TestOpenAtCheckpoint(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	if err := catalog.Create(ctx, url, format.V1, slatedb.Options{}); err != nil {
		t.Fatal(err)
	}
	cp, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Name: "test"}, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put(format.FormatVersionKey(), versionValue(99))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = catalog.Open(ctx, url, catalog.Options{})
	mismatch(t, err, 99, uint64(catalog.Newest), false)
	c, err := catalog.Open(ctx, url, catalog.Options{Checkpoint: cp.ID})
	if err != nil {
		t.Fatalf("open at the checkpoint taken before the version changed: %v", err)
	}
	c.Close()
	if _, err := catalog.Open(ctx, url, catalog.Options{Checkpoint: "00000000-0000-4000-8000-000000000000"}); !errors.Is(err, slatedb.ErrCheckpointMissing) {
		t.Fatalf("open at a missing checkpoint: %v", err)
	}
	if _, err := catalog.OpenWriter(ctx, url, catalog.Options{Checkpoint: cp.ID}); !errors.Is(err, slatedb.ErrInvalid) {
		t.Fatalf("writer at a checkpoint: %v, want ErrInvalid", err)
	}
}
