package shard_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/testcatalog"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
)

// A key of a tag no binary knows yet, and its value.
var (
	unknownTagKey   = []byte{0x30, 1, 2, 3}
	unknownTagValue = []byte("a table from the future")
)

// futureRow is a row a newer binary wrote, with a field this one does not
// know: its key, the row, and the key and value it is stored as in format 1.
func futureRow(t *testing.T) (format.Key, *rocklakev1.TableStats, []byte, []byte) {
	t.Helper()
	row := &rocklakev1.TableStats{TableId: 777}
	row.ProtoReflect().SetUnknown(protowire.AppendString(protowire.AppendTag(nil, 99, protowire.BytesType), "future"))
	k := format.Key{Tag: format.TagTableStats, Parts: []uint64{777}}
	key, _ := format.EncodeKey(format.V1, k)
	value, err := format.EncodeValue(format.V1, k, row)
	if err != nil {
		t.Fatal(err)
	}
	return k, row, key, value
}

// fuseSource is a seeded catalog with what a transform treats specially: a
// row with an unknown field (carried) and a key of an unknown tag.
func fuseSource(t *testing.T) string {
	t.Helper()
	src := fileURL(t, "src")
	seeded(t, src, rows)
	_, _, key, value := futureRow(t)
	kvscan.Put(t, src, key, value)
	kvscan.Put(t, src, unknownTagKey, unknownTagValue)
	return src
}

func header(c *catalog.Catalog, r shard.Range, n int) ndjson.Header {
	return ndjson.Header{CatalogFormat: format.V1, ShardIndex: r.Index, ShardCount: n, KeyStart: r.Start, KeyEnd: r.End,
		CheckpointID: "cp", Source: c.URL(), CreatedBy: "test"}
}

func fused(t *testing.T, out2 string, opts migration.Options) shard.Transformed {
	t.Helper()
	path, err := migration.Path(format.V1, format.V2)
	if err != nil {
		t.Fatal(err)
	}
	return shard.Transformed{Out: out2, To: format.V2, Path: path, Options: opts, CreatedBy: "test"}
}

func readAll(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The fused step writes, byte for byte, the shards that ExportShard and then
// TransformFile of its output write, with the same digests and counts, for
// every shard of a plan, compressed or not, unknown tags carried or dropped.
func TestExportTransformShardEqualsTheSeparateSteps(t *testing.T) {
	store := testenv.Store(t)
	c := testcatalog.OpenV1(t, fuseSource(t))
	const n = 3
	ranges, err := shard.PlanByBytes(testenv.Context(t), c, n, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		compression string
		policy      migration.UnknownTags
	}{{"zst", migration.UnknownCarry}, {"", migration.UnknownDrop}, {"gz", migration.UnknownCarry}} {
		dir := t.TempDir()
		var total uint64
		for _, r := range ranges {
			name := layout.ShardFile(r.Index, n, tc.compression)
			sep1, sep2 := filepath.Join(dir, "sep1", name), filepath.Join(dir, "sep2", name)
			fuse1, fuse2 := filepath.Join(dir, "fuse1", name), filepath.Join(dir, "fuse2", name)
			h := header(c, r, n)
			want, err := shard.ExportShard(testenv.Context(t), store, c, h, sep1, nil)
			if err != nil {
				t.Fatal(err)
			}
			wantStats, err := migration.TransformFile(testenv.Context(t), store, sep1, sep2, format.V2, "test", migration.Options{UnknownTags: tc.policy})
			if err != nil {
				t.Fatal(err)
			}
			var prog shard.Progress
			tr := fused(t, fuse2, migration.Options{UnknownTags: tc.policy})
			tr.Progress = &prog
			got, gotStats, err := shard.ExportTransformShard(testenv.Context(t), store, c, h, fuse1, tr, nil)
			if err != nil {
				t.Fatalf("shard %d (%q): %v", r.Index, tc.compression, err)
			}
			if !bytes.Equal(readAll(t, sep1), readAll(t, fuse1)) {
				t.Errorf("shard %d (%q): the fused export differs from ExportShard's", r.Index, tc.compression)
			}
			if !bytes.Equal(readAll(t, sep2), readAll(t, fuse2)) {
				t.Errorf("shard %d (%q): the fused transform differs from TransformFile's", r.Index, tc.compression)
			}
			if got.Records != want.Records || got.Digest.Sum() != want.Digest.Sum() || got.URL != fuse1 {
				t.Errorf("shard %d: export result %+v, want %+v", r.Index, got, want)
			}
			if gotStats.Digest.Sum() != wantStats.Digest.Sum() || gotStats.RecordsIn != wantStats.RecordsIn ||
				gotStats.RecordsOut != wantStats.RecordsOut || len(gotStats.Carried) != len(wantStats.Carried) || len(gotStats.Dropped) != len(wantStats.Dropped) {
				t.Errorf("shard %d: transform stats %+v, want %+v", r.Index, gotStats, wantStats)
			}
			if prog.Records.Load() != want.Records {
				t.Errorf("shard %d: progress counted %d records transformed, want %d", r.Index, prog.Records.Load(), want.Records)
			}
			if _, _, err := ndjson.VerifyFile(testenv.Context(t), store, fuse2); err != nil {
				t.Errorf("shard %d: %v", r.Index, err)
			}
			total += got.Records
		}
		if total < rows {
			t.Fatalf("%d records in %d shards of %d rows", total, n, rows)
		}
	}
}

// A shard that fails while both files are written leaves neither: a record
// the transform refuses in the middle of the range, one the export cannot
// read, and the fail policy's unknown tags, which it only knows at the end.
func TestExportTransformShardFailingLeavesNoShard(t *testing.T) {
	store := testenv.Store(t)
	src := fuseSource(t)
	// The last snapshot row gets field 100, which format 2 defines
	// (snapshot_time_micros): its transform fails with many records still
	// to export.
	var keys, values [][]byte
	snap := -1
	func() {
		c := testcatalog.OpenV1(t, src)
		for e, err := range c.ScanRaw(testenv.Context(t), nil, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if len(e.Key) > 0 && e.Key[0] == byte(format.TagSnapshot) {
				snap = len(keys)
			}
			keys, values = append(keys, bytes.Clone(e.Key)), append(values, bytes.Clone(e.Value))
		}
	}()
	if snap < 1 || len(keys)-snap < 100 {
		t.Fatalf("want a snapshot row after the first key and before many: at %d of %d keys", snap, len(keys))
	}
	mid := len(keys) / 2
	collide := protowire.AppendVarint(protowire.AppendTag(nil, 100, protowire.VarintType), 77)
	dir := t.TempDir()
	for _, tc := range []struct {
		name       string
		key, value []byte
		policy     migration.UnknownTags
		want       error
	}{
		{"collision", keys[snap], appendUnknown(t, keys[snap], values[snap], collide), migration.UnknownCarry, migration.ErrFieldCollision},
		{"unknown-tags", keys[snap], values[snap], migration.UnknownFail, migration.ErrUnknownTags},
		// A value the export cannot read, in the middle of the range.
		{"bad-value", keys[mid], []byte("not a row"), migration.UnknownCarry, nil},
	} {
		kvscan.Put(t, src, tc.key, tc.value)
		c := testcatalog.OpenV1(t, src)
		out1, out2 := filepath.Join(dir, tc.name+"-v1.ndjson.zst"), filepath.Join(dir, tc.name+"-v2.ndjson.zst")
		_, _, err := shard.ExportTransformShard(testenv.Context(t), store, c, header(c, shard.Range{}, 1), out1, fused(t, out2, migration.Options{UnknownTags: tc.policy}), nil)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Fatalf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
		for _, out := range []string{out1, out2} {
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s: %s exists after a failed shard (%v)", tc.name, out, err)
			}
		}
		if ents, err := os.ReadDir(dir); err != nil || len(ents) != 0 {
			t.Errorf("%s: left %v in the output directory (%v)", tc.name, ents, err)
		}
	}
}

// appendUnknown re-encodes the v1 value of key with unknown appended to its
// row's unknown fields.
func appendUnknown(t *testing.T, key, value, unknown []byte) []byte {
	t.Helper()
	k, err := format.DecodeKey(format.V1, key)
	if err != nil {
		t.Fatal(err)
	}
	row, err := format.DecodeValue(format.V1, k, value)
	if err != nil {
		t.Fatal(err)
	}
	m := row.ProtoReflect()
	m.SetUnknown(append(m.GetUnknown(), unknown...))
	out, err := format.EncodeValue(format.V1, k, row)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
