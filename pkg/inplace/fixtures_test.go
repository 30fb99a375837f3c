package inplace

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
)

// The catalogs the real RockLake v0.47.11 wrote (pkg/catalog/testdata, through
// psql and through DuckDB): migrated in place, each equals a Strategy B
// migration of it, and its way back holds every key and value RockLake
// wrote, as does the catalog restored from it. (cmd/rocklake-migrate's TestRealRockLakeInPlace runs the rocklake
// binary itself against the result.)
func TestRockLakeFixtures(t *testing.T) {
	for _, fx := range []string{"rocklake-v0.47.11", "rocklake-v0.47.11/duckdb"} {
		t.Run(fx, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "catalog")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "catalog", "testdata", fx, "catalog"))); err != nil {
				t.Fatal(err)
			}
			url := "file://" + dir
			before := kvscan.Dump(t, url)
			want := strategyB(t, url, migration.UnknownFail)
			o := opts(t, url, "m-fx")
			res, err := Migrate(testenv.Context(t), url, o)
			if err != nil {
				t.Fatalf("migrate in place: %v", err)
			}
			if res.Digest != want || res.Records == 0 {
				t.Fatalf("in place: %d records, digest %s; Strategy B's %s", res.Records, res.Digest.Sum(), want.Sum())
			}
			kvscan.Same(t, "the way back", before, kvscan.Dump(t, res.WayBack.Catalog))
			if _, err := Restore(testenv.Context(t), url, res.WayBack.Catalog, RestoreOptions{Current: format.V2, Landed: res.Landed, Blob: o.Blob}); err != nil {
				t.Fatalf("restore: %v", err)
			}
			kvscan.Same(t, "after the restore", before, kvscan.Dump(t, url))
		})
	}
}
