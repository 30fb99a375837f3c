package ndjson_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

var suffixes = []struct {
	name  string
	magic []byte // how the stored bytes must start
}{
	{".ndjson", []byte(`{"rocklake_export_format":1,`)},
	{".ndjson.zst", []byte{0x28, 0xB5, 0x2F, 0xFD}},
	{".ndjson.gz", []byte{0x1F, 0x8B}},
}

// writeFile writes rs as a shard file at url.
func writeFile(t testing.TB, store *blob.Store, url string, h ndjson.Header, rs []ndjson.Record) {
	t.Helper()
	fw, err := ndjson.Create(context.Background(), store, url, h)
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Abort()
	for _, r := range rs {
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}
}

// readFile reads the shard file at url; the error is the first one met.
func readFile(store *blob.Store, url string) (ndjson.Header, []ndjson.Record, error) {
	fr, err := ndjson.Open(context.Background(), store, url)
	if err != nil {
		return ndjson.Header{}, nil, err
	}
	defer fr.Close()
	var rs []ndjson.Record
	for {
		r, err := fr.Next()
		if err != nil {
			return fr.Header(), rs, ignoreEOF(err)
		}
		rs = append(rs, r)
	}
}

// checkFileRoundTrip writes every kind of entry at base+suffix for each
// suffix and reads them back.
func checkFileRoundTrip(t *testing.T, store *blob.Store, base string, stored func(url string) []byte) {
	for _, v := range versions {
		es := allEntries(t, v)
		for _, sfx := range suffixes {
			url := base + v.String() + sfx.name
			writeFile(t, store, url, header(v), records(t, v, es))
			if b := stored(url); !bytes.HasPrefix(b, sfx.magic) {
				t.Errorf("%s starts with %x, want %x", url, b[:min(len(b), 8)], sfx.magic)
			}
			h, rs, err := readFile(store, url)
			if err != nil {
				t.Fatalf("%s: %v", url, err)
			}
			if h.ShardIndex != 2 || h.CatalogFormat != v || len(rs) != len(es) {
				t.Fatalf("%s: header %+v, %d records, want %d", url, h, len(rs), len(es))
			}
			for i, r := range rs {
				if k, val := r.Raw(); !bytes.Equal(k, es[i].key) || !bytes.Equal(val, es[i].value) {
					t.Errorf("%s record %d: %x=%x, want %x=%x", url, i, k, val, es[i].key, es[i].value)
				}
			}
			if _, tr, err := ndjson.VerifyFile(context.Background(), store, url); err != nil || tr.Records != uint64(len(es)) {
				t.Errorf("VerifyFile %s: %d records, %v", url, tr.Records, err)
			}
		}
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	checkFileRoundTrip(t, testenv.Store(t), dir+"/shard-", func(url string) []byte {
		b, err := os.ReadFile(url)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})
}

func TestS3(t *testing.T) {
	st := s3server.Start(t)
	s3server.SetEnv(t, st)
	ctx := context.Background()
	if err := st.CreateBucket(ctx, "shards", false); err != nil {
		t.Fatal(err)
	}
	store := testenv.Store(t)
	checkFileRoundTrip(t, store, "s3://shards/m1/shard-", func(url string) []byte {
		b, _, err := store.Get(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		return b
	})

	// An abandoned S3 shard leaves no object.
	fw, err := ndjson.Create(ctx, store, "s3://shards/m2/shard.ndjson.zst", header(format.V1))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range records(t, format.V1, allEntries(t, format.V1)) {
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if infos, err := store.List(ctx, "s3://shards/m2/"); err != nil || len(infos) != 0 {
		t.Errorf("before Close: %v, %v; want no objects", infos, err)
	}
	fw.Abort()
	if infos, err := store.List(ctx, "s3://shards/m2/"); err != nil || len(infos) != 0 {
		t.Errorf("after Abort: %v, %v; want no objects", infos, err)
	}
}

// A failed or abandoned export leaves no shard, not even part of one.
func TestFileNotPublishedOnFailure(t *testing.T) {
	dir := t.TempDir()
	store := testenv.Store(t)
	ctx := context.Background()
	for _, sfx := range suffixes {
		aborted := filepath.Join(dir, "aborted"+sfx.name)
		fw, err := ndjson.Create(ctx, store, aborted, header(format.V1))
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(records(t, format.V1, shapeEntries(t, format.V1))[0]); err != nil {
			t.Fatal(err)
		}
		fw.Abort()
		if err := fw.Close(); err == nil {
			t.Errorf("%s: Close after Abort succeeded", sfx.name)
		}

		failed := filepath.Join(dir, "failed"+sfx.name)
		fw, err = ndjson.Create(ctx, store, failed, header(format.V1))
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(records(t, format.V2, shapeEntries(t, format.V2))[0]); err == nil {
			t.Fatalf("%s: a v2 record went into a v1 shard", sfx.name)
		}
		if err := fw.Close(); err == nil {
			t.Errorf("%s: Close after a failed Write succeeded", sfx.name)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

func TestCompressedTruncated(t *testing.T) {
	dir := t.TempDir()
	store := testenv.Store(t)
	for _, sfx := range suffixes[1:] {
		url := filepath.Join(dir, "shard"+sfx.name)
		writeFile(t, store, url, header(format.V1), records(t, format.V1, allEntries(t, format.V1)))
		whole, err := os.ReadFile(url)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{len(whole) - 1, len(whole) - 4, len(whole) / 2, 20, 3} {
			cut := filepath.Join(dir, "cut"+sfx.name)
			if err := os.WriteFile(cut, whole[:n], 0o644); err != nil {
				t.Fatal(err)
			}
			if _, _, err := readFile(store, cut); !errors.Is(err, ndjson.ErrCorrupt) {
				t.Errorf("%s cut to %d of %d bytes: %v, want ErrCorrupt", sfx.name, n, len(whole), err)
			}
		}
	}
}

// A damaged compressed file never reads as whole: the decompressor's check
// or the line and trailer checks catch every flipped byte that changes what
// is read.
func TestCompressedCorrupt(t *testing.T) {
	dir := t.TempDir()
	store := testenv.Store(t)
	es := allEntries(t, format.V1)
	for _, sfx := range suffixes[1:] {
		url := filepath.Join(dir, "shard"+sfx.name)
		writeFile(t, store, url, header(format.V1), records(t, format.V1, es))
		whole, err := os.ReadFile(url)
		if err != nil {
			t.Fatal(err)
		}
		corrupt := 0
		// Every byte of the frame headers and the end, some in between.
		for i := 0; i < len(whole); i++ {
			if i > 32 && i < len(whole)-16 && i%7 != 0 {
				continue
			}
			damaged := bytes.Clone(whole)
			damaged[i] ^= 0x10
			bad := filepath.Join(dir, "bad"+sfx.name)
			if err := os.WriteFile(bad, damaged, 0o644); err != nil {
				t.Fatal(err)
			}
			_, rs, err := readFile(store, bad)
			switch {
			case errors.Is(err, ndjson.ErrCorrupt):
				corrupt++
			case errors.Is(err, ndjson.ErrBadLine), errors.Is(err, ndjson.ErrHeader),
				errors.Is(err, ndjson.ErrTrailerMismatch), errors.Is(err, ndjson.ErrNoTrailer):
			case err != nil:
				t.Errorf("%s with byte %d of %d flipped: %v, want a named error", sfx.name, i, len(whole), err)
			default:
				// Bits no decoder reads (gzip's mtime, zstd's unused
				// header bit, some entropy-table padding): harmless only
				// if every record is still what was written.
				if len(rs) != len(es) {
					t.Fatalf("%s with byte %d flipped reads %d records without error, want %d", sfx.name, i, len(rs), len(es))
				}
				for j, r := range rs {
					if k, v := r.Raw(); !bytes.Equal(k, es[j].key) || !bytes.Equal(v, es[j].value) {
						t.Fatalf("%s with byte %d flipped reads without error but record %d is %x=%x", sfx.name, i, j, k, v)
					}
				}
			}
		}
		if corrupt == 0 {
			t.Errorf("%s: no flipped byte reported as ErrCorrupt", sfx.name)
		}
	}
}

// Shards written at other zstd levels and windows (those before the
// fastest level, or another tool's) read back the same.
func TestZstdAnyLevelReads(t *testing.T) {
	dir := t.TempDir()
	store := testenv.Store(t)
	es := allEntries(t, format.V1)
	plain := filepath.Join(dir, "shard.ndjson")
	writeFile(t, store, plain, header(format.V1), records(t, format.V1, es))
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression} {
		var buf bytes.Buffer
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(level), zstd.WithWindowSize(8<<20))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := zw.Write(raw); err != nil {
			t.Fatal(err)
		}
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		url := filepath.Join(dir, level.String()+".ndjson.zst")
		if err := os.WriteFile(url, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		_, rs, err := readFile(store, url)
		if err != nil || len(rs) != len(es) {
			t.Fatalf("%s: %d records, %v", level, len(rs), err)
		}
		for i, r := range rs {
			if k, v := r.Raw(); !bytes.Equal(k, es[i].key) || !bytes.Equal(v, es[i].value) {
				t.Fatalf("%s record %d: %x=%x", level, i, k, v)
			}
		}
	}
}
