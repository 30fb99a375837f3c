package catalog_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The snapshot fixtures of docs/schema-version.md: catalogs the real RockLake
// v0.47.11 wrote (scripts/make-fixtures.sh: over the PostgreSQL wire, psql's
// then, and through DuckDB 1.5.3 as a DuckLake client), committed with RockLake's own `inspect
// snapshot` of them. These tests read them without RockLake.
var rockLakeFixtures = []string{
	"testdata/rocklake-v0.47.11",
	"testdata/rocklake-v0.47.11/duckdb",
}

// inspectFields parses the "  Name: value" lines of `rocklake inspect
// snapshot`.
func inspectFields(t *testing.T, dir string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "inspect.txt"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), ":"); ok && strings.HasPrefix(l, "  ") {
			m[k] = strings.TrimSpace(v)
		}
	}
	return m
}

// Every key and value RockLake wrote decodes into its shape and row, and
// encodes back to the same bytes: our format 1 is RockLake's, byte for byte.
func TestRockLakeFixturesRoundTrip(t *testing.T) {
	for _, fx := range rockLakeFixtures {
		t.Run(fx, func(t *testing.T) {
			ctx := testenv.Context(t)
			dir, err := filepath.Abs(filepath.Join(fx, "catalog"))
			if err != nil {
				t.Fatal(err)
			}
			c, err := catalog.Open(ctx, "file://"+dir, catalog.Options{Expect: format.V1})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			n := 0
			for e, err := range c.ScanRaw(ctx, nil, nil) {
				if err != nil {
					t.Fatal(err)
				}
				n++
				k, err := format.DecodeKey(format.V1, e.Key)
				if err != nil {
					t.Fatalf("key %x: %v", e.Key, err)
				}
				if k.Raw != nil {
					t.Errorf("key %x (%s) has no known shape", e.Key, k.Tag)
					continue
				}
				if back, err := format.EncodeKey(format.V1, k); err != nil || !bytes.Equal(back, e.Key) {
					t.Errorf("key %x re-encodes as %x (%v)", e.Key, back, err)
				}
				row, err := format.DecodeValue(format.V1, k, e.Value)
				if err != nil {
					t.Fatalf("value of %x (%s %s): %v", e.Key, k.Tag, k.Name, err)
				}
				if u := row.ProtoReflect().GetUnknown(); len(u) > 0 {
					t.Errorf("value of %x (%s) has fields our format-1 messages lack: %x", e.Key, k.Tag, u)
				}
				if back, err := format.EncodeValue(format.V1, k, row); err != nil || !bytes.Equal(back, e.Value) {
					t.Errorf("value of %x (%s) re-encodes as %x, RockLake wrote %x (%v)", e.Key, k.Tag, back, e.Value, err)
				}
			}
			if n < 20 {
				t.Fatalf("%s holds %d keys: not the fixture", dir, n)
			}

			// Our reading agrees with RockLake's own inspect snapshot.
			want := inspectFields(t, fx)
			counts, err := c.Counts(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for field, tag := range map[string]format.Tag{
				"Schemas": format.TagSchema, "Tables": format.TagTable, "Columns": format.TagColumn,
				"Data files": format.TagDataFile, "Delete files": format.TagDeleteFile,
			} {
				if got := strconv.FormatUint(counts[tag.Name()], 10); got != want[field] {
					t.Errorf("%s: %s, RockLake's inspect says %s", tag, got, want[field])
				}
			}
			for field, name := range map[string]string{
				"Next snapshot ID": format.NameNextSnapshotID, "Next catalog ID": format.NameNextCatalogID, "Next file ID": format.NameNextFileID,
			} {
				got, err := c.Counter(ctx, name)
				if err != nil || strconv.FormatUint(got, 10) != want[field] {
					t.Errorf("%s = %d (%v), RockLake's inspect says %s", name, got, err, want[field])
				}
			}
			epoch, err := c.SystemValue(ctx, format.SystemWriterEpoch)
			if err != nil || strconv.FormatUint(epoch, 10) != want["Writer epoch"] {
				t.Errorf("writer-epoch = %d (%v), RockLake's inspect says %s", epoch, err, want["Writer epoch"])
			}
		})
	}
}
