package shard_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// migrateOffline migrates checkpoint cp of src to format 2 at dst as the
// workflow does (export, transform, import; finalized or not) and returns
// the digest of the records the transforms wrote.
func migrateOffline(t *testing.T, store *blob.Store, src, cp, dst string, finalize bool) ndjson.Digest {
	t.Helper()
	ctx := testenv.Context(t)
	dir := t.TempDir()
	v1, v2 := filepath.Join(dir, "v1"), filepath.Join(dir, "v2")
	res, err := shard.Export(ctx, store, src, v1, shard.ExportOptions{Format: format.V1, Shards: 3, Checkpoint: cp})
	if err != nil {
		t.Fatalf("export %s at %s: %v", src, cp, err)
	}
	for _, s := range res.Shards {
		out := filepath.Join(v2, filepath.Base(s.URL))
		if _, err := migration.TransformFile(ctx, store, s.URL, out, format.V2, "test", migration.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	digest, _, err := shard.DigestShards(ctx, store, v2)
	if err != nil {
		t.Fatal(err)
	}
	imp, err := shard.Import(ctx, store, v2, dst, shard.ImportOptions{Format: format.V2, NoFinalize: !finalize})
	if err != nil || imp.Done != finalize {
		t.Fatalf("import %s: %+v, %v", dst, imp, err)
	}
	return digest
}

// commit runs DuckLake commits through the real RockLake on the catalog at
// dir, then stops it, and checkpoints what it wrote (its last commits sit
// in its WAL: a passive writer's checkpoint takes them in), after deleting
// the given keys through that writer.
func commit(t *testing.T, dir string, schemas []string, deletes [][]byte) string {
	t.Helper()
	ctx := testenv.Context(t)
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range schemas {
		stmts := []rocklake.Stmt{
			{SQL: "BEGIN"},
			{SQL: fmt.Sprintf("INSERT INTO ducklake_schema (schema_id, schema_uuid, begin_snapshot, end_snapshot, schema_name, path, path_is_relative) VALUES (0, gen_random_uuid(), 0, NULL, '%s', '%s/', true)", s, s)},
			{SQL: fmt.Sprintf("INSERT INTO ducklake_table (table_id, table_uuid, begin_snapshot, end_snapshot, schema_id, table_name, path, path_is_relative) VALUES (0, gen_random_uuid(), 0, NULL, 1, '%s_t', '%s_t/', true)", s, s)},
			{SQL: "INSERT INTO ducklake_snapshot (snapshot_id, snapshot_time, schema_version, next_catalog_id, next_file_id) VALUES (0, now(), 0, 0, 0)"},
			{SQL: "COMMIT"},
		}
		if _, err := srv.ExecExtended(ctx, stmts...); err != nil {
			_ = srv.Stop()
			t.Fatalf("%v\n%s", err, srv.Logs())
		}
	}
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(srv.Logs(), "panicked at") {
		t.Fatalf("rocklake serve panicked:\n%s", srv.Logs())
	}
	w, err := slatedb.OpenWriter(ctx, "file://"+dir, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if len(deletes) > 0 {
		var b slatedb.Batch
		for _, k := range deletes {
			b.Delete(k)
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
	}
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return cp.ID
}

// view is the view of a checkpoint alone.
func view(checkpoint string) slatedb.View { return slatedb.View{Checkpoint: checkpoint} }

// firstKeys returns the first n keys under tag in the catalog at url.
func firstKeys(t *testing.T, url string, tag format.Tag, n int) [][]byte {
	t.Helper()
	var out [][]byte
	for k := range kvscan.Dump(t, url) {
		if k[0] == byte(tag) && len(out) < n {
			out = append(out, []byte(k))
		}
	}
	if len(out) < n {
		t.Fatalf("fewer than %d keys under %s", n, tag)
	}
	return out
}

// copiedOnline is an online run after its copy: a seeded source at dir (src
// its URL) for the real RockLake to commit to, its checkpoint a, and dst,
// an unfinished import of a, with the digest a's transform wrote.
func copiedOnline(t *testing.T) (ctx context.Context, store *blob.Store, dir, src string, a slatedb.Checkpoint, dst string, digest ndjson.Digest) {
	t.Helper()
	if _, err := rocklake.Binary(); err != nil {
		t.Fatalf("this test needs the real RockLake v0.47.11 binary: %v", err)
	}
	ctx, store = testenv.Context(t), testenv.Store(t)
	dir = filepath.Join(t.TempDir(), "src")
	src = "file://" + dir
	seeded(t, src, rows)
	a, err := slatedb.CreateCheckpoint(ctx, src, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dst = fileURL(t, "dst")
	return ctx, store, dir, src, a, dst, migrateOffline(t, store, src, a.ID, dst, false)
}

// A catalog migrated from checkpoint A while the real RockLake commits on,
// then caught up A→B and B→C, equals byte for byte an offline migration of
// C, and the digest the rounds kept equals the one of C's transform and of
// the caught-up catalog's own scan. The rounds carry RockLake's commits
// (snapshots, schemas, tables, counters, system keys) and deletes of rows
// of several tables, tag rows whose format-2 key comes from the value
// among them.
func TestCatchUpEqualsAnOfflineMigration(t *testing.T) {
	ctx, store, dir, src, a, dst, digest := copiedOnline(t)

	opts := shard.CatchUpOptions{From: format.V1, To: format.V2}
	deletesB := slices.Concat(firstKeys(t, src, format.TagDataFile, 3), firstKeys(t, src, format.TagTag, 1), firstKeys(t, src, format.TagColumnTag, 1))
	b := commit(t, dir, []string{"online_a", "online_b"}, deletesB)
	r1, err := shard.CatchUp(ctx, src, view(a.ID), view(b), dst, digest, opts)
	if err != nil {
		t.Fatalf("round A→B: %v", err)
	}
	if r1.Changes.Method != slatedb.MethodSSTDiff || r1.Keys < len(deletesB)+6 || r1.Deletes < len(deletesB) {
		t.Fatalf("round A→B: %+v", r1)
	}
	c := commit(t, dir, []string{"online_c"}, firstKeys(t, src, format.TagColumn, 1))
	r2, err := shard.CatchUp(ctx, src, view(b), view(c), dst, r1.Digest, opts)
	if err != nil {
		t.Fatalf("round B→C: %v", err)
	}
	again, err := shard.CatchUp(ctx, src, view(b), view(c), dst, r1.Digest, opts)
	if err != nil || again.Digest != r2.Digest || again.Keys != r2.Keys {
		t.Fatalf("round B→C rerun: %+v, %v; first run %+v", again, err, r2)
	}
	t.Logf("round A→B: %d keys (%s, %d candidates), round B→C: %d keys", r1.Keys, r1.Changes.Method, r1.Changes.Candidates, r2.Keys)
	if err := shard.Finalize(ctx, dst, format.V2, slatedb.Options{}); err != nil {
		t.Fatal(err)
	}

	offline := fileURL(t, "offline")
	want := migrateOffline(t, store, src, c, offline, true)
	kvscan.Same(t, "caught-up vs offline migration of C", kvscan.Dump(t, dst), kvscan.Dump(t, offline))
	if r2.Digest != want {
		t.Fatalf("the rounds' digest %s %v, C's transform wrote %s %v", r2.Digest.Sum(), r2.Digest.Counts(), want.Sum(), want.Counts())
	}
	cat, err := catalog.Open(ctx, dst, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	defer cat.Close()
	scanned, err := shard.DigestCatalog(ctx, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if scanned != r2.Digest {
		t.Fatalf("the caught-up catalog's scan digests to %s, the rounds kept %s", scanned.Sum(), r2.Digest.Sum())
	}
}

// seededWriter seeds a source of rows rows and opens its writer for the
// test; dst is a target's URL.
func seededWriter(t *testing.T) (src, dst string, w *slatedb.Writer) {
	t.Helper()
	src, dst = fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, rows)
	w, err := slatedb.OpenWriter(testenv.Context(t), src, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return src, dst, w
}

// In a finalized target, counter and system keys are written in place.
func TestCatchUpIntoAFinalizedCatalog(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	src, dst, w := seededWriter(t)
	a, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	digest := migrateOffline(t, store, src, a.ID, dst, true)
	var b slatedb.Batch
	b.Put(format.CounterKey(format.V1, format.NameNextSnapshotID), format.EncodeCounter(format.V1, 999999))
	for _, k := range firstKeys(t, src, format.TagSnapshot, 2) {
		b.Delete(k)
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	c, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r, err := shard.CatchUp(ctx, src, view(a.ID), view(c.ID), dst, digest, shard.CatchUpOptions{From: format.V1, To: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Keys != 3 || r.Puts != 1 || r.Deletes != 2 {
		t.Fatalf("round: %+v, want the counter rewritten and two snapshots deleted", r)
	}
	offline := fileURL(t, "offline")
	want := migrateOffline(t, store, src, c.ID, offline, true)
	kvscan.Same(t, "caught-up vs offline", kvscan.Dump(t, dst), kvscan.Dump(t, offline))
	if r.Digest != want {
		t.Fatalf("digest %s, want %s", r.Digest.Sum(), want.Sum())
	}
}

// The online verification's two parts, on RockLake's commits: before the
// fence the unfinished import's digest and the source view's transform
// equal the rounds' digest; after it, VerifyChanges recomputes the digest
// from the change alone, and finds a target key that is not what the
// change wrote.
func TestOnlineVerification(t *testing.T) {
	ctx, _, dir, src, a, dst, digest := copiedOnline(t)
	opts := shard.CatchUpOptions{From: format.V1, To: format.V2}
	b := commit(t, dir, []string{"verify_a"}, firstKeys(t, src, format.TagDataFile, 2))
	r1, err := shard.CatchUp(ctx, src, view(a.ID), view(b), dst, digest, opts)
	if err != nil {
		t.Fatal(err)
	}
	imported, err := shard.DigestImport(ctx, dst, slatedb.Options{})
	if err != nil || imported != r1.Digest {
		t.Fatalf("the unfinished import digests to %s (%v), the round kept %s", imported.Sum(), err, r1.Digest.Sum())
	}
	source, err := shard.DigestView(ctx, src, view(b), opts)
	if err != nil || source != r1.Digest {
		t.Fatalf("the source view's transform digests to %s (%v), the round kept %s", source.Sum(), err, r1.Digest.Sum())
	}

	c := commit(t, dir, []string{"verify_b"}, firstKeys(t, src, format.TagColumn, 1))
	r2, err := shard.CatchUp(ctx, src, view(b), view(c), dst, r1.Digest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := shard.Finalize(ctx, dst, format.V2, slatedb.Options{}); err != nil {
		t.Fatal(err)
	}
	got, keys, _, err := shard.VerifyChanges(ctx, src, view(b), view(c), dst, r1.Digest, opts)
	if err != nil || got != r2.Digest || keys != r2.Keys {
		t.Fatalf("VerifyChanges: %s over %d keys (%v); the round kept %s over %d", got.Sum(), keys, err, r2.Digest.Sum(), r2.Keys)
	}

	// A target key the change wrote, overwritten behind the rounds' back.
	var changed []byte
	for k, v := range kvscan.Dump(t, dst) {
		if strings.Contains(v, "verify_b") {
			changed = []byte(k)
			break
		}
	}
	if changed == nil {
		t.Fatal("no target key holds the commit of verify_b")
	}
	w, err := slatedb.OpenWriter(ctx, dst, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	var bad slatedb.Batch
	bad.Put(changed, []byte("not what the change wrote"))
	if err := w.Write(ctx, &bad); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := shard.VerifyChanges(ctx, src, view(b), view(c), dst, r1.Digest, opts); !errors.Is(err, shard.ErrMismatch) {
		t.Fatalf("VerifyChanges over a corrupted target key: %v, want ErrMismatch", err)
	}
}

// A round counts the records of unknown tags it drops (and carries), and
// the net of the dropped ones, which VerifyChanges counts again over the
// same change: with --unknown-tags=drop, no round drops silently.
func TestCatchUpCountsUnknownTags(t *testing.T) {
	ctx, store := testenv.Context(t), testenv.Store(t)
	src, dst, w := seededWriter(t)
	checkpoint := func() string {
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		return cp.ID
	}
	a := checkpoint()
	digest := migrateOffline(t, store, src, a, dst, true)
	key := []byte{0x30, 'n', 'e', 'w'}
	var b slatedb.Batch
	b.Put(key, []byte("a newer writer's record"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	c := checkpoint()
	opts := shard.CatchUpOptions{From: format.V1, To: format.V2, UnknownTags: migration.UnknownDrop}
	r, err := shard.CatchUp(ctx, src, view(a), view(c), dst, digest, opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dropped["tag 0x30"] != 1 || r.DroppedNet["tag 0x30"] != 1 || len(r.Carried) != 0 {
		t.Fatalf("round over an unknown tag's record, dropped: %+v", r)
	}
	if _, ok := kvscan.Dump(t, dst)[string(key)]; ok {
		t.Fatal("the dropped record is in the target")
	}
	_, _, unknown, err := shard.VerifyChanges(ctx, src, view(a), view(c), dst, digest, opts)
	if err != nil || unknown.DroppedNet["tag 0x30"] != 1 {
		t.Fatalf("VerifyChanges over the same change: %+v, %v", unknown, err)
	}
	// The record goes away again: the net falls back.
	b.Reset()
	b.Delete(key)
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	d := checkpoint()
	r2, err := shard.CatchUp(ctx, src, view(c), view(d), dst, r.Digest, opts)
	if err != nil || r2.DroppedNet["tag 0x30"] != -1 || len(r2.Dropped) != 0 {
		t.Fatalf("round over the record's deletion: %+v, %v", r2, err)
	}
	if _, _, unknown, err := shard.VerifyChanges(ctx, src, view(a), view(d), dst, digest, opts); err != nil || len(unknown.DroppedNet) != 0 {
		t.Fatalf("VerifyChanges over both: %+v, %v; want no net drop", unknown, err)
	}
}
