package slatedb_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A checkpoint copied to a place of its own is a database by itself: it holds
// what the checkpoint held (WAL writes not yet in L0 included), not what was
// written after, takes writes of its own without touching the source, and the
// source's checkpoints are not in it.
func TestCopyCheckpointIsADatabaseOfItsOwn(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		var b slatedb.Batch
		for i := range 3000 {
			b.Put(key(i), value(i))
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := w.FlushMemtable(ctx); err != nil {
			t.Fatal(err)
		}
		put(t, ctx, w, "in-the-wal", "yes") // durable in the WAL, not yet in L0
		other, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: "someone-else"})
		if err != nil {
			t.Fatal(err)
		}
		put(t, ctx, w, "deleted-later", "x")
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: "way-back"})
		if err != nil {
			t.Fatal(err)
		}
		put(t, ctx, w, "after", "1")
		b = slatedb.Batch{}
		b.Delete([]byte("deleted-later"))
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}

		dest := url + "-copy"
		got, err := slatedb.CopyCheckpoint(ctx, url, cp.ID, dest, slatedb.Options{})
		if err != nil {
			t.Fatalf("copy: %v", err)
		}
		if got.ManifestID != cp.ManifestID || got.Objects < 2 || got.Bytes <= 0 || got.CheckpointsDropped != 2 {
			t.Fatalf("copy = %+v, want manifest %d, 2+ objects, bytes, 2 checkpoints (%s and the copied one) dropped", got, cp.ManifestID, other.ID)
		}
		r, err := slatedb.OpenReader(ctx, dest, slatedb.ReaderOptions{})
		if err != nil {
			t.Fatalf("open the copy: %v", err)
		}
		keys, _ := scanAll(t, ctx, r, nil, nil)
		for _, k := range []string{"in-the-wal", "deleted-later"} {
			if v, err := r.Get(ctx, []byte(k)); err != nil {
				t.Fatalf("copy: %s = %q, %v; want it (it was in the checkpoint)", k, v, err)
			}
		}
		if _, err := r.Get(ctx, []byte("after")); !errors.Is(err, slatedb.ErrNotFound) {
			t.Fatalf("copy holds a write made after its checkpoint: %v", err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if want := 3002; len(keys) != want {
			t.Fatalf("copy holds %d keys, want %d", len(keys), want)
		}
		if cps, err := slatedb.ListCheckpoints(ctx, dest, slatedb.Options{}); err != nil || len(cps) != 0 {
			t.Fatalf("copy's checkpoints = %v, %v; want none", cps, err)
		}

		// Writes to the copy stay there.
		cw := openWriter(t, ctx, dest)
		put(t, ctx, cw, "only-in-copy", "1")
		if err := cw.Close(); err != nil {
			t.Fatal(err)
		}
		sr, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sr.Close()
		if _, err := sr.Get(ctx, []byte("only-in-copy")); !errors.Is(err, slatedb.ErrNotFound) {
			t.Fatalf("a write to the copy reached the source: %v", err)
		}
		if _, err := sr.Get(ctx, []byte("after")); err != nil {
			t.Fatalf("source lost a write: %v", err)
		}
	})
}

// The copy refuses, writing nothing, a destination that holds anything, one
// inside the source, a missing checkpoint and another bucket.
func TestCopyCheckpointRefusals(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		put(t, ctx, w, "a", "1")
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Name: "way-back"})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		busy := url + "-busy"
		bw := openWriter(t, ctx, busy)
		put(t, ctx, bw, "mine", "1")
		if err := bw.Close(); err != nil {
			t.Fatal(err)
		}
		cases := map[string]struct {
			id, dest string
			want     error
			msg      string
		}{
			"not empty":   {cp.ID, busy, slatedb.ErrInvalid, "not empty"},
			"inside":      {cp.ID, url + "/inner", slatedb.ErrInvalid, "inside"},
			"missing":     {"6f1d7c44-0000-4000-8000-000000000000", url + "-m", slatedb.ErrCheckpointMissing, "checkpoint missing"},
			"no database": {cp.ID, url + "-x", slatedb.ErrNoDatabase, ""},
		}
		if strings.HasPrefix(url, "s3://") {
			cases["other bucket"] = struct {
				id, dest string
				want     error
				msg      string
			}{cp.ID, "s3://another-bucket/copy", slatedb.ErrInvalid, "same bucket"}
		}
		for name, c := range cases {
			src := url
			if name == "no database" {
				src = url + "-nothing"
			}
			_, err := slatedb.CopyCheckpoint(ctx, src, c.id, c.dest, slatedb.Options{})
			if !errors.Is(err, c.want) || !strings.Contains(fmt.Sprint(err), c.msg) {
				t.Errorf("%s: err = %v, want %v mentioning %q", name, err, c.want, c.msg)
			}
		}
		// The busy destination is as it was.
		r, err := slatedb.OpenReader(ctx, busy, slatedb.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		keys, _ := scanAll(t, ctx, r, nil, nil)
		if len(keys) != 1 || string(keys[0]) != "mine" {
			t.Fatalf("refused copy changed the destination: keys %q", keys)
		}
	})
}
