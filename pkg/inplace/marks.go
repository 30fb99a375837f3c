package inplace

import (
	"context"
	"fmt"
	"path"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Marks are what the migration's batch left in the catalog, recorded as
// soon as it landed: RockLake's writer-epoch and next_snapshot_id, which
// every RockLake writer moves (the epoch when it opens, the counter when it
// commits a snapshot), and the newest SlateDB manifest and WAL objects,
// which any SlateDB writer moves (opening one writes a manifest). Restore
// compares them with the catalog's before it writes anything.
type Marks struct {
	WriterEpoch    uint64 `json:"writer_epoch"`
	NextSnapshotID uint64 `json:"next_snapshot_id"`
	Engine         string `json:"engine"`
	// Pin, when the workflow pinned the catalog right after the batch (its
	// flip's pin, layout.FlipCheckpoint), is that view: Restore then
	// carries what the catalog took since into what it restores, taken
	// down to the way back's format, instead of refusing.
	Pin *slatedb.View `json:"pin,omitempty"`
}

// known reports whether m was recorded: a real catalog has a manifest.
func (m *Marks) known() bool { return m != nil && m.Engine != "" }

// EngineState names the newest SlateDB manifest and WAL objects of the
// database at url. Opening a SlateDB writer writes a manifest (it fences
// the writer before it) and every commit writes a WAL object, so a write
// by any writer changes it; this tool's readers write nothing (a SlateDB
// 0.13 reader of anyone else's may write a checkpoint, which changes it too:
// a restore is then refused that was safe, never the other way round).
func EngineState(ctx context.Context, store *blob.Store, url string) (string, error) {
	newest := func(dir string) (string, error) {
		infos, err := store.List(ctx, strings.TrimSuffix(url, "/")+"/"+dir+"/")
		if err != nil {
			return "", fmt.Errorf("list %s of %s: %w", dir, url, err)
		}
		last := ""
		for _, in := range infos {
			last = max(last, path.Base(in.URL))
		}
		return last, nil
	}
	manifest, err := newest("manifest")
	if err != nil {
		return "", err
	}
	if manifest == "" {
		return "", fmt.Errorf("%s has no SlateDB manifest", url)
	}
	wal, err := newest("wal")
	if err != nil {
		return "", err
	}
	return "manifest " + manifest + ", wal " + wal, nil
}

// moved says how the catalog's marks differ from was ("" when they do
// not).
func moved(was Marks, epoch, next uint64, engine string) string {
	var parts []string
	if epoch != was.WriterEpoch {
		parts = append(parts, fmt.Sprintf("its writer-epoch moved from %d to %d (a RockLake writer opened it)", was.WriterEpoch, epoch))
	}
	if next != was.NextSnapshotID {
		parts = append(parts, fmt.Sprintf("its next_snapshot_id moved from %d to %d (snapshots were committed)", was.NextSnapshotID, next))
	}
	if engine != "" && engine != was.Engine {
		parts = append(parts, fmt.Sprintf("its SlateDB state moved from %s to %s (a writer, or a reader taking a checkpoint, opened it)", was.Engine, engine))
	}
	return strings.Join(parts, "; ")
}
