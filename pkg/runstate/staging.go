package runstate

import (
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
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
	// Replica is the read replica Freeze (or Fence) made ("" when none).
	Replica string `json:"replica,omitempty"`
	// FenceView is an online run's view of the fenced source (Checkpoint
	// is its snapshot's), taken at FencedAt: the marks and engine state
	// above are the fenced source's from then on.
	FenceView slatedb.View `json:"fence_view,omitzero"`
	FencedAt  time.Time    `json:"fenced_at,omitzero"`
	// FenceBacklog is the WAL backlog Fence's writer replayed, fetched
	// ahead of the freeze.
	FenceBacklog *history.Backlog `json:"fence_backlog,omitempty"`
	// Start: the first catch-up round starts here, not at Checkpoint with
	// the shards' digest (a rollback: the source's pin at the flip and
	// the target's digest); RollbackOf and FlipPoint say which flip it
	// rolls back, and its pins.
	Start      *RoundStart        `json:"start,omitempty"`
	RollbackOf string             `json:"rollback_of,omitempty"`
	FlipPoint  *pointer.FlipPoint `json:"flip_point,omitempty"`
}

// RoundStart is where a run's first catch-up round starts when it is not
// the snapshot's checkpoint and the shards' digest: a rollback's, the
// source's pin at the flip and the target's digest.
type RoundStart struct {
	View   slatedb.View  `json:"view"`
	Digest ndjson.Digest `json:"digest"`
}

type ShardResult struct {
	Records uint64                `json:"records"`
	Digest  ndjson.Digest         `json:"digest"`
	Carried map[format.Tag]uint64 `json:"carried,omitempty"`
	Dropped map[format.Tag]uint64 `json:"dropped,omitempty"`
}
