package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// Plan is what Freeze decides and every later step reads from staging.
type Plan struct {
	MigrationID    string         `json:"migration_id"`
	Pointer        string         `json:"pointer"`
	PointerETag    string         `json:"pointer_etag"`
	Source         string         `json:"source"`
	Target         string         `json:"target"`
	From           format.Version `json:"from"`
	To             format.Version `json:"to"`
	Checkpoint     string         `json:"checkpoint"`
	WriterEpoch    uint64         `json:"writer_epoch"`
	NextSnapshotID uint64         `json:"next_snapshot_id"`
	// EngineState is the source's newest SlateDB manifest and WAL objects
	// once Freeze's writer closed (see engineState).
	EngineState string        `json:"engine_state"`
	UnknownTags string        `json:"unknown_tags"`
	Ranges      []shard.Range `json:"ranges"`
	// Balance says how the ranges were cut: "blocks" (the SSTs' block
	// indexes), else "bytes (...)" (a byte scan) or by the counters'
	// estimate when the scan would take too long, with why (planShards).
	Balance string `json:"balance,omitempty"`
	// Replica is the read replica Freeze made ("" when none).
	Replica string `json:"replica,omitempty"`
}

// Staging names the objects of one migration under <staging>/<migration-id>/.
type Staging struct {
	Root        string // e.g. s3://bucket/staging
	MigrationID string
}

func (s Staging) dir() string {
	return strings.TrimSuffix(s.Root, "/") + "/" + s.MigrationID
}

// Prefix is everything of this migration; Abort deletes it.
func (s Staging) Prefix() string { return s.dir() + "/" }

func (s Staging) PlanURL() string { return s.dir() + "/" + drift.PlanName }

// ShardDir holds the shard files of one format.
func (s Staging) ShardDir(v format.Version) string { return fmt.Sprintf("%s/%s", s.dir(), v) }

// ImportDir holds the shards Import reads, in format to: ShardDir(to), or
// in a rebuild (from == to) a directory of its own beside the source
// format's, since the export's audit copy and the identity transform's
// output are two files.
func (s Staging) ImportDir(from, to format.Version) string {
	if from == to {
		return s.ShardDir(to) + rebuiltSuffix
	}
	return s.ShardDir(to)
}

// rebuiltSuffix names a rebuild's import directory (ImportDir).
const rebuiltSuffix = "-rebuilt"

// ImportURL is shard i of n in ImportDir(from, to).
func (s Staging) ImportURL(from, to format.Version, i, n int) string {
	return shard.Join(s.ImportDir(from, to), shard.FileName(i, n, "zst"))
}

// ShardURL is shard i of n in format v.
func (s Staging) ShardURL(v format.Version, i, n int) string {
	return shard.Join(s.ShardDir(v), shard.FileName(i, n, "zst"))
}

// ResultURL is where a step keeps its result for shard i.
func (s Staging) ResultURL(step string, i int) string {
	return fmt.Sprintf("%s/results/%s-%05d.json", s.dir(), step, i)
}

// DecisionURL holds the migration's one decision, flip or abort. It is
// outside Prefix, so that Abort's cleanup keeps it: a Flip that somehow ran
// after an Abort still finds "abort" (the staging lifecycle expires it).
func (s Staging) DecisionURL() string {
	return strings.TrimSuffix(s.Root, "/") + "/" + drift.DecisionsDir + "/" + s.MigrationID
}

// GateURL is the gate record of a migration waiting for approve or abort.
func (s Staging) GateURL() string { return s.StepURL("gate") }

// StepURL is where a whole-migration step keeps its result.
func (s Staging) StepURL(step string) string { return fmt.Sprintf("%s/%s.json", s.dir(), step) }

func putJSON(ctx context.Context, store *blob.Store, url string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("workflow: encode %s: %w", url, err)
	}
	if _, err := store.Put(ctx, url, b); err != nil {
		return fmt.Errorf("workflow: write %s: %w", url, err)
	}
	return nil
}

func getJSON(ctx context.Context, store *blob.Store, url string, v any) error {
	b, _, err := store.Get(ctx, url)
	if err != nil {
		return fmt.Errorf("workflow: read %s: %w", url, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("workflow: decode %s: %w", url, err)
	}
	return nil
}

// TimingURL is where a timed step's attempt that ended at end keeps its time.
func (s Staging) TimingURL(step string, end time.Time) string {
	return fmt.Sprintf("%s/timing/%s-%d.json", s.dir(), step, end.UnixNano())
}
