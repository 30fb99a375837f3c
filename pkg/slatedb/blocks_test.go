package slatedb_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The block profile covers the compacted SSTs as the checkpoint (or the
// latest manifest) holds them, in key order within each SST, with bytes
// close to what the keys and values take; the WAL beyond is counted, not
// profiled; the bound merges blocks without losing bytes; nothing is
// written.
func TestProfileBlocks(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		raw := 0
		var b slatedb.Batch
		for i := range 20000 {
			b.Put(key(i), value(i))
			raw += len(key(i)) + len(value(i))
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := w.FlushMemtable(ctx); err != nil {
			t.Fatal(err)
		}
		put(t, ctx, w, "in-the-wal", "yes")
		live, err := slatedb.ProfileBlocks(ctx, url, "", slatedb.Options{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if live.WALSSTs < 1 || live.WALBytes <= 0 {
			t.Fatalf("a write is in the WAL only, but the profile counts %d WAL SSTs of %d bytes", live.WALSSTs, live.WALBytes)
		}
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: "profiled"})
		if err != nil {
			t.Fatal(err)
		}
		b = slatedb.Batch{}
		for i := 20000; i < 30000; i++ {
			b.Put(key(i), value(i))
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		at, err := slatedb.ProfileBlocks(ctx, url, cp.ID, slatedb.Options{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		sum := func(p slatedb.Blocks) (n int64) {
			for _, b := range p.Blocks {
				n += b.Bytes
			}
			return n
		}
		if at.ManifestID != cp.ManifestID || at.SSTs < 1 || len(at.Blocks) < 100 || at.Merged != 1 {
			t.Fatalf("at the checkpoint: manifest %d (want %d), %d SSTs, %d blocks, merged %d", at.ManifestID, cp.ManifestID, at.SSTs, len(at.Blocks), at.Merged)
		}
		if s := sum(at); s < int64(raw)/2 || s > int64(raw)*2 {
			t.Fatalf("blocks hold %d bytes; the keys and values take %d", s, raw)
		}
		first := false
		for _, b := range at.Blocks {
			first = first || bytes.Equal(b.Start, key(0)) && b.SortedRun == -1
		}
		if !first {
			t.Fatalf("no L0 block starts at the first key %q", key(0))
		}
		for i := 1; i < len(at.Blocks); i++ {
			p, c := at.Blocks[i-1], at.Blocks[i]
			if p.SST == c.SST && bytes.Compare(p.Start, c.Start) >= 0 {
				t.Fatalf("blocks %d and %d of SST %s out of key order: %q, %q", i-1, i, c.SST, p.Start, c.Start)
			}
		}

		latest, err := slatedb.ProfileBlocks(ctx, url, "", slatedb.Options{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if latest.ManifestID <= at.ManifestID || sum(latest) <= sum(at) {
			t.Fatalf("latest: manifest %d, %d bytes; checkpoint: manifest %d, %d bytes", latest.ManifestID, sum(latest), at.ManifestID, sum(at))
		}
		small, err := slatedb.ProfileBlocks(ctx, url, "", slatedb.Options{}, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(small.Blocks) > max(10, small.SSTs) || small.Merged < 2 || sum(small) != sum(latest) {
			t.Fatalf("bounded to 10: %d blocks of %d SSTs, merged %d, %d bytes (unbounded %d)", len(small.Blocks), small.SSTs, small.Merged, sum(small), sum(latest))
		}
		again, err := slatedb.ProfileBlocks(ctx, url, "", slatedb.Options{}, 0)
		if err != nil || again.ManifestID != latest.ManifestID {
			t.Fatalf("profiling moved the manifest: %d then %d, %v", latest.ManifestID, again.ManifestID, err)
		}

		if _, err := slatedb.ProfileBlocks(ctx, url, "6f1d7c44-0000-4000-8000-000000000000", slatedb.Options{}, 0); !errors.Is(err, slatedb.ErrCheckpointMissing) {
			t.Errorf("missing checkpoint: %v", err)
		}
		if _, err := slatedb.ProfileBlocks(ctx, url+"-nothing", "", slatedb.Options{}, 0); !errors.Is(err, slatedb.ErrNoDatabase) {
			t.Errorf("no database: %v", err)
		}
	})
}
