package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
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

// Staging is what steps.go still calls the migration's staging names by
// until its split lands and it asks pkg/layout itself; removed then.
type Staging struct {
	Root        string
	MigrationID string
}

func (s Staging) l() layout.Staging { return layout.Staging(s) }

func (s Staging) Prefix() string                           { return s.l().Prefix() }
func (s Staging) PlanURL() string                          { return s.l().Plan() }
func (s Staging) ImportDir(from, to format.Version) string { return s.l().ImportDir(from, to) }
func (s Staging) ImportURL(from, to format.Version, i, n int) string {
	return s.l().ImportShard(from, to, i, n)
}
func (s Staging) ShardURL(v format.Version, i, n int) string { return s.l().Shard(v, i, n) }
func (s Staging) DecisionURL() string                        { return s.l().Decision() }

func (s Staging) ResultURL(step string, i int) string {
	if step == "export" {
		return s.l().ExportResult(i)
	}
	return s.l().TransformResult(i)
}

func (s Staging) StepURL(step string) string {
	switch step {
	case "probe":
		return s.l().Probe()
	case "import":
		return s.l().ImportResult()
	case "target-claim":
		return s.l().TargetClaim()
	case "verify":
		return s.l().VerifyResult()
	}
	return s.l().FlipIntent()
}

// stagingOf names migration id's objects in staging.
func (e Env) stagingOf(id string) layout.Staging {
	return layout.Staging{Root: e.Staging, MigrationID: id}
}

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
