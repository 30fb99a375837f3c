package inplace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

const bucket = "inplace-test"

// One versitygw on loopback for the whole package: S3 is real here.
func TestMain(m *testing.M) {
	os.Exit(s3server.Main(m, map[string]bool{bucket: true}))
}

// places are where a catalog can live; most tests run on each.
var places = []struct {
	name string
	url  func(t testing.TB) string
}{
	{"file", func(t testing.TB) string { return "file://" + filepath.Join(t.TempDir(), "catalog") }},
	{"s3", func(t testing.TB) string {
		return s3server.NewURL(t, bucket, "/catalog")
	}},
}

func eachPlace(t *testing.T, f func(t *testing.T, url string)) {
	for _, p := range places {
		t.Run(p.name, func(t *testing.T) { f(t, p.url(t)) })
	}
}

func seeded(t testing.TB, url string, rows int) {
	t.Helper()
	if _, err := seed.Seed(testenv.Context(t), url, seed.Options{Rows: rows, Seed: 7}); err != nil {
		t.Fatalf("seed %s: %v", url, err)
	}
}

// listing is every object under the catalog's root with its size and time:
// what "writes nothing" is checked against.
func listing(t *testing.T, url string) []string {
	t.Helper()
	ctx := testenv.Context(t)
	if strings.HasPrefix(url, "file://") {
		var out []string
		root := strings.TrimPrefix(url, "file://")
		err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%s %d %s", p, info.Size(), info.ModTime().Format(time.RFC3339Nano)))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := store.List(ctx, url+"/")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = fmt.Sprintf("%s %d %s", in.URL, in.Size, in.ETag)
	}
	sort.Strings(out)
	return out
}

func sameListing(t *testing.T, what string, before, after []string) {
	t.Helper()
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Fatalf("%s wrote to the catalog's location:\nbefore:\n%s\nafter:\n%s", what, strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

func digestOf(t *testing.T, url string, v format.Version) ndjson.Digest {
	t.Helper()
	d, err := readBack(testenv.Context(t), url, v, slatedb.Options{})
	if err != nil {
		t.Fatalf("digest of %s as %s: %v", url, v, err)
	}
	return d
}

// strategyB migrates src into a new catalog the export/import way (the
// source is only read) and returns the new catalog's digest.
func strategyB(t *testing.T, src string, policy migration.UnknownTags) ndjson.Digest {
	t.Helper()
	ctx := testenv.Context(t)
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2 := t.TempDir(), t.TempDir()
	if _, err := shard.Export(ctx, store, src, v1, shard.ExportOptions{Format: format.V1, Shards: 3}); err != nil {
		t.Fatalf("strategy B export: %v", err)
	}
	urls, err := shard.List(ctx, store, v1)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range urls {
		if _, err := migration.TransformFile(ctx, store, u, filepath.Join(v2, filepath.Base(u)), format.V2, "test", migration.Options{UnknownTags: policy}); err != nil {
			t.Fatalf("strategy B transform: %v", err)
		}
	}
	dst := "file://" + filepath.Join(t.TempDir(), "b")
	if _, err := shard.Import(ctx, store, v2, dst, shard.ImportOptions{Format: format.V2}); err != nil {
		t.Fatalf("strategy B import: %v", err)
	}
	if _, err := shard.Verify(ctx, store, dst, v2, shard.VerifyOptions{}); err != nil {
		t.Fatalf("strategy B verify: %v", err)
	}
	return digestOf(t, dst, format.V2)
}

func checkpointsOf(t *testing.T, url string) []slatedb.Checkpoint {
	t.Helper()
	cps, err := slatedb.ListCheckpoints(testenv.Context(t), url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return cps
}

// wayBackOf is where the way back of migration id goes: beside the catalog,
// as the workflow puts it.
func wayBackOf(t testing.TB, url, id string) string {
	t.Helper()
	wb, err := layout.WayBack(url, format.V1, id)
	if err != nil {
		t.Fatal(err)
	}
	return wb
}

// opts are a real run's options for migration id of the catalog at url.
func opts(t testing.TB, url, id string) Options {
	t.Helper()
	store, err := blob.New(testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return Options{To: format.V2, MigrationID: id, WayBack: wayBackOf(t, url, id), Blob: store}
}

// objectsUnder counts the objects under url/.
func objectsUnder(t *testing.T, url string) int {
	t.Helper()
	store, err := blob.New(testenv.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	infos, err := store.List(testenv.Context(t), url+"/")
	if err != nil {
		t.Fatal(err)
	}
	return len(infos)
}

// The whole round: the in-place migration gives the very catalog Strategy B
// gives (digest and counts), the old format is refused, the way back is the
// catalog as it was (every key and value), a catalog of its own with no
// checkpoint left on either, and restoring from it puts the catalog back.
func TestMigrateEqualsStrategyBWithAWayBack(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		seeded(t, url, 2000)
		before := kvscan.Dump(t, url)
		wantB := strategyB(t, url, migration.UnknownFail)

		o := opts(t, url, "m-1")
		res, err := Migrate(ctx, url, o)
		if err != nil {
			t.Fatalf("migrate in place: %v", err)
		}
		if res.Digest != wantB {
			t.Fatalf("in-place digest %s (counts %v), Strategy B's %s (counts %v)", res.Digest.Sum(), res.Digest.Counts(), wantB.Sum(), wantB.Counts())
		}
		if got := digestOf(t, url, format.V2); got != wantB {
			t.Fatalf("the migrated catalog reads back as %s, Strategy B's %s", got.Sum(), wantB.Sum())
		}
		if res.Deleted != uint64(len(before)) || res.Records != uint64(len(before)) || res.Bytes <= 0 || res.BatchBytes <= int(res.Bytes) {
			t.Fatalf("result %+v for a catalog of %d keys", res, len(before))
		}
		var mismatch *format.FormatVersionMismatch
		if _, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1}); !errors.As(err, &mismatch) || mismatch.Found != 2 {
			t.Fatalf("open the migrated catalog as format 1: err = %v, want FormatVersionMismatch found 2", err)
		}
		wb := wayBackOf(t, url, "m-1")
		if res.WayBack == nil || res.WayBack.Catalog != wb || res.WayBack.Objects < 2 || res.WayBack.Bytes <= 0 {
			t.Fatalf("way back %+v, want a copy at %s", res.WayBack, wb)
		}
		kvscan.Same(t, "the way back", before, kvscan.Dump(t, wb))
		if _, err := catalog.Open(ctx, wb, catalog.Options{Expect: format.V1}); err != nil {
			t.Fatalf("the way back as a format-1 catalog: %v", err)
		}
		if cps := append(checkpointsOf(t, url), checkpointsOf(t, wb)...); len(cps) != 0 {
			t.Fatalf("checkpoints left: %+v, want none (the copy is the way back)", cps)
		}
		// Again: the catalog is format 2 now, refused with nothing written.
		if _, err := Migrate(ctx, url, opts(t, url, "m-2")); !errors.As(err, &mismatch) {
			t.Fatalf("migrate a migrated catalog: err = %v, want FormatVersionMismatch", err)
		}
		if n := objectsUnder(t, wayBackOf(t, url, "m-2")); n != 0 {
			t.Fatalf("a refused migration left %d objects of a way back", n)
		}

		// The workflow's undo: the catalog restored where it lies.
		back, err := Restore(ctx, url, wb, RestoreOptions{Current: format.V2, Landed: res.Landed, Blob: o.Blob})
		if err != nil {
			t.Fatalf("restore: %v", err)
		}
		if back.To != format.V1 || back.Records != uint64(len(before)) || back.Deleted != uint64(len(before)) {
			t.Fatalf("restore result %+v", back)
		}
		kvscan.Same(t, "after the restore", before, kvscan.Dump(t, url))
		// The restore moved the catalog past what the batch left.
		if _, err := Restore(ctx, url, wb, RestoreOptions{Current: format.V2, Landed: res.Landed, Blob: o.Blob}); !errors.Is(err, ErrCatalogMoved) {
			t.Fatalf("second restore: err = %v, want ErrCatalogMoved", err)
		}
		kvscan.Same(t, "after the second restore", before, kvscan.Dump(t, url))
	})
}

// A way back's place that holds anything is refused before the fence: not
// written over, not deleted, the catalog untouched.
func TestWayBackPlaceTakenRefused(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		seeded(t, url, 200)
		o := opts(t, url, "m-taken")
		if _, err := o.Blob.Put(ctx, o.WayBack+"/someone-elses", []byte("keep me")); err != nil {
			t.Fatal(err)
		}
		list := listing(t, url)
		if _, err := Migrate(ctx, url, o); !errors.Is(err, ErrWayBackTaken) {
			t.Fatalf("migrate: err = %v, want ErrWayBackTaken", err)
		}
		sameListing(t, "a refused migration", list, listing(t, url))
		if body, _, err := o.Blob.Get(ctx, o.WayBack+"/someone-elses"); err != nil || string(body) != "keep me" {
			t.Fatalf("the object in the way back's place: %q, %v", body, err)
		}
	})
}

// A dry run reads and measures, and writes nothing at all: no fence, no
// checkpoint.
func TestDryRunWritesNothing(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		seeded(t, url, 500)
		list := listing(t, url)
		o := opts(t, url, "m-dry")
		o.DryRun = true
		res, err := Migrate(testenv.Context(t), url, o)
		if err != nil {
			t.Fatalf("dry run: %v", err)
		}
		sameListing(t, "a dry run", list, listing(t, url))
		if n := objectsUnder(t, o.WayBack); n != 0 {
			t.Fatalf("a dry run wrote %d objects of a way back", n)
		}
		if res.WayBack != nil || res.Records == 0 || res.Bytes == 0 || res.Digest != strategyB(t, url, migration.UnknownFail) {
			t.Fatalf("dry run result %+v, want the records Strategy B would write", res)
		}
	})
}

// Over the limit, the command refuses before the fence: nothing written.
func TestTooLargeRefusedWritingNothing(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		seeded(t, url, 500)
		list := listing(t, url)
		o := opts(t, url, "m-big")
		o.MaxBytes = 4096
		_, err := Migrate(testenv.Context(t), url, o)
		if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "Strategy B") {
			t.Fatalf("migrate over the limit: err = %v, want ErrTooLarge naming Strategy B", err)
		}
		sameListing(t, "a refused migration", list, listing(t, url))
	})
}

// An interruption after the fence and the way back, before the batch,
// leaves the catalog entirely format 1, and no checkpoint or copy behind.
func TestInterruptedBeforeTheBatchLeavesFormat1(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		seeded(t, url, 500)
		before := kvscan.Dump(t, url)
		ctx, cancel := context.WithCancel(testenv.Context(t))
		beforeCommit = cancel
		defer func() { beforeCommit = nil }()
		_, err := Migrate(ctx, url, opts(t, url, "m-int"))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted migration: err = %v, want context.Canceled", err)
		}
		kvscan.Same(t, "after the interruption", before, kvscan.Dump(t, url))
		if _, err := catalog.Open(testenv.Context(t), url, catalog.Options{Expect: format.V1}); err != nil {
			t.Fatalf("the catalog after the interruption: %v", err)
		}
		if cps := checkpointsOf(t, url); len(cps) != 0 {
			t.Fatalf("checkpoints after the interruption: %+v", cps)
		}
		if n := objectsUnder(t, wayBackOf(t, url, "m-int")); n != 0 {
			t.Fatalf("the interruption left %d objects of the way back", n)
		}
	})
}

// Unknown tags follow the policy as in Strategy B; unknown system keys and
// their raw values are kept.
func TestUnknownTagsAndSystemKeys(t *testing.T) {
	ctx := testenv.Context(t)
	future, flag := []byte{0x30, 1, 2, 3}, format.SystemKey("future-flag")
	mk := func(t *testing.T) string {
		url := places[0].url(t)
		seeded(t, url, 300)
		w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b slatedb.Batch
		b.Put(future, []byte("a table from the future"))
		b.Put(flag, []byte("on, in words"))
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return url
	}
	t.Run("fail", func(t *testing.T) {
		url := mk(t)
		list := listing(t, url)
		_, err := Migrate(ctx, url, opts(t, url, "m-u"))
		if !errors.Is(err, migration.ErrUnknownTags) || !strings.Contains(err.Error(), "0x30: 1") {
			t.Fatalf("default policy: err = %v, want UnknownTags listing 0x30: 1", err)
		}
		sameListing(t, "a refusal for unknown tags", list, listing(t, url))
	})
	// under migrates a fresh catalog under policy (run id): its result,
	// what the catalog holds then, and Strategy B's digest of it before.
	under := func(t *testing.T, policy migration.UnknownTags, id string) (Result, map[string]string, ndjson.Digest) {
		t.Helper()
		url := mk(t)
		want := strategyB(t, url, policy)
		o := opts(t, url, id)
		o.UnknownTags = policy
		res, err := Migrate(ctx, url, o)
		if err != nil {
			t.Fatal(err)
		}
		return res, kvscan.Dump(t, url), want
	}
	t.Run("carry", func(t *testing.T) {
		res, kv, want := under(t, migration.UnknownCarry, "m-c")
		if kv[string(future)] != "a table from the future" || kv[string(flag)] != "on, in words" || res.Carried[0x30] != 1 || res.Digest != want {
			t.Fatalf("carry: future %q, flag %q, carried %v, digest equal to Strategy B's: %v", kv[string(future)], kv[string(flag)], res.Carried, res.Digest == want)
		}
	})
	t.Run("drop", func(t *testing.T) {
		res, kv, want := under(t, migration.UnknownDrop, "m-d")
		if _, ok := kv[string(future)]; ok || kv[string(flag)] != "on, in words" || res.Dropped[0x30] != 1 || res.Digest != want {
			t.Fatalf("drop: future present %v, flag %q, dropped %v, digest equal to Strategy B's: %v", ok, kv[string(flag)], res.Dropped, res.Digest == want)
		}
	})
}

func TestBadInputRefused(t *testing.T) {
	ctx := testenv.Context(t)
	url := places[0].url(t)
	seeded(t, url, 100)
	list := listing(t, url)
	o := opts(t, url, "x")
	o.To = format.V1
	if _, err := Migrate(ctx, url, o); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Fatalf("to v1: err = %v", err)
	}
	if _, err := Migrate(ctx, url, Options{To: format.V2}); err == nil || !strings.Contains(err.Error(), "migration id") {
		t.Fatalf("no migration id: err = %v", err)
	}
	if _, err := Restore(ctx, url, wayBackOf(t, url, "never"), RestoreOptions{Current: format.V2}); !errors.Is(err, ErrNoWayBack) {
		t.Fatalf("restore from a way back that was never made: err = %v, want ErrNoWayBack", err)
	}
	other := places[0].url(t)
	if _, err := Migrate(ctx, other, opts(t, other, "x")); !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("no catalog: err = %v, want ErrNoCatalog", err)
	}
	sameListing(t, "refused calls", list, listing(t, url))
}

// A way back the copy refuses once the checkpoint is taken (here, a place
// inside the catalog) fails the migration with nothing left: no checkpoint,
// the catalog as it was, nothing deleted inside it.
func TestWayBackRefusedByTheCopyLeavesNothing(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		seeded(t, url, 200)
		before := kvscan.Dump(t, url)
		o := opts(t, url, "m-inside")
		o.WayBack = url + "/inside"
		if _, err := Migrate(ctx, url, o); !errors.Is(err, slatedb.ErrInvalid) || !strings.Contains(err.Error(), "nothing was migrated") {
			t.Fatalf("migrate: err = %v, want the copy's refusal and nothing migrated", err)
		}
		if cps := checkpointsOf(t, url); len(cps) != 0 {
			t.Fatalf("checkpoints after the refusal: %+v", cps)
		}
		kvscan.Same(t, "after the refusal", before, kvscan.Dump(t, url))
		if _, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1}); err != nil {
			t.Fatalf("the catalog after the refusal: %v", err)
		}
	})
}
