package seed_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/internal/testenv/testcatalog"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
)

func fileURL(t testing.TB) string { return "file://" + t.TempDir() + "/catalog" }

// digest hashes every key and value of the catalog.
func digest(t *testing.T, c *catalog.Catalog) string {
	h := sha256.New()
	for e, err := range c.ScanRaw(testenv.Context(t), nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%x=%x\n", e.Key, e.Value)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// The catalog holds exactly the keys Seed reports, at least as many as
// asked for, in a realistic mix: every key decodes in format 1.
func TestCountsAndMix(t *testing.T) {
	ctx := testenv.Context(t)
	for _, n := range []int{0, 1, 500, 30000} {
		url := fileURL(t)
		res, err := seed.Seed(ctx, url, seed.Options{Rows: n, Seed: int64(n)})
		if err != nil {
			t.Fatalf("rows %d: %v", n, err)
		}
		c := testcatalog.OpenV1(t, url)
		counts, err := c.Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var total uint64
		for name, k := range counts {
			total += k
			if res.Keys[name] != k {
				t.Fatalf("rows %d: %s has %d keys, Seed reported %d", n, name, k, res.Keys[name])
			}
		}
		if total < uint64(n) {
			t.Fatalf("rows %d: catalog holds %d keys", n, total)
		}
		for row, err := range c.ScanRange(ctx, nil, nil) {
			if err != nil {
				t.Fatalf("rows %d: %v", n, err)
			}
			_ = row
		}
		if n == 30000 {
			for _, tag := range []format.Tag{format.TagSchema, format.TagTable, format.TagColumn, format.TagDataFile, format.TagDataFileBySnapshot,
				format.TagFileColumnStats, format.TagDeleteFile, format.TagTag, format.TagColumnTag, format.TagSnapshotChanges,
				format.TagInlinedRows, format.TagSecondaryIndex, format.TagTableStats, format.TagTableColumnStats, format.TagSchemaVersions} {
				if counts[tag.Name()] == 0 {
					t.Errorf("no %s in a 30000-key catalog: %v", tag, counts)
				}
			}
			if fs := counts[format.TagFileColumnStats.Name()]; fs < total/3 {
				t.Errorf("file column stats %d of %d keys: most keys of a real catalog are per-file stats", fs, total)
			}
		}
	}
}

func TestDeterministic(t *testing.T) {
	ctx := testenv.Context(t)
	seedOnce := func(s int64) string {
		url := fileURL(t)
		if _, err := seed.Seed(ctx, url, seed.Options{Rows: 3000, Seed: s}); err != nil {
			t.Fatal(err)
		}
		return digest(t, testcatalog.OpenV1(t, url))
	}
	a, b, other := seedOnce(42), seedOnce(42), seedOnce(43)
	if a != b {
		t.Fatal("the same seed gave different catalogs")
	}
	if a == other {
		t.Fatal("seeds 42 and 43 gave the same catalog")
	}
}

// Ids are below the counters, snapshots increase, rows reference existing
// tables, and ended rows end after they begin (what `rocklake verify
// catalog` checks, and what RockLake's readers assume).
func TestConsistent(t *testing.T) {
	ctx := testenv.Context(t)
	url := fileURL(t)
	res, err := seed.Seed(ctx, url, seed.Options{Rows: 20000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	c := testcatalog.OpenV1(t, url)
	tables := map[uint64]bool{}
	var lastSnap uint64
	for row, err := range c.ScanRange(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		switch m := row.Msg.(type) {
		case *rocklakev1.Snapshot:
			if m.SnapshotId <= lastSnap || m.SnapshotId >= res.Counters.NextSnapshotID {
				t.Fatalf("snapshot %d after %d, next %d", m.SnapshotId, lastSnap, res.Counters.NextSnapshotID)
			}
			lastSnap = m.SnapshotId
		case *rocklakev1.Table:
			tables[m.TableId] = true
			if m.EndSnapshot != nil && *m.EndSnapshot <= m.BeginSnapshot {
				t.Fatalf("table %d ends at %d, begins at %d", m.TableId, *m.EndSnapshot, m.BeginSnapshot)
			}
			if m.TableId >= res.Counters.NextCatalogID {
				t.Fatalf("table id %d past next_catalog_id %d", m.TableId, res.Counters.NextCatalogID)
			}
		case *rocklakev1.DataFile:
			if !tables[m.TableId] || m.DataFileId >= res.Counters.NextFileID {
				t.Fatalf("data file %d of table %d (known %v, next file %d)", m.DataFileId, m.TableId, tables[m.TableId], res.Counters.NextFileID)
			}
		case *rocklakev1.Tag:
			if row.Key.Parts[1] != format.TagKeyHash(format.V1, m.TagKey) {
				t.Fatalf("tag %q keyed by %d", m.TagKey, row.Key.Parts[1])
			}
		}
	}
	if got, err := c.Counter(ctx, format.NameNextSnapshotID); err != nil || got != res.Counters.NextSnapshotID {
		t.Fatalf("next_snapshot_id %d, %v", got, err)
	}
}

func TestRefusesNonEmptyTarget(t *testing.T) {
	ctx := testenv.Context(t)
	url := fileURL(t)
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 10}); err != nil {
		t.Fatal(err)
	}
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 10}); !errors.Is(err, catalog.ErrTargetNotEmpty) {
		t.Fatalf("seed over a catalog: %v, want ErrTargetNotEmpty", err)
	}
	if _, err := seed.Seed(ctx, fileURL(t), seed.Options{Rows: -1}); err == nil {
		t.Fatal("seed of -1 rows succeeded")
	}
}

func TestSeedOnS3(t *testing.T) {
	s := s3server.Start(t)
	s3server.SetEnv(t, s)
	ctx := testenv.Context(t)
	if err := s.CreateBucket(ctx, "seed", true); err != nil {
		t.Fatal(err)
	}
	file := fileURL(t)
	for _, url := range []string{"s3://seed/catalogs/one", file} {
		if _, err := seed.Seed(ctx, url, seed.Options{Rows: 5000, Seed: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := digest(t, testcatalog.OpenV1(t, "s3://seed/catalogs/one")), digest(t, testcatalog.OpenV1(t, file)); a != b {
		t.Fatal("the same seed gave different catalogs on S3 and file")
	}
}
