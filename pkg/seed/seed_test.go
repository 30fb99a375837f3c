package seed_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/localstack/localstacktest"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func fileURL(t testing.TB) string { return "file://" + t.TempDir() + "/catalog" }

func open(t testing.TB, url string, v format.Version) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(testCtx(t), url, catalog.Options{Expect: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestExactRowCount(t *testing.T) {
	ctx := testCtx(t)
	for _, n := range []int{0, 1, 4, 5, 8, 9, 12, 30, 100, 777, 5000} {
		url := fileURL(t)
		res, err := seed.Seed(ctx, url, seed.Options{Rows: n, Seed: int64(n)})
		if err != nil {
			t.Fatalf("rows %d: %v", n, err)
		}
		counts, err := open(t, url, format.V1).Counts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total := uint64(0)
		for name, c := range counts {
			total += c
			if res.Rows[name] != c {
				t.Fatalf("rows %d: %s has %d rows, Seed reported %d", n, name, c, res.Rows[name])
			}
		}
		if total != uint64(n) {
			t.Fatalf("rows %d: catalog holds %d rows (%v)", n, total, counts)
		}
	}
}

// digest hashes every key and value of the catalog.
func digest(t *testing.T, c *catalog.Catalog) string {
	h := sha256.New()
	for e, err := range c.ScanRaw(testCtx(t), nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(h, "%x=%x\n", e.Key, e.Value)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

func TestDeterministic(t *testing.T) {
	ctx := testCtx(t)
	seedOnce := func(s int64, v format.Version) string {
		url := fileURL(t)
		if _, err := seed.Seed(ctx, url, seed.Options{Rows: 3000, Seed: s, Version: v}); err != nil {
			t.Fatal(err)
		}
		return digest(t, open(t, url, v))
	}
	for _, v := range []format.Version{format.V1, format.V2} {
		a, b, other := seedOnce(42, v), seedOnce(42, v), seedOnce(43, v)
		if a != b {
			t.Fatalf("%s: the same seed gave different catalogs", v)
		}
		if a == other {
			t.Fatalf("%s: seeds 42 and 43 gave the same catalog", v)
		}
	}
}

// TestConsistent checks what DuckLake would: every row fits its snapshot
// range, references exist, snapshot times increase, counters are past every
// id used, and the mix is mostly files.
func TestConsistent(t *testing.T) {
	for _, v := range []format.Version{format.V1, format.V2} {
		t.Run(v.String(), func(t *testing.T) {
			ctx := testCtx(t)
			url := fileURL(t)
			const rows = 20000
			res, err := seed.Seed(ctx, url, seed.Options{Rows: rows, Seed: 7, Version: v})
			if err != nil {
				t.Fatal(err)
			}
			c := open(t, url, v)
			checkConsistent(t, c, v, res)
		})
	}
}

type span struct{ begin, end uint64 } // end 0: current

func checkConsistent(t *testing.T, c *catalog.Catalog, v format.Version, res *seed.Result) {
	ctx := testCtx(t)
	var (
		lastSnapshot uint64
		lastTime     int64
		changes      = map[uint64]bool{}
		commitLog    = map[uint64]bool{}
		schemas      = map[uint64]bool{}
		tables       = map[uint64][]span{}
		columns      = map[[2]uint64]span{}
		dataFiles    = map[uint64]*rocklakev1.DataFile{}
		maxID        = map[string]uint64{}
		counts       = map[format.Tag]int{}
	)
	seen := func(counter string, id uint64) { maxID[counter] = max(maxID[counter], id) }
	inRange := func(what string, begin uint64, end *uint64) {
		if begin < 1 || begin > lastSnapshot {
			t.Fatalf("%s: begin_snapshot %d outside snapshots 1..%d", what, begin, lastSnapshot)
		}
		if end != nil && (*end < begin || *end > lastSnapshot) {
			t.Fatalf("%s: end_snapshot %d before begin %d or after the last snapshot %d", what, *end, begin, lastSnapshot)
		}
	}
	for row, err := range c.ScanRange(ctx, nil, []byte{byte(format.TagCounter)}) {
		if err != nil {
			t.Fatal(err)
		}
		counts[row.Key.Tag]++
		// Format 2 rows but the snapshot have format 1's wire encoding: read
		// them through format 1's types to check both formats alike.
		msg := row.Msg
		if v == format.V2 && row.Key.Tag != format.TagSnapshot {
			m1, err := format.NewRow(format.V1, row.Key.Tag)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := proto.Marshal(msg)
			if err := proto.Unmarshal(b, m1); err != nil {
				t.Fatal(err)
			}
			msg = m1
		}
		what := fmt.Sprintf("%s %v", row.Key.Tag, row.Key.Parts)
		switch m := msg.(type) {
		case *rocklakev1.Snapshot:
			if m.SnapshotId != lastSnapshot+1 || m.GetSnapshotTime() == "" {
				t.Fatalf("%s: snapshot ids must run 1, 2, ... with a time: %v", what, m)
			}
			lastSnapshot = m.SnapshotId
			seen(format.CounterNextSnapshotID, m.SnapshotId)
			tm, err := time.Parse("2006-01-02 15:04:05.000000+00", m.GetSnapshotTime())
			if err != nil || tm.UnixMicro() <= lastTime {
				t.Fatalf("%s: time %q (%v) not after the previous snapshot's", what, m.GetSnapshotTime(), err)
			}
			lastTime = tm.UnixMicro()
		case *rocklakev2.Snapshot:
			if m.SnapshotId != lastSnapshot+1 || m.GetSnapshotTimeMicros() <= lastTime {
				t.Fatalf("%s: snapshot ids must run 1, 2, ... at increasing times: %v", what, m)
			}
			lastSnapshot, lastTime = m.SnapshotId, m.GetSnapshotTimeMicros()
			seen(format.CounterNextSnapshotID, m.SnapshotId)
		case *rocklakev1.SnapshotChanges:
			if m.SnapshotId > lastSnapshot || m.GetChangesMade() == "" {
				t.Fatalf("%s: changes of no snapshot, or empty: %v", what, m)
			}
			changes[m.SnapshotId] = true
		case *rocklakev1.Schema:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			schemas[m.SchemaId] = true
			seen(format.CounterNextSchemaID, m.SchemaId)
		case *rocklakev1.Table:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			if !schemas[m.GetSchemaId()] {
				t.Fatalf("%s: schema %d does not exist", what, m.GetSchemaId())
			}
			tables[m.TableId] = append(tables[m.TableId], span{m.BeginSnapshot, m.GetEndSnapshot()})
			seen(format.CounterNextTableID, m.TableId)
		case *rocklakev1.View:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			if !schemas[m.GetSchemaId()] {
				t.Fatalf("%s: schema %d does not exist", what, m.GetSchemaId())
			}
			seen(format.CounterNextTableID, m.ViewId)
		case *rocklakev1.Tag:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			liveTable(t, what, tables, m.ObjectId, m.BeginSnapshot)
			seen(format.CounterNextTagID, row.Key.Parts[2])
		case *rocklakev1.ColumnTag:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			seen(format.CounterNextTagID, row.Key.Parts[3])
		case *rocklakev1.DataFile:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			liveTable(t, what, tables, m.TableId, m.BeginSnapshot)
			if m.GetRecordCount() <= 0 || m.GetFileSizeBytes() <= 0 || m.GetPath() == "" {
				t.Fatalf("%s: implausible file %v", what, m)
			}
			dataFiles[m.DataFileId] = m
			seen(format.CounterNextFileID, m.DataFileId)
		case *rocklakev1.DeleteFile:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			f := dataFiles[m.GetDataFileId()]
			if f == nil || f.TableId != m.TableId || f.BeginSnapshot > m.BeginSnapshot || m.GetDeleteCount() > f.GetRecordCount() {
				t.Fatalf("%s: does not fit its data file %v", what, f)
			}
			if (f.EndSnapshot == nil) != (m.EndSnapshot == nil) {
				t.Fatalf("%s: ends at %d, its data file at %d", what, m.GetEndSnapshot(), f.GetEndSnapshot())
			}
			seen(format.CounterNextFileID, m.DeleteFileId)
		case *rocklakev1.Column:
			inRange(what, m.BeginSnapshot, m.EndSnapshot)
			liveTable(t, what, tables, m.TableId, m.BeginSnapshot)
			columns[[2]uint64{m.TableId, m.ColumnId}] = span{m.BeginSnapshot, m.GetEndSnapshot()}
			seen(format.CounterNextColumnID, m.ColumnId)
		case *rocklakev1.TableStats:
			liveTable(t, what, tables, m.TableId, lastSnapshot)
		case *rocklakev1.TableColumnStats:
			if s, ok := columns[[2]uint64{m.TableId, m.ColumnId}]; !ok || s.end != 0 {
				t.Fatalf("%s: stats of a column that is not live", what)
			}
		case *rocklakev1.NameIndex:
			if len(m.Entries) == 0 {
				t.Fatalf("%s: empty", what)
			}
		case *rocklakev1.FileScheduledForDeletion:
			if f := dataFiles[m.DataFileId]; f == nil || f.EndSnapshot == nil || f.GetPath() != m.GetPath() {
				t.Fatalf("%s: scheduled file %v is not an ended data file", what, f)
			}
		case *rocklakev1.CommitLogEntry:
			commitLog[m.SnapshotId] = true
		case *rocklakev1.Metadata:
			seen(format.CounterNextMetadataID, row.Key.Parts[0])
		default:
			t.Fatalf("%s: unexpected row %T", what, m)
		}
	}
	// Column tags come before columns in key order: check them now.
	for row, err := range c.Scan(ctx, format.TagColumnTag) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := columns[[2]uint64{row.Key.Parts[0], row.Key.Parts[1]}]; !ok {
			t.Fatalf("column tag %v: no such column", row.Key.Parts)
		}
	}
	if len(changes) != int(lastSnapshot) || len(commitLog) != int(lastSnapshot) {
		t.Fatalf("%d snapshots, %d with changes, %d in the commit log", lastSnapshot, len(changes), len(commitLog))
	}
	for name, id := range maxID {
		if got := res.Counters[name]; got <= id {
			t.Fatalf("counter %s = %d, not past the highest id used, %d", name, got, id)
		}
		n, err := c.Counter(ctx, name)
		if err != nil || n != res.Counters[name] {
			t.Fatalf("stored counter %s = %d, %v, want %d", name, n, err, res.Counters[name])
		}
	}
	total := 0
	for _, t := range format.KnownTags() {
		total += counts[t]
	}
	for _, tag := range format.KnownTags() {
		if tag != format.TagCounter && tag != format.TagSystem && counts[tag] == 0 {
			t.Fatalf("no %s rows (%v)", tag, counts)
		}
	}
	if files := counts[format.TagDataFile]; files*10 < total*7 {
		t.Fatalf("%d data files of %d rows: want most rows (70%%+) data files", files, total)
	}
}

// liveTable fails unless table id has a version live at snapshot s.
func liveTable(t *testing.T, what string, tables map[uint64][]span, id, s uint64) {
	t.Helper()
	for _, sp := range tables[id] {
		if sp.begin <= s && (sp.end == 0 || s <= sp.end) {
			return
		}
	}
	t.Fatalf("%s: table %d has no version live at snapshot %d (%v)", what, id, s, tables[id])
}

func TestRefusesNonEmptyTarget(t *testing.T) {
	ctx := testCtx(t)
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
	if _, err := seed.Seed(ctx, fileURL(t), seed.Options{Rows: 1, Version: 9}); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Fatalf("seed of format 9: %v, want ErrUnsupportedVersion", err)
	}
}

func TestSeedOnS3(t *testing.T) {
	s := localstacktest.Start(t)
	localstacktest.SetEnv(t, s)
	ctx := testCtx(t)
	if err := s.CreateBucket(ctx, "seed", true); err != nil {
		t.Fatal(err)
	}
	file := fileURL(t)
	for _, url := range []string{"s3://seed/catalogs/one", file} {
		if _, err := seed.Seed(ctx, url, seed.Options{Rows: 5000, Seed: 3, Version: format.V2}); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := digest(t, open(t, "s3://seed/catalogs/one", format.V2)), digest(t, open(t, file, format.V2)); a != b {
		t.Fatal("the same seed gave different catalogs on S3 and file")
	}
}
