package shard_test

import (
	"errors"
	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A transform of a directory of shards writes each under its own name in
// the output directory, counts them in its progress, and its digest is the
// target format's digest of the whole catalog: imported, the shards make a
// catalog whose records Verify matches with the transform's output.
func TestTransformDirectory(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, 500)
	v1 := filepath.Join(t.TempDir(), "v1")
	exp := exportTo(t, store, src, v1, 3, "zst")
	var p shard.Progress
	tr, err := shard.NewTransform(ctx, store, v1, shard.TransformOptions{To: format.V2, Concurrency: 2, CreatedBy: "test", Progress: &p})
	if err != nil {
		t.Fatal(err)
	}
	if p.ShardsTotal.Load() != 3 || p.RecordsTotal.Load() != exp.Records {
		t.Fatalf("progress before the run: %d shards, %d records; want 3, %d", p.ShardsTotal.Load(), p.RecordsTotal.Load(), exp.Records)
	}
	v2 := filepath.Join(t.TempDir(), "v2")
	res, err := tr.Run(ctx, store, v2)
	if err != nil {
		t.Fatal(err)
	}
	if res.Shards != 3 || res.Records != exp.Records || p.ShardsDone.Load() != 3 || len(res.Stats) != 3 {
		t.Fatalf("result %+v, %d shards done", res, p.ShardsDone.Load())
	}
	for _, s := range exp.Shards {
		if _, err := os.Stat(filepath.Join(v2, filepath.Base(s.URL))); err != nil {
			t.Fatalf("shard %s not transformed under its name: %v", s.URL, err)
		}
	}
	dst := fileURL(t, "dst")
	importFrom(t, store, v2, dst, format.V2)
	ver, err := shard.Verify(ctx, store, dst, v2, shard.VerifyOptions{})
	if err != nil || !ver.Match || ver.Catalog.Sum() != res.Digest.Sum() {
		t.Fatalf("verify: %+v, %v; transform digest %s", ver, err, res.Digest.Sum())
	}
	if _, err := tr.Run(ctx, store, filepath.Join(t.TempDir(), "one.ndjson")); !errors.Is(err, shard.ErrTransformOutput) {
		t.Fatalf("a directory transformed into one file: %v", err)
	}
}

// Under the fail policy, unknown tags are refused from the trailers before
// any shard is written; under carry, they are carried and counted.
func TestTransformRefusesUnknownTagsFirst(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, 200)
	w, err := slatedb.OpenWriter(ctx, src, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put([]byte{0xF0, 1}, []byte("a table from the future"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	v1 := filepath.Join(t.TempDir(), "v1")
	exportTo(t, store, src, v1, 2, "")
	if _, err := shard.NewTransform(ctx, store, v1, shard.TransformOptions{To: format.V2, Concurrency: 2}); !errors.Is(err, migration.ErrUnknownTags) {
		t.Fatalf("fail policy: %v, want UnknownTags before any write", err)
	}
	tr, err := shard.NewTransform(ctx, store, v1, shard.TransformOptions{To: format.V2, UnknownTags: migration.UnknownCarry, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := tr.Run(ctx, store, filepath.Join(t.TempDir(), "v2"))
	if err != nil {
		t.Fatal(err)
	}
	var carried uint64
	for _, st := range res.Stats {
		carried += st.Carried[0xF0]
	}
	if carried != 1 {
		t.Fatalf("carried %d records of tag 0xF0, want 1: %+v", carried, res.Stats)
	}
}
