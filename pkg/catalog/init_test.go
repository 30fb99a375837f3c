package catalog_test

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The initialisation batch is exactly what RockLake's init.rs writes:
// catalog-format-version, the three global counters at 1 and retain-from = 0.
// writer-epoch and writer-nonce are the first writer's, not the batch's.
func TestCreateWritesTheInitialisationBatch(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
		for _, v := range []format.Version{format.V1, format.V2} {
			url := newURL()
			if err := catalog.Create(ctx, url, v, slatedb.Options{}); err != nil {
				t.Fatal(err)
			}
			c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
			if err != nil {
				t.Fatal(err)
			}
			// The bytes, spelt out: counter keys are 0xFE and an id byte in
			// both formats; the version is 01 'SDKV' + u32 in both formats;
			// the other values are in the format's own envelope.
			counter := func(n uint64) string {
				if v == format.V1 {
					return fmt.Sprintf("0153444b56%016x", n) // RockLake's encode_counter
				}
				// 02 'SDKV', the CRC-32C of the payload, the big-endian u64.
				payload := binary.BigEndian.AppendUint64(nil, n)
				return fmt.Sprintf("0253444b56%08x%x", crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)), payload)
			}
			want := map[string]string{
				"fe01": counter(1), // next_snapshot_id
				"fe02": counter(1), // next_catalog_id
				"fe03": counter(1), // next_file_id
				hex.EncodeToString(append([]byte{0xFF}, "retain-from"...)):            counter(0),
				hex.EncodeToString(append([]byte{0xFF}, "catalog-format-version"...)): fmt.Sprintf("0153444b56%08x", uint32(v)),
			}
			got := map[string]string{}
			for e, err := range c.ScanRaw(ctx, nil, nil) {
				if err != nil {
					t.Fatal(err)
				}
				got[hex.EncodeToString(e.Key)] = hex.EncodeToString(e.Value)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("%s catalog holds %v, want %v", v, got, want)
			}
			for _, name := range []string{format.NameNextSnapshotID, format.NameNextCatalogID, format.NameNextFileID} {
				if n, err := c.Counter(ctx, name); err != nil || n != 1 {
					t.Fatalf("Counter(%s) = %d, %v, want 1", name, n, err)
				}
			}
			if n, err := c.SystemValue(ctx, format.SystemRetainFrom); err != nil || n != 0 {
				t.Fatalf("SystemValue(retain-from) = %d, %v, want 0", n, err)
			}
			for _, name := range []string{format.SystemWriterEpoch, format.SystemHotKey} {
				if _, err := c.SystemValue(ctx, name); !errors.Is(err, catalog.ErrNotFound) {
					t.Fatalf("SystemValue(%s) of a new catalog: %v, want ErrNotFound", name, err)
				}
			}
			s, err := c.Summary(ctx)
			if err != nil {
				t.Fatal(err)
			}
			wantSystem := map[string]string{"catalog-format-version": fmt.Sprint(uint64(v)), "retain-from": "0"}
			wantCounters := map[string]uint64{format.NameNextSnapshotID: 1, format.NameNextCatalogID: 1, format.NameNextFileID: 1}
			if s.FormatVersion != v || fmt.Sprint(s.System) != fmt.Sprint(wantSystem) || fmt.Sprint(s.Counters) != fmt.Sprint(wantCounters) ||
				s.Tables[format.TagCounter.Name()] != 3 || s.Tables[format.TagSystem.Name()] != 2 || len(s.UnknownTags) != 0 {
				t.Fatalf("summary of a new %s catalog = %+v", v, s)
			}
			c.Close()
		}
	})
}

func TestCreateRefusesNonEmpty(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		ctx := testenv.Context(t)
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
		kvscan.Put(t, url, []byte{0x1D, 1}, []byte("x"))
		if err := catalog.Create(ctx, url, format.V2, slatedb.Options{}); !errors.Is(err, catalog.ErrTargetNotEmpty) {
			t.Fatalf("create over a stray key: %v, want ErrTargetNotEmpty", err)
		}
		// A catalog of a format this binary does not know: the startup check's refusal.
		url = newURL()
		kvscan.Put(t, url, format.FormatVersionKey(), versionValue(99))
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
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	in, err := catalog.NewInitializer(ctx, url, format.V1, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if in.Version() != format.V1 {
		t.Fatalf("version %s", in.Version())
	}
	var b slatedb.Batch
	snap := format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}
	b.Put(mustKey(t, format.V1, snap), mustValue(t, format.V1, snap, sampleRow(t, format.V1, snap, 1)))
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
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/c"
	in, err := catalog.NewInitializer(ctx, url, format.V2, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	// A zero counter is initialized to 1, as RockLake does.
	if err := in.Finalize(ctx, catalog.Counters{NextFileID: 42, NextSnapshotID: 7}); err != nil {
		t.Fatal(err)
	}
	if err := in.Finalize(ctx, catalog.Counters{}); err == nil {
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
	for name, want := range map[string]uint64{format.NameNextFileID: 42, format.NameNextSnapshotID: 7, format.NameNextCatalogID: 1} {
		if n, err := c.Counter(ctx, name); err != nil || n != want {
			t.Fatalf("counter %s = %d, %v, want %d", name, n, err, want)
		}
	}
	raw, err := c.GetRaw(ctx, format.CounterKey(format.V2, format.NameNextFileID))
	if err != nil || !bytes.Equal(raw, format.EncodeCounter(format.V2, 42)) || raw[0] != 0x02 {
		t.Fatalf("next_file_id value = %x, %v, want the v2 envelope around 42", raw, err)
	}
	// The version stays in the format-1 envelope (DESIGN 2.2 item 5).
	raw, err = c.GetRaw(ctx, format.FormatVersionKey())
	if err != nil || !bytes.Equal(raw, []byte{0x01, 'S', 'D', 'K', 'V', 0, 0, 0, 2}) {
		t.Fatalf("version key = %x, %v", raw, err)
	}
}
