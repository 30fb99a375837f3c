package shard_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/internal/testenv/testcatalog"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
)

const rows = 3000

func fileURL(t *testing.T, name string) string { return "file://" + filepath.Join(t.TempDir(), name) }

func seeded(t *testing.T, url string, n int) {
	t.Helper()
	if _, err := seed.Seed(testenv.Context(t), url, seed.Options{Rows: n, Seed: 7}); err != nil {
		t.Fatalf("seed %s: %v", url, err)
	}
}

func exportTo(t *testing.T, store *blob.Store, src, out string, n int, compression string) shard.ExportResult {
	t.Helper()
	res, err := shard.Export(testenv.Context(t), store, src, out, shard.ExportOptions{Format: format.V1, Shards: n, Compression: compression})
	if err != nil {
		t.Fatalf("export %s → %s: %v", src, out, err)
	}
	return res
}

func importFrom(t *testing.T, store *blob.Store, in, dst string, v format.Version) shard.ImportResult {
	t.Helper()
	res, err := shard.Import(testenv.Context(t), store, in, dst, shard.ImportOptions{Format: v})
	if err != nil {
		t.Fatalf("import %s → %s: %v", in, dst, err)
	}
	if !res.Done {
		t.Fatalf("import %s not done: %+v", in, res)
	}
	return res
}

func TestExportImportV1IsIdentical(t *testing.T) {
	store := testenv.Store(t)
	src, dst := fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, rows)
	// A row that a newer binary wrote, with a field this one does not know.
	k, row, key, value := futureRow(t)
	// And one with a field unknown to a nested message, which has no place
	// in a record line: it travels as its stored bytes.
	packed := &rocklakev1.PackedTableMetadata{TableId: 777, Columns: []*rocklakev1.Column{{ColumnId: 1, ColumnName: "a"}}}
	packed.Columns[0].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 98, protowire.VarintType), 5))
	pk := format.Key{Tag: format.TagSystem, Name: format.SystemPackedMeta, Parts: []uint64{777}}
	packedKey, _ := format.EncodeKey(format.V1, pk)
	packedValue, err := format.EncodeValue(format.V1, pk, packed)
	if err != nil {
		t.Fatal(err)
	}
	kvscan.Put(t, src, key, value, packedKey, packedValue)
	out := filepath.Join(t.TempDir(), "catalog-v1.ndjson")
	exp := exportTo(t, store, src, out, 1, "")
	if exp.Records < rows {
		t.Fatalf("exported %d records from %d rows", exp.Records, rows)
	}
	importFrom(t, store, out, dst, format.V1)
	imported := kvscan.Dump(t, dst)
	kvscan.Same(t, "source vs imported", kvscan.Dump(t, src), imported)
	got, err := format.DecodeValue(format.V1, k, []byte(imported[string(key)]))
	if err != nil || !proto.Equal(got, row) {
		t.Fatalf("row with an unknown field came back as %v, %v", got, err)
	}
	if got := imported[string(packedKey)]; got != string(packedValue) {
		t.Fatalf("row with a nested unknown field came back as %x, want %x", got, packedValue)
	}
	if _, err := shard.Verify(testenv.Context(t), store, dst, out, shard.VerifyOptions{}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	// The export left no checkpoint behind on the source.
	cps, err := slatedb.ListCheckpoints(testenv.Context(t), src, slatedb.Options{})
	if err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints left on the source: %v, %v", cps, err)
	}
}

func TestTwentyShardsImportLikeOneFile(t *testing.T) {
	store := testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, rows)
	one, many := filepath.Join(t.TempDir(), "all.ndjson"), t.TempDir()
	exportTo(t, store, src, one, 1, "")
	res := exportTo(t, store, src, many, 20, "zst")
	if len(res.Shards) != 20 {
		t.Fatalf("%d shards", len(res.Shards))
	}
	nonEmpty := 0
	for _, s := range res.Shards {
		if s.Records > 0 {
			nonEmpty++
		}
	}
	t.Logf("%d of 20 shards hold records", nonEmpty)
	if nonEmpty < 10 {
		t.Fatalf("only %d of 20 shards hold records: the plan does not spread the catalog", nonEmpty)
	}
	a, b := fileURL(t, "a"), fileURL(t, "b")
	importFrom(t, store, one, a, format.V1)
	importFrom(t, store, many, b, format.V1)
	kvscan.Same(t, "one file vs 20 shards", kvscan.Dump(t, a), kvscan.Dump(t, b))
}

// rowsByTable renders every row of a catalog as protojson, per table, sorted:
// the catalog's logical content, independent of key layout.
func rowsByTable(t *testing.T, url string, v format.Version) map[string][]string {
	t.Helper()
	ctx := testenv.Context(t)
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: v})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	out := map[string][]string{}
	for _, tag := range format.KnownTags() {
		for row, err := range c.Scan(ctx, tag) {
			if err != nil {
				t.Fatal(err)
			}
			b, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(row.Msg)
			if format.ValueKindOf(row.Key) != format.ValueRow {
				// Counters, system keys, 0xFC table_by_id: a wrapped
				// value, told apart by the key's name and components
				// (the same in both formats for these keys).
				if row.Key.Name != format.SystemCatalogFormatVersion {
					out[tag.String()] = append(out[tag.String()], fmt.Sprintf("%s%v%q=%s", row.Key.Name, row.Key.Parts, row.Key.Raw, b))
				}
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			if tag == format.TagSnapshot && v == format.V1 {
				// Independently of the migration: DuckDB's text form → micros.
				if s, ok := m["snapshot_time"].(string); ok {
					tm, err := time.Parse("2006-01-02 15:04:05.999999-07", s)
					if err != nil {
						tm, err = time.Parse(time.RFC3339Nano, s)
					}
					if err != nil {
						t.Fatalf("seeded snapshot_time %q: %v", s, err)
					}
					delete(m, "snapshot_time")
					m["snapshot_time_micros"] = fmt.Sprint(tm.UnixMicro())
				}
			}
			j, _ := json.Marshal(m)
			out[tag.String()] = append(out[tag.String()], string(j))
		}
		sort.Strings(out[tag.String()])
	}
	return out
}

func TestV1ToV2KeepsEveryRowAndField(t *testing.T) {
	store := testenv.Store(t)
	src, dst := fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, rows)
	v1dir, v2dir := t.TempDir(), t.TempDir()
	exportTo(t, store, src, v1dir, 4, "")
	urls, err := shard.List(testenv.Context(t), store, v1dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range urls {
		out := filepath.Join(v2dir, filepath.Base(u))
		if _, err := migration.TransformFile(testenv.Context(t), store, u, out, format.V2, "test", migration.Options{}); err != nil {
			t.Fatalf("transform %s: %v", u, err)
		}
	}
	importFrom(t, store, v2dir, dst, format.V2)
	if _, err := shard.Verify(testenv.Context(t), store, dst, v2dir, shard.VerifyOptions{}); err != nil {
		t.Fatalf("verify: %v", err)
	}
	c, err := catalog.Open(testenv.Context(t), dst, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatalf("v2 catalog does not pass the startup check: %v", err)
	}
	c.Close()
	want, got := rowsByTable(t, src, format.V1), rowsByTable(t, dst, format.V2)
	for table, rs := range want {
		if len(got[table]) != len(rs) {
			t.Fatalf("%s: %d rows in v2, %d in v1", table, len(got[table]), len(rs))
		}
		for i := range rs {
			if rs[i] != got[table][i] {
				t.Fatalf("%s row differs:\n v1 %s\n v2 %s", table, rs[i], got[table][i])
			}
		}
	}
	if len(want["ducklake_data_file"]) == 0 || len(want["ducklake_snapshot"]) == 0 {
		t.Fatalf("seed holds no data files or snapshots: %v", want)
	}
}

func corrupt(t *testing.T, path string, how string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	switch how {
	case "line":
		lines[2] = bytes.Replace(lines[2], []byte(`"`), []byte(`'`), 1)
	case "truncated":
		lines = lines[:len(lines)/2]
	case "no-trailer":
		lines = lines[:len(lines)-2]
		lines = append(lines, []byte{})
	case "wrong-version":
		lines[0] = bytes.Replace(lines[0], []byte(`"rocklake_export_format":1`), []byte(`"rocklake_export_format":9`), 1)
		if bytes.Equal(b, bytes.Join(lines, nil)) {
			t.Fatalf("header %s has no export_format 1 to change", lines[0])
		}
	}
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBadInputsWriteNothing(t *testing.T) {
	store := testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, 500)
	good := t.TempDir()
	exportTo(t, store, src, good, 3, "")
	for _, how := range []string{"line", "truncated", "no-trailer", "wrong-version"} {
		t.Run(how, func(t *testing.T) {
			dir := copyShards(t, store, good)
			corrupt(t, filepath.Join(dir, layout.ShardFile(2, 3, "")), how)
			dst := fileURL(t, "dst")
			_, err := shard.Import(testenv.Context(t), store, dir, dst, shard.ImportOptions{Format: format.V1})
			if err == nil {
				t.Fatal("a damaged shard set was imported")
			}
			t.Logf("%s: %v", how, err)
			if _, err := slatedb.OpenReader(testenv.Context(t), dst, slatedb.ReaderOptions{}); !errors.Is(err, slatedb.ErrNoDatabase) {
				t.Fatalf("the failed import left a database at the target: %v", err)
			}
		})
	}
	t.Run("missing shard", func(t *testing.T) {
		dir := t.TempDir()
		urls, _ := shard.List(testenv.Context(t), store, good)
		for _, u := range urls[:2] {
			b, _ := os.ReadFile(u)
			os.WriteFile(filepath.Join(dir, filepath.Base(u)), b, 0o644)
		}
		_, err := shard.Import(testenv.Context(t), store, dir, fileURL(t, "dst"), shard.ImportOptions{Format: format.V1})
		if !errors.Is(err, shard.ErrIncompleteSet) {
			t.Fatalf("err = %v, want ErrIncompleteSet", err)
		}
	})
	t.Run("wrong format", func(t *testing.T) {
		_, err := shard.Import(testenv.Context(t), store, good, fileURL(t, "dst"), shard.ImportOptions{Format: format.V2})
		if !errors.Is(err, shard.ErrWrongFormat) {
			t.Fatalf("err = %v, want ErrWrongFormat", err)
		}
	})
}

func TestTargetMustBeEmpty(t *testing.T) {
	store := testenv.Store(t)
	src, other := fileURL(t, "src"), fileURL(t, "other")
	seeded(t, src, 200)
	seeded(t, other, 100)
	out := filepath.Join(t.TempDir(), "c.ndjson")
	exportTo(t, store, src, out, 1, "")
	before := kvscan.Dump(t, other)
	_, err := shard.Import(testenv.Context(t), store, out, other, shard.ImportOptions{Format: format.V1})
	if !errors.Is(err, shard.ErrTargetNotEmpty) {
		t.Fatalf("import onto a catalog: err = %v, want ErrTargetNotEmpty", err)
	}
	kvscan.Same(t, "refused target", before, kvscan.Dump(t, other))
}

func TestVerifyFindsDifferences(t *testing.T) {
	store := testenv.Store(t)
	src, dst := fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, 300)
	out := filepath.Join(t.TempDir(), "c.ndjson")
	exportTo(t, store, src, out, 1, "")
	importFrom(t, store, out, dst, format.V1)
	key, _ := format.EncodeKey(format.V1, format.Key{Tag: format.TagTableStats, Parts: []uint64{999999}})
	kvscan.Put(t, dst, key, format.EncodeEnvelope(format.V1, nil))
	res, err := shard.Verify(testenv.Context(t), store, dst, out, shard.VerifyOptions{})
	if !errors.Is(err, shard.ErrMismatch) || res.Match || len(res.Diff) != 1 || !strings.Contains(res.Diff[0], "ducklake_table_stats") {
		t.Fatalf("verify after tampering: %+v, %v", res, err)
	}
}

func TestUnknownTagsThroughThePipeline(t *testing.T) {
	store := testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, 200)
	kvscan.Put(t, src, unknownTagKey, unknownTagValue)
	v1 := filepath.Join(t.TempDir(), "c.ndjson")
	exportTo(t, store, src, v1, 1, "")
	v2 := filepath.Join(t.TempDir(), "c2.ndjson")
	_, err := migration.TransformFile(testenv.Context(t), store, v1, v2, format.V2, "test", migration.Options{})
	if !errors.Is(err, migration.ErrUnknownTags) || !strings.Contains(err.Error(), "0x30: 1") {
		t.Fatalf("default policy: err = %v", err)
	}
	if _, err := os.Stat(v2); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused transform published %s", v2)
	}
	if _, err := migration.TransformFile(testenv.Context(t), store, v1, v2, format.V2, "test", migration.Options{UnknownTags: migration.UnknownCarry}); err != nil {
		t.Fatal(err)
	}
	dst := fileURL(t, "dst")
	importFrom(t, store, v2, dst, format.V2)
	if got := kvscan.Dump(t, dst)[string([]byte{0x30, 1, 2, 3})]; got != "a table from the future" {
		t.Fatalf("carried unknown tag = %q", got)
	}
}

// interrupted is what the tests of an interrupted import share: a seeded
// catalog of rows rows exported in shards, and the catalog an
// uninterrupted import of them made, which a resumed import must equal.
type interrupted struct {
	store *blob.Store
	dir   string // the shard files
	exp   shard.ExportResult
	clean string
	want  shard.ImportResult
}

func newInterrupted(t *testing.T, shards int, compression string) interrupted {
	t.Helper()
	f := interrupted{store: testenv.Store(t), dir: t.TempDir(), clean: fileURL(t, "clean")}
	src := fileURL(t, "src")
	seeded(t, src, rows)
	f.exp = exportTo(t, f.store, src, f.dir, shards, compression)
	f.want = importFrom(t, f.store, f.dir, f.clean, format.V1)
	return f
}

// helper is the import TestImportHelperProcess runs of the shards into
// dst, in a process of its own, with the environment's settings added.
func (f interrupted) helper(dst string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestImportHelperProcess$")
	cmd.Env = append(append(os.Environ(), "SHARD_HELPER_INPUT="+f.dir, "SHARD_HELPER_TARGET="+dst), env...)
	return cmd
}

// resumes imports the shards into dst again: the import must resume,
// finish every shard and leave what the uninterrupted import left.
func (f interrupted) resumes(t *testing.T, dst string) shard.ImportResult {
	t.Helper()
	got := importFrom(t, f.store, f.dir, dst, format.V1)
	if !got.Resumed || got.ShardsDone != len(f.exp.Shards) {
		t.Fatalf("rerun did not resume: %+v", got)
	}
	kvscan.Same(t, "resumed vs uninterrupted import", kvscan.Dump(t, f.clean), kvscan.Dump(t, dst))
	return got
}

// copyShards copies the shard files at good into a directory of the test's.
func copyShards(t *testing.T, store *blob.Store, good string) string {
	t.Helper()
	dir := t.TempDir()
	urls, _ := shard.List(testenv.Context(t), store, good)
	for _, u := range urls {
		b, _ := os.ReadFile(u)
		os.WriteFile(filepath.Join(dir, filepath.Base(u)), b, 0o644)
	}
	return dir
}

// TestImportKilledMidwayResumes kills an import process with SIGKILL after
// it made some shards durable, runs the import again, and compares the end
// result with an uninterrupted import.
func TestImportKilledMidwayResumes(t *testing.T) {
	f := newInterrupted(t, 8, "gz")
	dst := fileURL(t, "dst")
	cmd := f.helper(dst)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := 0
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "shard done") {
			if done++; done == 3 {
				cmd.Process.Kill()
				break
			}
		}
	}
	cmd.Wait()
	if done < 3 {
		t.Fatalf("helper process finished only %d shards before exiting", done)
	}
	// Mid-import, the target is no catalog: the startup check refuses it.
	if _, err := catalog.Open(testenv.Context(t), dst, catalog.Options{}); err == nil {
		t.Fatal("a half-imported target opened as a catalog")
	}
	f.resumes(t, dst)
}

// TestImportKilledMidShardResumes kills an import process (SIGKILL) right
// after a batch of its second shard went to L0: that shard's data is partly
// durable and its progress record is not. The rerun must resume to the
// catalog, and digest, of an uninterrupted import.
func TestImportKilledMidShardResumes(t *testing.T) {
	f := newInterrupted(t, 2, "gz")
	exp, want := f.exp, f.want
	dst := fileURL(t, "dst")
	err := f.helper(dst, "SHARD_HELPER_KILL_IN=1").Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("helper import was not killed mid-shard: %v", err)
	}
	// Shard 0 and at least one batch of shard 1 are durable (the helper
	// moves every batch to L0), with the progress record saying shard 0.
	partial := kvscan.Dump(t, dst)
	if n := len(partial); n <= int(exp.Shards[0].Records)+1 || n >= len(kvscan.Dump(t, f.clean)) {
		t.Fatalf("killed target holds %d keys: want more than shard 0's %d records and its progress record, and fewer than the catalog's", n, exp.Shards[0].Records)
	}
	got := f.resumes(t, dst)
	if got.Digest != want.Digest || got.Records != want.Records {
		t.Fatalf("resumed import: %d records, digest %v; uninterrupted: %d, %v", got.Records, got.Digest, want.Records, want.Digest)
	}
}

// TestImportHelperProcess is the import that TestImportKilledMidwayResumes
// and TestImportKilledMidShardResumes kill; it does nothing in a normal run.
// With SHARD_HELPER_KILL_IN=i it moves every batch to L0 and kills itself
// after the first batch of shard i.
func TestImportHelperProcess(t *testing.T) {
	in, dst := os.Getenv("SHARD_HELPER_INPUT"), os.Getenv("SHARD_HELPER_TARGET")
	if in == "" {
		return
	}
	store := testenv.Store(t)
	opts := shard.ImportOptions{
		Format: format.V1,
		AfterShard: func(i int) {
			fmt.Printf("shard done %d\n", i)
			time.Sleep(200 * time.Millisecond) // give the parent time to kill us mid-run
		},
	}
	if k := os.Getenv("SHARD_HELPER_KILL_IN"); k != "" {
		kill, err := strconv.Atoi(k)
		if err != nil {
			t.Fatal(err)
		}
		opts.Store.BulkMemtableBytes = 1
		opts.AfterBatch = func(i int) {
			if i == kill {
				_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal ends the process
			}
		}
	}
	if _, err := shard.Import(context.Background(), store, in, dst, opts); err != nil {
		t.Fatal(err)
	}
}

func TestOnS3(t *testing.T) {
	stack := s3server.Start(t)
	s3server.SetEnv(t, stack)
	ctx := testenv.Context(t)
	if err := stack.CreateBucket(ctx, "catalogs", true); err != nil {
		t.Fatal(err)
	}
	store := testenv.Store(t)
	src, dst := "s3://catalogs/src", "s3://catalogs/dst"
	seeded(t, src, 1000)
	out := "s3://catalogs/staging/export"
	exportTo(t, store, src, out, 5, "zst")
	importFrom(t, store, out, dst, format.V1)
	kvscan.Same(t, "s3 round trip", kvscan.Dump(t, src), kvscan.Dump(t, dst))
	if _, err := shard.Verify(ctx, store, dst, out, shard.VerifyOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestFinalizeAsItsOwnStep(t *testing.T) {
	store := testenv.Store(t)
	src, dst := fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, 500)
	dir := t.TempDir()
	exportTo(t, store, src, dir, 3, "")
	if err := shard.Finalize(testenv.Context(t), dst, format.V1, slatedb.Options{}); err == nil {
		t.Fatal("finalize of a target with no import succeeded")
	}
	res, err := shard.Import(testenv.Context(t), store, dir, dst, shard.ImportOptions{Format: format.V1, NoFinalize: true})
	if err != nil || res.Done || res.ShardsDone != 3 {
		t.Fatalf("import without finalize: %+v, %v", res, err)
	}
	if _, err := catalog.Open(testenv.Context(t), dst, catalog.Options{}); err == nil {
		t.Fatal("an unfinalized target opened as a catalog")
	}
	for i := 0; i < 2; i++ { // a retried Finalize is harmless
		if err := shard.Finalize(testenv.Context(t), dst, format.V1, slatedb.Options{}); err != nil {
			t.Fatalf("finalize %d: %v", i, err)
		}
	}
	kvscan.Same(t, "source vs finalized", kvscan.Dump(t, src), kvscan.Dump(t, dst))
}

// An import stopped inside its very first shard resumes on the rerun instead
// of finding a target that is "not empty".
func TestImportStoppedInFirstShardResumes(t *testing.T) {
	f := newInterrupted(t, 2, "")
	dst := fileURL(t, "dst")
	ctx, cancel := context.WithCancel(testenv.Context(t))
	var p shard.Progress
	go func() {
		for p.Records.Load() == 0 && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	res, err := shard.Import(ctx, f.store, f.dir, dst, shard.ImportOptions{Format: format.V1, Progress: &p})
	cancel()
	if err == nil || res.ShardsDone != 0 {
		t.Fatalf("the stopped import: %+v, %v", res, err)
	}
	f.resumes(t, dst)
}

// More shards than the catalog has room for: the plan's estimates collide,
// yet no range may be empty (a shard header refuses one) and the shards
// still import into the same catalog.
func TestManyShardsOfASmallCatalog(t *testing.T) {
	store := testenv.Store(t)
	src, dst := fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, 50)
	dir := t.TempDir()
	res := exportTo(t, store, src, dir, 64, "")
	if len(res.Shards) != 64 {
		t.Fatalf("%d shards", len(res.Shards))
	}
	importFrom(t, store, dir, dst, format.V1)
	kvscan.Same(t, "source vs 64 shards", kvscan.Dump(t, src), kvscan.Dump(t, dst))
}

func TestCheckRangesRefusesEmptyRanges(t *testing.T) {
	ok := []shard.Range{{Index: 0, End: []byte{5}}, {Index: 1, Start: []byte{5}}}
	if err := shard.CheckRanges(ok); err != nil {
		t.Fatal(err)
	}
	for name, rs := range map[string][]shard.Range{
		"empty":    {{Index: 0, End: []byte{5}}, {Index: 1, Start: []byte{5}, End: []byte{5}}, {Index: 2, Start: []byte{5}}},
		"reversed": {{Index: 0, End: []byte{5}}, {Index: 1, Start: []byte{5}, End: []byte{4}}, {Index: 2, Start: []byte{4}}},
		"gap":      {{Index: 0, End: []byte{5}}, {Index: 1, Start: []byte{6}}},
	} {
		if err := shard.CheckRanges(rs); !errors.Is(err, shard.ErrBadPlan) {
			t.Errorf("%s: err = %v, want ErrBadPlan", name, err)
		}
	}
}

// reseal rewrites the trailer of the shard file at path so that its record
// count and SHA-256 match the record lines again, after a corruption: the
// file passes import's up-front check and fails only while it is written.
func reseal(t *testing.T, path string, edit func(lines [][]byte, tr map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	lines = lines[:len(lines)-1] // the empty tail after the last "\n"
	var tl map[string]map[string]any
	if err := json.Unmarshal(lines[len(lines)-1], &tl); err != nil {
		t.Fatal(err)
	}
	tr := tl["trailer"]
	edit(lines, tr)
	sum := sha256.New()
	for _, l := range lines[1 : len(lines)-1] {
		sum.Write(l)
	}
	tr["sha256"] = hex.EncodeToString(sum.Sum(nil))
	last, err := json.Marshal(tl)
	if err != nil {
		t.Fatal(err)
	}
	lines[len(lines)-1] = append(last, '\n')
	if err := os.WriteFile(path, bytes.Join(lines, nil), 0o644); err != nil {
		t.Fatal(err)
	}
}

// shardKeys returns the data keys of a shard file (counter and system keys
// are written only at the end, in the final batch).
func shardKeys(t *testing.T, store *blob.Store, url string) []string {
	t.Helper()
	fr, err := ndjson.Open(testenv.Context(t), store, url)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var keys []string
	for {
		rec, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return keys
		}
		if err != nil {
			t.Fatal(err)
		}
		if tag := rec.Tag(); tag != format.TagCounter && tag != format.TagSystem {
			k, _ := rec.Raw()
			keys = append(keys, string(k))
		}
	}
}

// A shard whose checksum is right but whose records are not (a line that
// does not decode at its end, or per-table counts its records do not have)
// passes import's up-front check and fails only after much of it has been
// written: nothing of it may survive, the shards before it stay as an
// unfinished import, and with the shard put right the rerun resumes to the
// same catalog as a clean import.
func TestShardFailingWhileWrittenLeavesNothingOfItself(t *testing.T) {
	store := testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, rows)
	good := t.TempDir()
	exportTo(t, store, src, good, 2, "")
	clean := fileURL(t, "clean")
	importFrom(t, store, good, clean, format.V1)
	bad := filepath.Join(good, layout.ShardFile(1, 2, ""))
	badKeys := shardKeys(t, store, bad)
	if len(badKeys) <= 1000 {
		t.Fatalf("shard 1 holds %d data keys: too few to be written in more than one batch", len(badKeys))
	}
	for name, c := range map[string]struct {
		edit func(lines [][]byte, tr map[string]any)
		want error
	}{
		"last line does not decode": {func(lines [][]byte, _ map[string]any) {
			l := len(lines) - 2
			lines[l] = bytes.Replace(lines[l], []byte(`"`), []byte(`'`), 1)
		}, ndjson.ErrBadLine},
		"counts differ": {func(_ [][]byte, tr map[string]any) {
			counts := tr["counts"].(map[string]any)
			for k, v := range counts {
				counts[k] = v.(float64) + 1
				break
			}
		}, ndjson.ErrTrailerMismatch},
	} {
		t.Run(name, func(t *testing.T) {
			dir := copyShards(t, store, good)
			damaged := filepath.Join(dir, filepath.Base(bad))
			reseal(t, damaged, c.edit)
			if _, _, err := ndjson.SkimFile(testenv.Context(t), store, damaged); err != nil {
				t.Fatalf("the resealed shard does not pass the up-front check: %v", err)
			}
			dst := fileURL(t, "dst")
			var written atomic.Uint64
			p := &shard.Progress{}
			_, err := shard.Import(testenv.Context(t), store, dir, dst, shard.ImportOptions{Format: format.V1, Progress: p,
				AfterShard: func(int) { written.Store(p.Records.Load()) }})
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if p.Records.Load() <= written.Load() {
				t.Fatalf("nothing of the bad shard was written before it failed (%d records, %d after shard 0): the test proves nothing", p.Records.Load(), written.Load())
			}
			got := kvscan.Dump(t, dst)
			for _, k := range badKeys {
				if _, ok := got[k]; ok {
					t.Fatalf("key %x of the bad shard survived its failed import", k)
				}
			}
			if _, err := catalog.Open(testenv.Context(t), dst, catalog.Options{}); err == nil {
				t.Fatal("the failed import's target opened as a catalog")
			}
			b, _ := os.ReadFile(bad)
			os.WriteFile(damaged, b, 0o644)
			res := importFrom(t, store, dir, dst, format.V1)
			if !res.Resumed {
				t.Fatalf("rerun did not resume: %+v", res)
			}
			kvscan.Same(t, "resumed after a bad shard vs clean", kvscan.Dump(t, clean), kvscan.Dump(t, dst))
		})
	}
}

// DigestCatalog hashes raw keys and values on several goroutines: its digest
// must be the one made record by record, as before (the digest is a contract
// between export, transform, import and verify), unknown tags included.
func TestDigestCatalogIsTheRecordDigest(t *testing.T) {
	src := fileURL(t, "src")
	seeded(t, src, rows)
	kvscan.Put(t, src, unknownTagKey, unknownTagValue)
	c := testcatalog.OpenV1(t, src)
	var want ndjson.Digest
	for e, err := range c.ScanRaw(testenv.Context(t), nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		rec, err := ndjson.NewRecord(format.V1, e.Key, e.Value)
		if err != nil {
			t.Fatal(err)
		}
		want.Add(rec)
	}
	got, err := shard.DigestCatalog(testenv.Context(t), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got != want || got.Counts()["tag 0x30"] != 1 {
		t.Fatalf("DigestCatalog %s %v, records %s %v", got.Sum(), got.Counts(), want.Sum(), want.Counts())
	}
}

// Every stage's progress ends with its total known and reached: export's
// estimate (from the counters) is replaced by the real counts as shards
// finish, import's comes from the shard trailers, verify's is both passes.
func TestProgressTotals(t *testing.T) {
	store := testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, rows)
	ctx := testenv.Context(t)
	c, err := catalog.Open(ctx, src, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	est, err := shard.EstimateKeys(ctx, c)
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var ep shard.Progress
	exp, err := shard.Export(ctx, store, src, dir, shard.ExportOptions{Format: format.V1, Shards: 3, Progress: &ep})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("estimated %d keys, exported %d", est, exp.Records)
	// The estimate only has to be of the right size for a progress bar.
	if est < exp.Records/2 || est > exp.Records*2 {
		t.Errorf("estimate %d keys for a catalog of %d", est, exp.Records)
	}
	if ep.Records.Load() != exp.Records || ep.RecordsTotal.Load() != exp.Records || ep.ShardsDone.Load() != 3 {
		t.Fatalf("export progress: %d of %d records, %d shards; exported %d", ep.Records.Load(), ep.RecordsTotal.Load(), ep.ShardsDone.Load(), exp.Records)
	}

	dst := fileURL(t, "dst")
	var ip shard.Progress
	imp, err := shard.Import(ctx, store, dir, dst, shard.ImportOptions{Format: format.V1, Progress: &ip})
	if err != nil {
		t.Fatal(err)
	}
	if ip.Records.Load() != imp.Records || ip.RecordsTotal.Load() != imp.Records || imp.Records != exp.Records {
		t.Fatalf("import progress: %d of %d records; imported %d", ip.Records.Load(), ip.RecordsTotal.Load(), imp.Records)
	}

	var vp shard.Progress
	if _, err := shard.Verify(ctx, store, dst, dir, shard.VerifyOptions{Progress: &vp}); err != nil {
		t.Fatal(err)
	}
	if vp.Records.Load() != 2*exp.Records || vp.RecordsTotal.Load() != 2*exp.Records {
		t.Fatalf("verify progress: %d of %d records; the catalog holds %d", vp.Records.Load(), vp.RecordsTotal.Load(), exp.Records)
	}
}

// Shards start largest first, ties in the order listed (index order).
func TestLargestFirst(t *testing.T) {
	files := []blob.Info{{Size: 10}, {Size: 30}, {Size: 10}, {Size: 20}, {Size: 30}}
	if got, want := shard.LargestFirst(files), []int{1, 4, 3, 0, 2}; !slices.Equal(got, want) {
		t.Fatalf("LargestFirst = %v, want %v", got, want)
	}
}

// Verify reads the shards and the catalog at the same time: a damaged shard
// is that shard's error, not a difference.
func TestVerifyDamagedShard(t *testing.T) {
	store := testenv.Store(t)
	src, dst := fileURL(t, "src"), fileURL(t, "dst")
	seeded(t, src, 300)
	dir := t.TempDir()
	exportTo(t, store, src, dir, 3, "")
	importFrom(t, store, dir, dst, format.V1)
	f := filepath.Join(dir, layout.ShardFile(1, 3, ""))
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// Without its trailer: the file ends on a record.
	lines := bytes.SplitAfter(bytes.TrimSuffix(b, []byte("\n")), []byte("\n"))
	if err := os.WriteFile(f, bytes.Join(lines[:len(lines)-1], nil), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = shard.Verify(testenv.Context(t), store, dst, dir, shard.VerifyOptions{})
	if !errors.Is(err, ndjson.ErrNoTrailer) || errors.Is(err, shard.ErrMismatch) {
		t.Fatalf("verify with a shard cut short: %v, want ErrNoTrailer", err)
	}
}

// Verify names the first record that differs and why: a value whose
// envelope is damaged (bad magic in format 1, a bad CRC in format 2), and
// a key the catalog lost, each by its key.
func TestVerifyNamesTheFirstDifference(t *testing.T) {
	ctx := testenv.Context(t)
	store := testenv.Store(t)
	src := fileURL(t, "src")
	seeded(t, src, 3000)
	v1dir, v2dir := t.TempDir(), t.TempDir()
	exportTo(t, store, src, v1dir, 3, "")
	urls, err := shard.List(ctx, store, v1dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range urls {
		if _, err := migration.TransformFile(ctx, store, u, filepath.Join(v2dir, filepath.Base(u)), format.V2, "test", migration.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name   string
		v      format.Version
		dir    string
		damage func(key, value []byte, b *slatedb.Batch)
		want   string
	}{
		{"bad magic, format 1", format.V1, v1dir, func(k, v []byte, b *slatedb.Batch) {
			v = bytes.Clone(v)
			v[0] ^= 0xFF
			b.Put(k, v)
		}, "does not decode"},
		{"bad CRC, format 2", format.V2, v2dir, func(k, v []byte, b *slatedb.Batch) {
			v = bytes.Clone(v)
			v[len(v)-1] ^= 0xFF
			b.Put(k, v)
		}, "does not decode"},
		{"a key lost", format.V1, v1dir, func(k, _ []byte, b *slatedb.Batch) { b.Delete(k) }, "in the shards but not in the catalog"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst := fileURL(t, "dst")
			importFrom(t, store, c.dir, dst, c.v)
			// A table row in the middle of the catalog.
			var key, value []byte
			keys := kvscan.Dump(t, dst)
			for k, v := range keys {
				if format.Tag(k[0]) == format.TagTable && (key == nil || k < string(key)) {
					key, value = []byte(k), []byte(v)
				}
			}
			if key == nil {
				t.Fatal("no table row")
			}
			w, err := slatedb.OpenWriter(ctx, dst, slatedb.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b slatedb.Batch
			c.damage(key, value, &b)
			if err := w.Write(ctx, &b); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			res, err := shard.Verify(ctx, store, dst, c.dir, shard.VerifyOptions{})
			if !errors.Is(err, shard.ErrMismatch) || !strings.Contains(res.First, fmt.Sprintf("%x", key)) || !strings.Contains(res.First, c.want) || !strings.Contains(err.Error(), res.First) {
				t.Fatalf("verify of a damaged catalog: %v; first difference %q, want key %x and %q", err, res.First, key, c.want)
			}
			t.Logf("verify names: %s", res.First)
		})
	}
}
