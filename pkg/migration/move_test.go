package migration_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// movedAgainstDecoded transforms every format-1 entry along v1→v2, from
// its record as the export makes it (with its line: ndjson.Record.WithLine)
// and as a v1 shard reads it back, and holds each record the transform
// makes to the one ndjson.NewRecord decodes from the same bytes, which is
// what the transform made before rows moved without a second decode: the
// same key, row, unknown fields and bytes, and shard files of the same
// bytes, trailers and digests included. It returns how many records it
// compared.
func movedAgainstDecoded(t *testing.T, entries func(yield func(key, value []byte) bool)) int {
	t.Helper()
	path, err := migration.Path(format.V1, format.V2)
	if err != nil {
		t.Fatal(err)
	}
	opts := migration.Options{UnknownTags: migration.UnknownCarry}
	h := ndjson.Header{CatalogFormat: format.V2, ShardCount: 1}
	var got, want, v1 bytes.Buffer
	gw, _ := ndjson.NewWriter(&got, h)
	ww, _ := ndjson.NewWriter(&want, h)
	v1w, _ := ndjson.NewWriter(&v1, ndjson.Header{CatalogFormat: format.V1, ShardCount: 1})
	var gd, wd ndjson.Digest
	n := 0
	check := func(in ndjson.Record) {
		t.Helper()
		outs, err := migration.Records(in, path, opts)
		if err != nil {
			t.Fatalf("key %x: %v", in.Key(), err)
		}
		for _, out := range outs {
			k, v := out.Raw()
			ref, err := ndjson.NewRecord(format.V2, k, v)
			if err != nil {
				t.Fatalf("v2 key %x: %v", k, err)
			}
			rk, rv := ref.Raw()
			if out.Version() != format.V2 || !bytes.Equal(k, rk) || !bytes.Equal(v, rv) ||
				!reflect.DeepEqual(out.Key(), ref.Key()) || !bytes.Equal(out.Unknown(), ref.Unknown()) ||
				!proto.Equal(out.Row(), ref.Row()) {
				t.Fatalf("v2 key %x: transformed record %+v / %v, decoded %+v / %v", k, out.Key(), out.Row(), ref.Key(), ref.Row())
			}
			if out.Row() != nil && out.Row().ProtoReflect().Descriptor() != ref.Row().ProtoReflect().Descriptor() {
				t.Fatalf("v2 key %x: row is a %s, want %s", k, out.Row().ProtoReflect().Descriptor().FullName(), ref.Row().ProtoReflect().Descriptor().FullName())
			}
			if err := gw.Write(out); err != nil {
				t.Fatal(err)
			}
			if err := ww.Write(ref); err != nil {
				t.Fatal(err)
			}
			gd.Add(out)
			wd.Add(ref)
			n++
		}
	}
	for key, value := range entries {
		rec, err := ndjson.NewRecord(format.V1, key, value)
		if err != nil {
			t.Fatalf("key %x: %v", key, err)
		}
		lined, err := rec.WithLine()
		if err != nil {
			t.Fatal(err)
		}
		if err := v1w.Write(lined); err != nil {
			t.Fatal(err)
		}
		check(lined)
		check(rec)
	}
	// The same records read back from a format-1 shard, as TransformFile
	// reads them.
	if err := v1w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := ndjson.NewReader(&v1)
	if err != nil {
		t.Fatal(err)
	}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		check(rec)
	}
	if err := gw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ww.Close(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Fatalf("the transformed shard (%d bytes) is not the decoded records' (%d bytes)", got.Len(), want.Len())
	}
	if gw.Trailer().SHA256 != ww.Trailer().SHA256 || gd != wd || gd.Sum() == (ndjson.Digest{}).Sum() {
		t.Fatalf("trailer %s / digest %s, decoded %s / %s", gw.Trailer().SHA256, gd.Sum(), ww.Trailer().SHA256, wd.Sum())
	}
	return n
}

// Every shape, filled and empty, with unknown fields, and with values that
// are not their rows' canonical encoding (fields out of order: carried
// verbatim), and records of unknown tags.
func TestMovedRecordsAreTheDecodedOnesEveryShape(t *testing.T) {
	unknown := protowire.AppendTag(nil, 900, protowire.BytesType)
	unknown = protowire.AppendString(unknown, "added by a newer binary")
	entries := func(yield func(key, value []byte) bool) {
		for _, e := range catalogfixture.Entries(format.V1) {
			k, err := format.DecodeKey(format.V1, e.Key)
			if err != nil {
				t.Fatal(err)
			}
			if k.Tag == format.TagSnapshot {
				continue // Fill's snapshot_time is no time; the catalogs below have snapshots
			}
			if !yield(e.Key, e.Value) {
				return
			}
			if format.ValueKindOf(k) != format.ValueRow {
				continue
			}
			payload, err := format.DecodeEnvelope(format.V1, e.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !yield(e.Key, format.EncodeEnvelope(format.V1, append(bytes.Clone(payload), unknown...))) {
				return
			}
			if rev := reversedFields(t, payload); !bytes.Equal(rev, payload) {
				if !yield(e.Key, format.EncodeEnvelope(format.V1, rev)) {
					return
				}
			}
		}
		yield([]byte{0x42, 1, 2}, []byte("opaque"))
		yield([]byte{0x1D, 9}, format.EncodeEnvelope(format.V1, []byte{8, 1}))
	}
	if n := movedAgainstDecoded(t, entries); n < 3*len(catalogfixture.Entries(format.V1)) {
		t.Fatalf("compared %d records", n)
	}
}

// reversedFields returns payload with its top-level fields in reverse
// order: the same row, not in its canonical encoding.
func reversedFields(t *testing.T, payload []byte) []byte {
	var fields [][]byte
	for b := payload; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		m := protowire.ConsumeFieldValue(num, typ, b[max(n, 0):])
		if n < 0 || m < 0 {
			t.Fatalf("payload %x does not parse", payload)
		}
		fields = append(fields, b[:n+m])
		b = b[n+m:]
	}
	var out []byte
	for i := len(fields) - 1; i >= 0; i-- {
		out = append(out, fields[i]...)
	}
	return out
}

// A seeded catalog (RockLake's mix of tables) and the catalogs the real
// RockLake v0.47.11 wrote (pkg/catalog/testdata).
func TestMovedRecordsAreTheDecodedOnesCatalogs(t *testing.T) {
	eachV1Catalog(t, map[string]string{
		"rocklake-v0.47.11":        filepath.Join("..", "catalog", "testdata", "rocklake-v0.47.11", "catalog"),
		"rocklake-v0.47.11/duckdb": filepath.Join("..", "catalog", "testdata", "rocklake-v0.47.11", "duckdb", "catalog"),
	}, func(t *testing.T, ctx context.Context, c *catalog.Catalog) {
		keys := 0
		n := movedAgainstDecoded(t, func(yield func(key, value []byte) bool) {
			for e, err := range c.ScanRaw(ctx, nil, nil) {
				if err != nil {
					t.Fatal(err)
				}
				keys++
				if !yield(e.Key, e.Value) {
					return
				}
			}
		})
		// Each key as exported, as read back, and without its line.
		if keys < 40 || n != 3*keys {
			t.Fatalf("compared %d records of %d keys", n, keys)
		}
	})
}

// eachV1Catalog runs f as a subtest on each of the format-1 catalogs: a
// seeded one (3000 rows) and a copy of each fixture's (name → directory),
// open, with a context for its I/O.
func eachV1Catalog(t *testing.T, fixtures map[string]string, f func(t *testing.T, ctx context.Context, c *catalog.Catalog)) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	seeded := "file://" + filepath.Join(t.TempDir(), "seeded")
	if _, err := seed.Seed(ctx, seeded, seed.Options{Rows: 3000, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	urls := map[string]string{"seeded": seeded}
	for name, dir := range fixtures {
		tmp := filepath.Join(t.TempDir(), "catalog")
		if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		urls[name] = "file://" + tmp
	}
	for name, url := range urls {
		t.Run(name, func(t *testing.T) {
			c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			f(t, ctx, c)
		})
	}
}
