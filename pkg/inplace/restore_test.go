package inplace

import (
	"errors"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// commitAsV2Writer does what a RockLake binary of format 2 does to the
// migrated catalog, which it opens by URL: it opens it as its writer
// (fencing whoever wrote before), takes the next writer-epoch, and commits a
// snapshot (next_snapshot_id moves) with a row.
func commitAsV2Writer(t *testing.T, url string) {
	t.Helper()
	ctx := testenv.Context(t)
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatalf("open the migrated catalog as a format-2 writer: %v", err)
	}
	defer w.Close()
	epoch, next, err := w.Catalog.Marks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put(format.SystemKey(format.SystemWriterEpoch), format.EncodeCounter(format.V2, epoch+1))
	b.Put(format.CounterKey(format.V2, format.NameNextSnapshotID), format.EncodeCounter(format.V2, next+1))
	b.Put([]byte{0x30, 'n', 'e', 'w'}, []byte("a commit made after the migration"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if err := w.CloseContext(ctx); err != nil {
		t.Fatal(err)
	}
}

// Issue 24, 2: a catalog that took commits after the migration's batch
// (RockLake of the new format opens it by URL at once) is not restored over
// them: Restore refuses with ErrCatalogMoved, naming what moved, having
// written nothing; the catalog keeps the commits and the way back the
// catalog as it was. Without the batch's marks it restores nothing either.
func TestRestoreRefusesACatalogThatTookCommits(t *testing.T) {
	eachPlace(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		seeded(t, url, 300)
		before := kvscan.Dump(t, url)
		o := opts(t, url, "m-moved")
		res, err := Migrate(ctx, url, o)
		if err != nil {
			t.Fatalf("migrate in place: %v", err)
		}
		if res.Landed == nil || res.Landed.Engine == "" || res.Landed.NextSnapshotID == 0 {
			t.Fatalf("what the batch left: %+v", res.Landed)
		}
		commitAsV2Writer(t, url)
		committed := kvscan.Dump(t, url)

		_, err = Restore(ctx, url, o.WayBack, RestoreOptions{Current: format.V2, Landed: res.Landed, Blob: o.Blob})
		if !errors.Is(err, ErrCatalogMoved) || !strings.Contains(err.Error(), "SlateDB state moved") {
			t.Fatalf("restore over a commit: err = %v, want ErrCatalogMoved naming the SlateDB state", err)
		}
		kvscan.Same(t, "the catalog after the refused restore", committed, kvscan.Dump(t, url))
		kvscan.Same(t, "the way back", before, kvscan.Dump(t, o.WayBack))

		// RockLake's marks alone (a writer seen in the SlateDB state
		// recorded as the batch's): refused through the restore's writer.
		engine, err := EngineState(ctx, o.Blob, url)
		if err != nil {
			t.Fatal(err)
		}
		stale := *res.Landed
		stale.Engine = engine
		_, err = Restore(ctx, url, o.WayBack, RestoreOptions{Current: format.V2, Landed: &stale, Blob: o.Blob})
		if !errors.Is(err, ErrCatalogMoved) || !strings.Contains(err.Error(), "writer-epoch moved") || !strings.Contains(err.Error(), "next_snapshot_id moved") {
			t.Fatalf("restore over RockLake's commit: err = %v, want ErrCatalogMoved naming writer-epoch and next_snapshot_id", err)
		}
		kvscan.Same(t, "the catalog after the second refusal", committed, kvscan.Dump(t, url))

		if _, err := Restore(ctx, url, o.WayBack, RestoreOptions{Current: format.V2, Blob: o.Blob}); !errors.Is(err, ErrUndoUndecided) {
			t.Fatalf("restore without the batch's marks: err = %v, want ErrUndoUndecided", err)
		}
		kvscan.Same(t, "the catalog after the third refusal", committed, kvscan.Dump(t, url))
	})
}
