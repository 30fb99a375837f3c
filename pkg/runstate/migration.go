package runstate

import (
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
)

// Run names a run and the two catalogs it goes between: its id, its
// pointer (and the version of it Check read), the source and the target
// and their formats. The state payload (Migration) and the plan (Plan)
// carry it, its fields flattened in their JSON.
type Run struct {
	MigrationID string         `json:"migration_id"`
	Pointer     string         `json:"pointer"`
	PointerETag string         `json:"pointer_etag"`
	Source      string         `json:"source"`
	Target      string         `json:"target"`
	From        format.Version `json:"from"`
	To          format.Version `json:"to"`
}

// Migration is the state payload every step after Check takes and returns:
// a few hundred bytes, whatever the shard count.
type Migration struct {
	Run
	NeedsMigration bool `json:"needs_migration"`
	DryRun         bool `json:"dry_run"`
	// PostponeFlip: wait at the gate after Verify for approve or abort.
	PostponeFlip bool   `json:"postpone_flip"`
	Shards       int    `json:"shards"`
	UnknownTags  string `json:"unknown_tags"`
	Checkpoint   string `json:"checkpoint,omitempty"`
	// WouldFence, in a dry run, says what a real run's Freeze would fence.
	WouldFence string `json:"would_fence,omitempty"`
	// StartedAt (when Check took the lock) and the id name the run's
	// record (pkg/history); Trigger says who started it.
	StartedAt time.Time `json:"started_at,omitzero"`
	Trigger   string    `json:"trigger,omitempty"`
	// InPlace: Strategy A (MigrateInPlace), the catalog migrated where it
	// lies, for catalogs of at most InPlaceMaxBytes (0: the default).
	// in_place is always present: the definition's Choice reads it.
	InPlace         bool  `json:"in_place"`
	InPlaceMaxBytes int64 `json:"in_place_max_bytes,omitempty"`
	// Rebuild: the catalog moves into a new one in its own format (From
	// == To), through the identity transform.
	Rebuild bool `json:"rebuild,omitempty"`
	// FreezeGrace is how long after the lock was taken (StartedAt) the
	// source is fenced, in seconds: time for the supervisors of the
	// servers on it (rocklake-migrate serve) to see the lock and switch to
	// reader mode, so that reads go on through the migration.
	FreezeGrace float64 `json:"freeze_grace,omitempty"`
	// FenceAt is the lock's fence_at: FreezeGrace after the lock was
	// written, what the supervisors read; the source is fenced no earlier.
	FenceAt time.Time `json:"fence_at,omitzero"`
	// ReadReplica: Freeze copies the frozen source into a replica
	// (layout.Replica), which the servers' supervisors find from the
	// pointer and the lock's holder and serve reads from while the source
	// is fenced. Replica is the one Freeze made ("" when none: skipped, or
	// not asked for); Abort and Flip remove it.
	ReadReplica bool   `json:"read_replica,omitempty"`
	Replica     string `json:"replica,omitempty"`

	// Online: the copy runs from a snapshot while RockLake keeps
	// committing; catch-up rounds follow until one is small, then the
	// source is fenced and a last round runs (docs/online.md). online,
	// caught_up and fenced are always present: the definition's Choices
	// read them.
	Online bool `json:"online"`
	// CatchUp bounds the rounds; Round is how many ran.
	CatchUp  CatchUpLimits `json:"catch_up,omitzero"`
	Round    int           `json:"round,omitempty"`
	CaughtUp bool          `json:"caught_up"`
	// Verified: VerifyCatchUp verified the whole target at round
	// VerifiedRound, before the fence (always present: a Choice reads it).
	Verified      bool `json:"verified"`
	VerifiedRound int  `json:"verified_round,omitempty"`
	Fenced        bool `json:"fenced"`
	// FencedAt is when Fence fenced the source: the write freeze runs from
	// it to the flip.
	FencedAt time.Time `json:"fenced_at,omitzero"`
	// OfflineBecause: the run was asked to migrate online and Snapshot
	// migrated it offline instead, for this reason (snapshotOffline).
	OfflineBecause string `json:"offline_because,omitempty"`
	// RollbackOf: this run is a rollback of that migration's flip
	// (carryback.go): Source is the catalog the pointer names, Target the
	// one its previous version names, and the rounds carry the source's
	// change since the flip into it.
	RollbackOf string `json:"rollback_of,omitempty"`

	// OperatorKind: the lock's holder is not a migration but an
	// operator's cleanup or restore (HoldLock); never in a state payload.
	OperatorKind history.Kind `json:"-"`
}

// CopiesOnline reports whether m copies while the source takes writes: a dry run
// fences nothing and an in-place migration copies nothing, so neither does.
func (m Migration) CopiesOnline() bool { return m.Online && !m.DryRun && !m.InPlace }

// CatchUpLimits bound the catch-up: rounds go on while one carries more
// than MaxKeys keys or takes more than MaxSeconds, at most MaxRounds times
// (then the run fences anyway: the writers outpaced it, and the last round
// carries the rest, its freeze longer). Zero: the defaults.
type CatchUpLimits struct {
	MaxKeys    int     `json:"max_keys,omitempty"`
	MaxSeconds float64 `json:"max_seconds,omitempty"`
	MaxRounds  int     `json:"max_rounds,omitempty"`
}

// The catch-up's default limits (gh-ost's rule, bounded).
const (
	DefaultCatchUpMaxKeys    = 10000
	DefaultCatchUpMaxSeconds = 2.0
	DefaultCatchUpMaxRounds  = 20
)

// WithDefaults is l with its zero limits at their defaults.
func (l CatchUpLimits) WithDefaults() CatchUpLimits {
	if l.MaxKeys <= 0 {
		l.MaxKeys = DefaultCatchUpMaxKeys
	}
	if l.MaxSeconds <= 0 {
		l.MaxSeconds = DefaultCatchUpMaxSeconds
	}
	if l.MaxRounds <= 0 {
		l.MaxRounds = DefaultCatchUpMaxRounds
	}
	return l
}

// NewMigrationID makes a migration id: the time and randomness, sortable.
func NewMigrationID() string { return NewRunID("m-") }

// NewRunID makes a run id with prefix: the time and randomness, sortable.
func NewRunID(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
