package workflow

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Env is what every step runs with: configuration, not state.
type Env struct {
	Store     *blob.Store
	Staging   string // root of staging, e.g. s3://rocklake-staging/migrations
	SlateDB   slatedb.Options
	CreatedBy string
	// ImportMargin is how long before its context's deadline Import stops
	// starting shards (default 60 s), so a Lambda returns in time.
	ImportMargin time.Duration
	// InPlaceMargin is how long before its context's deadline the in-place
	// step stops migrating (default: DefaultInPlaceMargin, or a quarter of
	// the step's time if less), keeping the rest for its undo, record and
	// lock.
	InPlaceMargin time.Duration
	// Local: the steps run in the CLI's process under pkg/asl (LocalTasks),
	// not as Lambdas under Step Functions; the gate's token is pkg/asl's.
	Local bool
	// Publish sends the steps' own SNS messages (the gate's); nil:
	// SNSPublish.
	Publish Publish
	// ExpectedVersion reads the format version the deployed release expects
	// (the SSM parameter the release pipeline sets), for a Check or Drift
	// input that names none; nil: the input must name it.
	ExpectedVersion func(ctx context.Context) (string, error)
	// Progress counts what the long steps do as they go, for the CLI's
	// display of a local run; its nil counts count nothing.
	Progress Progress
	// ExecutionTimeout is the migration execution's top-level
	// TimeoutSeconds, which the lock's lease covers (LockLease); zero: the
	// definition's own (DefinitionTimeout).
	ExecutionTimeout time.Duration
	// InPlaceMemory is the memory, in bytes, of the function that runs the
	// InPlace step, which the in-place limit must fit (ErrInPlaceLimitTooLarge);
	// 0: this machine's (a local run).
	InPlaceMemory int64
}

func (e Env) staging(id string) Staging { return Staging{Root: e.Staging, MigrationID: id} }

// Progress counts the long steps of a local run: the Map's export and
// transform shards (each count shared by the shards running at once), the
// import and the verify.
type Progress struct {
	Export, Transform, Import, Verify *shard.Progress
}

// Migration is the state payload every step after Check takes and returns:
// a few hundred bytes, whatever the shard count.
type Migration struct {
	MigrationID    string         `json:"migration_id"`
	Pointer        string         `json:"pointer"`
	PointerETag    string         `json:"pointer_etag"`
	Source         string         `json:"source"`
	Target         string         `json:"target"`
	From           format.Version `json:"from"`
	To             format.Version `json:"to"`
	NeedsMigration bool           `json:"needs_migration"`
	DryRun         bool           `json:"dry_run"`
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
	// (drift.ReplicaURL), which the servers' supervisors find from the
	// pointer and the lock's holder and serve reads from while the source
	// is fenced. Replica is the one Freeze made ("" when none: skipped, or
	// not asked for); Abort and Flip remove it.
	ReadReplica bool   `json:"read_replica,omitempty"`
	Replica     string `json:"replica,omitempty"`
}

// CheckInput starts a migration: the pointer and the format to reach.
type CheckInput struct {
	Pointer string `json:"pointer"`
	// TargetVersion 0 (left out): the expected-version parameter's value.
	TargetVersion uint64 `json:"target_version,omitempty"`
	MigrationID   string `json:"migration_id,omitempty"`
	Shards        int    `json:"shards,omitempty"`
	DryRun        bool   `json:"dry_run,omitempty"`
	UnknownTags   string `json:"unknown_tags,omitempty"`
	// PostponeFlip stops at the gate after Verify (the gated cut-over).
	PostponeFlip bool `json:"postpone_flip,omitempty"`
	// Trigger says who started the run, for its record: "cli:<user>",
	// "release:<event id>"; none is TriggerConsole.
	Trigger string `json:"trigger,omitempty"`
	// InPlace and InPlaceMaxBytes choose Strategy A (MigrateInPlace).
	InPlace         bool  `json:"in_place,omitempty"`
	InPlaceMaxBytes int64 `json:"in_place_max_bytes,omitempty"`
	// InPlaceAuto lets Check choose: Strategy A when the catalog's
	// transformed keys and values fit InPlaceMaxBytes (0: the default
	// limit), else Strategy B (ChooseInPlace).
	InPlaceAuto bool `json:"in_place_auto,omitempty"`
	// Rebuild moves the catalog into a new one in the same format (a
	// compaction, a relocation, another SlateDB release), with every step
	// and guard of a migration. TargetVersion may be left out; if given it
	// must be the catalog's format.
	Rebuild bool `json:"rebuild,omitempty"`
	// TargetPrefix is the directory the new catalog is made in,
	// <target_prefix>/v<N>-<id>, in any bucket; "" puts it beside the
	// source.
	TargetPrefix string `json:"target_prefix,omitempty"`
	// FreezeGrace is Migration.FreezeGrace in seconds: nil (left out) is
	// DefaultFreezeGrace, 0 fences as soon as Freeze runs.
	FreezeGrace *float64 `json:"freeze_grace,omitempty"`
	// ReadReplica: nil (left out) or true makes Freeze copy the frozen
	// source into a read replica the servers' supervisors serve reads from
	// until the flip or the abort (Migration.ReadReplica); false makes none.
	ReadReplica *bool `json:"read_replica,omitempty"`
}

// DefaultFreezeGrace is the wait between taking the lock and fencing the
// source when the input names none: a supervisor polling the lock every 1-2
// s sees it and restarts RockLake as a reader (its writer's drain included)
// within it.
const DefaultFreezeGrace = 5 * time.Second

// MaxFreezeGrace bounds the grace: Freeze waits it out inside its Lambda,
// whose 900 s timeout must still hold the fence, the checkpoint and the
// shard plan (whose byte scan alone may take 2 minutes).
const MaxFreezeGrace = 5 * time.Minute

// ErrBadFreezeGrace: the input's freeze_grace is negative or longer than
// MaxFreezeGrace; Check refuses before anything is touched.
var ErrBadFreezeGrace = errname.New("workflow", NameBadFreezeGrace, "")

// freezeGrace is in's grace in seconds, checked.
func freezeGrace(in CheckInput) (float64, error) {
	if in.FreezeGrace == nil {
		return DefaultFreezeGrace.Seconds(), nil
	}
	g := *in.FreezeGrace
	if g < 0 || g > MaxFreezeGrace.Seconds() {
		return 0, fmt.Errorf("%w: freeze_grace %v s: want 0 to %v s", ErrBadFreezeGrace, g, MaxFreezeGrace.Seconds())
	}
	return g, nil
}

// awaitGrace waits until the lock's fence_at (m's grace after the lock was
// written), before a step fences the source; a retried step whose grace is
// over does not wait again.
func awaitGrace(ctx context.Context, m Migration) error {
	if m.DryRun || m.FreezeGrace <= 0 {
		return nil
	}
	wait := time.Duration(m.FreezeGrace * float64(time.Second))
	switch {
	case !m.FenceAt.IsZero():
		wait = time.Until(m.FenceAt)
	case !m.StartedAt.IsZero():
		wait -= time.Since(m.StartedAt)
	}
	if wait <= 0 {
		return nil
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("workflow: freeze grace: %w", context.Cause(ctx))
	}
}

// Check resolves the pointer, runs the startup check on the catalog it names
// and decides whether a migration is needed; before a migration it runs
// every preflight check (Plan runs the same ones), proves staging takes
// writes, takes the pointer's lock and starts the run's record. It touches
// neither the source nor the pointer. A run it refuses is recorded as
// failed, one with nothing to do as such.
func Check(ctx context.Context, env Env, in CheckInput) (Migration, error) {
	start := time.Now()
	id := in.MigrationID
	if id == "" {
		id = NewMigrationID()
	}
	m, _, err := preflight(ctx, env, in, id, start, false)
	if err != nil || !m.NeedsMigration {
		recordRefusal(ctx, env, in, m, start, err)
		if err != nil {
			return Migration{}, err
		}
		return m, nil
	}
	if m, err = begin(ctx, env, m, start); err != nil {
		recordRefusal(ctx, env, in, m, start, err)
		return Migration{}, err
	}
	return m, nil
}

// begin does what Check writes once the preflight passed: the staging
// probe, the lock and the record.
func begin(ctx context.Context, env Env, m Migration, start time.Time) (Migration, error) {
	// Staging must take writes before the source is touched: Freeze's
	// checkpoint would otherwise be left behind by a run that cannot
	// write its plan.
	if err := probeStaging(ctx, env, m); err != nil {
		return m, err
	}
	// One migration at a time, decided before anything is touched.
	held, err := acquireLock(ctx, env, m, start)
	if err != nil {
		return m, err
	}
	m.StartedAt, m.FenceAt = held.AcquiredAt, held.FenceAt
	claimed := !m.DryRun && !m.InPlace
	if claimed {
		// The new catalog is this pointer's before anything is written
		// there (Import writes it): the claim is what the drift check and
		// cleanup accept as proof. Check writes it because it holds the
		// pointer's rights, which the shard Lambdas do not.
		if _, err := claim.Create(ctx, env.Store, claim.Claim{Pointer: m.Pointer, Catalog: m.Target, Kind: claim.KindTarget, Source: m.Source,
			MigrationID: m.MigrationID, Created: time.Now(), CreatedBy: env.CreatedBy}); err != nil {
			err = fmt.Errorf("workflow: claim the target %s: %w", m.Target, err)
			if rerr := releaseLock(ctx, env, m); rerr != nil {
				err = fmt.Errorf("%w; freeing the lock failed too: %w", err, rerr)
			}
			return m, err
		}
	}
	if err := startRecord(ctx, env, m, time.Since(start).Seconds()); err != nil {
		if claimed {
			if cerr := claim.Delete(ctx, env.Store, m.Pointer, m.MigrationID); cerr != nil {
				err = fmt.Errorf("%w; withdrawing the target's claim failed too: %w", err, cerr)
			}
		}
		if rerr := releaseLock(ctx, env, m); rerr != nil {
			err = fmt.Errorf("%w; freeing the lock failed too: %w", err, rerr)
		}
		return m, err
	}
	return m, nil
}

// ErrStagingUnusable: staging does not take writes (a typo in its URL, a
// missing bucket, no permission); Check refuses before anything is touched.
var ErrStagingUnusable = errname.New("workflow", NameStagingUnusable, "")

// probeStaging writes and deletes an object in the migration's staging.
func probeStaging(ctx context.Context, env Env, m Migration) error {
	if env.Staging == "" {
		return fmt.Errorf("%w: no staging location configured", ErrStagingUnusable)
	}
	url := env.staging(m.MigrationID).StepURL("probe")
	if _, err := env.Store.Put(ctx, url, []byte(m.MigrationID)); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStagingUnusable, env.Staging, err)
	}
	if err := env.Store.Delete(ctx, url); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrStagingUnusable, env.Staging, err)
	}
	return nil
}

// NewMigrationID makes a migration id: the time and randomness, sortable.
func NewMigrationID() string { return newRunID("m-") }

// newRunID makes a run id with prefix: the time and randomness, sortable.
func newRunID(prefix string) string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return prefix + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// targetURL puts the new catalog beside the source: .../prod → .../v2-<id>
// (drift.TargetURL, so that the drift check knows targets when it sees one).
func targetURL(source string, to format.Version, id string) (string, error) {
	t, err := drift.TargetURL(source, to, id)
	switch {
	case errors.Is(err, drift.ErrAtRoot):
		return "", fmt.Errorf("%w: %s is at the root of its bucket or file system, so there is no place beside it for the new catalog; move the catalog under a prefix (for example s3://bucket/catalogs/prod)", ErrSourceAtRoot, source)
	case err != nil:
		return "", fmt.Errorf("workflow: catalog URL %s: %w", source, err)
	}
	return t, nil
}

// newTarget is where migration id makes its new catalog: in dir, when the
// input names one (another prefix or bucket), as <dir>/<v>-<id>, the name
// drift.TargetMigration knows; else beside the source (targetURL).
func newTarget(source, dir string, to format.Version, id string) (string, error) {
	if dir == "" {
		return targetURL(source, to, id)
	}
	if !strings.HasPrefix(dir, "s3://") && !strings.HasPrefix(dir, "file://") {
		return "", fmt.Errorf("%w: target prefix %q: want an s3:// or file:// URL", ErrBadInput, dir)
	}
	if _, err := blob.Parse(dir); err != nil {
		return "", fmt.Errorf("%w: target prefix %q: %w", ErrBadInput, dir, err)
	}
	return strings.TrimSuffix(dir, "/") + "/" + to.String() + "-" + id, nil
}

// ErrBadInput: the input asks for things that exclude each other (a
// rebuild to another format, in place into another location) or names a
// location that is not one; Check refuses before anything is touched.
var ErrBadInput = errname.New("workflow", NameBadInput, "")

// ErrSourceAtRoot: the catalog is at a bucket root (or "/"), with no place
// beside it for the new catalog; Check refuses before anything is touched.
var ErrSourceAtRoot = errname.New("workflow", NameSourceAtRoot, "")

// Freeze opens the source as its SlateDB writer, which fences the running
// RockLake writer, records writer-epoch and next_snapshot_id, takes a
// checkpoint through that writer and writes the shard plan to staging.
func Freeze(ctx context.Context, env Env, m Migration) (Migration, error) {
	if err := confirmLock(ctx, env, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	if m.DryRun {
		return freezeDryRun(ctx, env, m)
	}
	// The servers' supervisors switch to reader mode before the fence.
	if err := awaitGrace(ctx, m); err != nil {
		return m, err
	}
	// Passive: fencing and the checkpoint are all Freeze may change in the
	// source; no compaction or garbage collection of RockLake's catalog.
	so := env.SlateDB
	so.Passive = true
	w, err := catalog.OpenWriter(ctx, m.Source, catalog.Options{Expect: m.From, Store: so})
	if err != nil {
		return m, fmt.Errorf("workflow: freeze %s: %w", m.Source, err)
	}
	defer w.Close()
	epoch, nextSnap, err := w.Catalog.Marks(ctx)
	if err != nil {
		return m, err
	}
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: 7 * 24 * time.Hour, Name: drift.MigrationCheckpointName(m.MigrationID)})
	if err != nil {
		return m, err
	}
	// Reads fail from the fence until the servers read the replica: it is
	// made first.
	m.Replica = makeReplica(ctx, env, m, cp.ID)
	ranges, balance, err := planShards(ctx, w.Catalog, blockSource{m.Source, cp.ID, so}, m.Shards, byteScanBudget)
	if err != nil {
		return m, err
	}
	if err := w.CloseContext(ctx); err != nil {
		return m, fmt.Errorf("workflow: freeze %s: close: %w", m.Source, err)
	}
	m.Checkpoint = cp.ID
	return m, writePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
}

// Bounds of the read replica's copy (server side, about the catalog's
// bytes): at most replicaBudget, and a third of what Freeze has left; with
// less than minReplicaBudget there, Freeze makes none.
const (
	replicaBudget    = 2 * time.Minute
	minReplicaBudget = 10 * time.Second
)

// replicaLinger is how long Abort and Flip leave the replica after freeing
// the lock, in a run with a freeze grace (one that servers' supervisors
// follow): they (polling every 1.5 s) move off it first.
const replicaLinger = 5 * time.Second

// makeReplica copies checkpoint cp of the frozen source into the
// migration's replica (drift.ReplicaURL, a name the servers' supervisors
// derive from the pointer and the lock's holder: Freeze's role writes
// neither the lock nor deletes anything), for them to serve reads from
// until the flip or the abort; its manifest, copied last, says it is
// whole. It is an optional help: when it cannot be made in its budget, or
// fails, the run goes on without it (reads then fail until the flip), the
// reason logged; what a failed copy left, never a database, Abort or Flip
// removes. A retried Freeze finds the earlier attempt's copy (of the same
// frozen state) and keeps it. It returns the replica's URL, "" when none.
func makeReplica(ctx context.Context, env Env, m Migration, cp string) string {
	if !m.ReadReplica {
		return ""
	}
	skip := func(why string, err error) string {
		slog.WarnContext(ctx, "workflow: freeze: no read replica: "+why, "migration_id", m.MigrationID, "source", m.Source, "error", err)
		return ""
	}
	url, err := drift.ReplicaURL(m.Source, m.MigrationID)
	if err != nil {
		return skip("no place beside the source", err)
	}
	budget := replicaBudget
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/3)
	}
	if budget < minReplicaBudget {
		return skip(fmt.Sprintf("%s left for the copy, under %s", budget.Round(time.Second), minReplicaBudget), nil)
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, budget)
	copied, err := slatedb.CopyCheckpoint(cctx, m.Source, cp, url, env.SlateDB)
	cancel()
	if errors.Is(err, slatedb.ErrInvalid) && replicaWhole(ctx, env, url) {
		return url // an earlier attempt's
	}
	if err != nil {
		return skip(fmt.Sprintf("the copy to %s failed within its %s budget", url, budget.Round(time.Second)), err)
	}
	slog.InfoContext(ctx, "workflow: freeze: read replica made", "migration_id", m.MigrationID, "replica", url,
		"objects", copied.Objects, "bytes", copied.Bytes, "seconds", time.Since(start).Seconds())
	return url
}

// replicaWhole reports whether the replica at url has its manifest.
func replicaWhole(ctx context.Context, env Env, url string) bool {
	objs, err := env.Store.List(ctx, url+"/manifest/")
	return err == nil && len(objs) > 0
}

// dropReplica removes migration m's read replica, if any, once the lock
// is free: after replicaLinger (the supervisors leave it), fencing a
// server still on it (deleteTarget), within half of what the step has
// left. The name is the migration's own (drift.ReplicaURL), so a Freeze
// that died before returning is covered.
func dropReplica(ctx context.Context, env Env, m Migration) error {
	if m.Source == "" || m.InPlace || m.DryRun {
		return nil
	}
	url, err := drift.ReplicaURL(m.Source, m.MigrationID)
	if err != nil {
		return nil // Freeze made none: there is no place for it
	}
	left, err := env.Store.List(ctx, url+"/")
	if err != nil && !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, blob.ErrNoSuchBucket) {
		return fmt.Errorf("workflow: look for the read replica %s: %w", url, err)
	}
	if len(left) == 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		// Half of what the step has left: its own record comes after.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
		defer cancel()
	}
	if m.FreezeGrace > 0 {
		// A run with no grace has no supervisor to wait for.
		if err := sleepCtx(ctx, replicaLinger); err != nil {
			return fmt.Errorf("workflow: remove the read replica %s: %w", url, err)
		}
	}
	if _, err := deleteTarget(ctx, env, url); err != nil {
		return fmt.Errorf("workflow: remove the read replica: %w", err)
	}
	return nil
}

// freezeDryRun is a dry run's Freeze: it fences nothing and writes nothing
// to the source, not even a checkpoint. It reads the source as it is (the
// export steps then read its latest state, WAL included, each once) and
// says in the migration what a real run would fence.
func freezeDryRun(ctx context.Context, env Env, m Migration) (Migration, error) {
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.From, Store: env.SlateDB})
	if err != nil {
		return m, fmt.Errorf("workflow: freeze (dry run) %s: %w", m.Source, err)
	}
	defer c.Close()
	epoch, nextSnap, err := c.Marks(ctx)
	if err != nil {
		return m, err
	}
	ranges, balance, err := planShards(ctx, c, blockSource{url: m.Source, opts: env.SlateDB}, m.Shards, byteScanBudget)
	if err != nil {
		return m, err
	}
	m.Checkpoint = ""
	m.WouldFence = fmt.Sprintf("a real run would fence RockLake's writer of %s (writer-epoch %d, next_snapshot_id %d) and checkpoint it", m.Source, epoch, nextSnap)
	if ep, err := c.GetRaw(ctx, format.SystemKey(format.SystemEndpoint)); err == nil && len(ep) > 0 {
		m.WouldFence += fmt.Sprintf("; its writer published endpoint %q", ep)
	}
	return m, writePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
}

// byteScanBudget bounds Freeze's byte-balancing scan (about 34 million keys
// at the README's 286 000 keys/s on S3, one part at a time), and never more
// than half the time the step has left: the source is frozen meanwhile, and
// a Lambda has 15 minutes. Past it, the shards are cut by the counters'
// estimate.
const byteScanBudget = 2 * time.Minute

// errScanPastBudget: the byte scan's rate so far, over the counters'
// estimate of the keys, says it would not end within its budget.
var errScanPastBudget = errors.New("the byte scan would run past its budget")

// blockSource is where planShards reads SST block indexes: the catalog's
// URL, the checkpoint its ranges are exported from ("": the latest state,
// a dry run's) and the engine's options.
type blockSource struct {
	url, checkpoint string
	opts            slatedb.Options
}

// planShards cuts n ranges balanced by bytes: from the SSTs' block indexes
// of src (a read of each SST's index, whatever the row count), else from a
// scan of c within budget, else by the counters' estimate; balance says
// which and why. A scan whose rate says early that it would not end in
// time is stopped then (watchScan), not at the end of the budget.
func planShards(ctx context.Context, c *catalog.Catalog, src blockSource, n int, budget time.Duration) (ranges []shard.Range, balance string, err error) {
	ranges, err = shard.PlanByBlocks(ctx, src.url, src.checkpoint, src.opts, n)
	if err == nil {
		return ranges, "blocks", nil
	}
	if ctx.Err() != nil {
		return nil, "", err
	}
	// Any failure of the block profile (unusable, or the engine could not
	// read it) leaves the scan, which needs nothing the profile does.
	why := "blocks unusable: " + strings.TrimPrefix(err.Error(), shard.ErrBlocksUnusable.Error()+": ")
	ranges, balance, err = planByScan(ctx, c, n, budget)
	if err != nil {
		return nil, "", err
	}
	if balance == "bytes" {
		return ranges, "bytes (" + why + ")", nil
	}
	return ranges, strings.TrimSuffix(balance, ")") + "; " + why + ")", nil
}

// planByScan cuts n ranges balanced by bytes, from a scan of c within
// budget, else by the counters' estimate; balance says which.
func planByScan(ctx context.Context, c *catalog.Catalog, n int, budget time.Duration) (ranges []shard.Range, balance string, err error) {
	if dl, ok := ctx.Deadline(); ok {
		budget = min(budget, time.Until(dl)/2)
	}
	tctx, cancelT := context.WithTimeout(ctx, budget)
	defer cancelT()
	sctx, cancel := context.WithCancelCause(tctx)
	defer cancel(nil)
	var prog shard.Progress
	start := time.Now()
	if est, err := shard.EstimateKeys(ctx, c); err == nil && est > 0 {
		go watchScan(sctx, cancel, &prog, est, budget, start)
	}
	ranges, err = shard.PlanByBytes(sctx, c, n, &prog)
	if err == nil {
		return ranges, "bytes", nil
	}
	if ctx.Err() != nil || sctx.Err() == nil {
		return nil, "", err
	}
	why := fmt.Sprintf("the byte scan ran past its %s budget", budget.Round(time.Second))
	if errors.Is(context.Cause(sctx), errScanPastBudget) {
		why = fmt.Sprintf("the byte scan, at %d keys in %s, would have run past its %s budget", prog.Records.Load(), time.Since(start).Round(time.Second), budget.Round(time.Second))
	}
	ranges, err = shard.Plan(ctx, c, n)
	return ranges, "key ranges estimated from the counters (" + why + ")", err
}

// Projection of the byte scan: after projectAfter of its budget, every
// projectEvery, the keys still to scan (from the counters' estimate, which
// can be off either way: hence the margin) at the rate so far must fit in
// what is left of the budget.
const (
	projectAfter  = 0.05
	projectEvery  = 250 * time.Millisecond
	projectMargin = 1.25
)

// watchScan stops the scan counted by prog (cancel, errScanPastBudget) as
// soon as its rate says it would not end within budget: the source stays
// frozen while Freeze scans, so an early fallback is time saved.
func watchScan(ctx context.Context, cancel context.CancelCauseFunc, prog *shard.Progress, estimate uint64, budget time.Duration, start time.Time) {
	t := time.NewTicker(projectEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			elapsed := now.Sub(start)
			done := prog.Records.Load()
			if elapsed < time.Duration(projectAfter*float64(budget)) || done == 0 || done >= estimate {
				continue
			}
			rate := float64(done) / elapsed.Seconds()
			left := time.Duration(float64(estimate-done) / rate * float64(time.Second))
			if float64(elapsed+left) > projectMargin*float64(budget) {
				cancel(errScanPastBudget)
				return
			}
		}
	}
}

// writePlan records the source's state and the shard plan in staging.
func writePlan(ctx context.Context, env Env, m Migration, epoch, nextSnap uint64, ranges []shard.Range, balance string) error {
	state, err := engineState(ctx, env, m.Source)
	if err != nil {
		return err
	}
	plan := Plan{
		MigrationID: m.MigrationID, Pointer: m.Pointer, PointerETag: m.PointerETag,
		Source: m.Source, Target: m.Target, From: m.From, To: m.To, Checkpoint: m.Checkpoint,
		WriterEpoch: epoch, NextSnapshotID: nextSnap, EngineState: state, UnknownTags: m.UnknownTags, Ranges: ranges, Balance: balance, Replica: m.Replica,
	}
	return putJSON(ctx, env.Store, env.staging(m.MigrationID).PlanURL(), plan)
}

// engineState names the newest SlateDB manifest and WAL objects of the
// catalog at url (inplace.EngineState). Any SlateDB writer that commits to
// it after Freeze opens first, and opening writes a manifest (it fences
// Freeze's writer), so a write that moves none of RockLake's own marks
// still changes this.
func engineState(ctx context.Context, env Env, url string) (string, error) {
	s, err := inplace.EngineState(ctx, env.Store, url)
	if err != nil {
		return "", fmt.Errorf("workflow: %w", err)
	}
	return s, nil
}

func readPlan(ctx context.Context, env Env, id string) (Plan, error) {
	var p Plan
	err := getJSON(ctx, env.Store, env.staging(id).PlanURL(), &p)
	return p, err
}

// ShardInput names one shard of a migration (the Map state's item).
type ShardInput struct {
	MigrationID string `json:"migration_id"`
	Index       int    `json:"index"`
}

// ShardOutput is what a shard step did; the digest stays in staging.
type ShardOutput struct {
	Index   int    `json:"index"`
	Records uint64 `json:"records"`
}

func (o ShardOutput) stepRows() uint64 { return o.Records }

type shardResult struct {
	Records uint64                `json:"records"`
	Digest  ndjson.Digest         `json:"digest"`
	Carried map[format.Tag]uint64 `json:"carried,omitempty"`
	Dropped map[format.Tag]uint64 `json:"dropped,omitempty"`
}

// ExportShard exports the plan's range Index through a reader pinned to the
// Freeze checkpoint.
func ExportShard(ctx context.Context, env Env, in ShardInput) (ShardOutput, error) {
	return exportShard(ctx, env, in, false)
}

// ExportTransformShard is ExportShard then TransformShard in one read of
// the source, which is what the definition's Map runs: the same two shard
// files (the source-format one is the audit copy) and the same results in
// staging, with the transform on a second core (shard.ExportTransformShard).
func ExportTransformShard(ctx context.Context, env Env, in ShardInput) (ShardOutput, error) {
	return exportShard(ctx, env, in, true)
}

func exportShard(ctx context.Context, env Env, in ShardInput, transform bool) (ShardOutput, error) {
	p, err := readPlan(ctx, env, in.MigrationID)
	if err != nil {
		return ShardOutput{}, err
	}
	if in.Index < 0 || in.Index >= len(p.Ranges) {
		return ShardOutput{}, fmt.Errorf("workflow: export: shard %d of %d", in.Index, len(p.Ranges))
	}
	if err := confirmLock(ctx, env, p.Pointer, p.MigrationID); err != nil {
		return ShardOutput{}, err
	}
	var t shard.Transformed
	if transform {
		if t, err = transformOf(env, p, in.Index); err != nil {
			return ShardOutput{}, err
		}
	}
	view := catalog.Options{Expect: p.From, Checkpoint: p.Checkpoint, Store: env.SlateDB}
	if p.Checkpoint == "" {
		// A dry run: the latest state, WAL included, as one fixed view.
		view.Store.PollInterval = shard.FixedView
	}
	c, err := catalog.Open(ctx, p.Source, view)
	if err != nil {
		return ShardOutput{}, err
	}
	defer c.Close()
	n, r := len(p.Ranges), p.Ranges[in.Index]
	h := ndjson.Header{CatalogFormat: p.From, ShardIndex: in.Index, ShardCount: n, KeyStart: r.Start, KeyEnd: r.End,
		CheckpointID: p.Checkpoint, Source: p.Source, CreatedBy: env.CreatedBy}
	st := env.staging(in.MigrationID)
	out := st.ShardURL(p.From, in.Index, n)
	var res shard.ShardResult
	var stats migration.Stats
	if transform {
		res, stats, err = shard.ExportTransformShard(ctx, env.Store, c, h, out, t, env.Progress.Export)
	} else {
		res, err = shard.ExportShard(ctx, env.Store, c, h, out, env.Progress.Export)
	}
	if err != nil {
		return ShardOutput{}, err
	}
	if err := putJSON(ctx, env.Store, st.ResultURL("export", in.Index), shardResult{Records: res.Records, Digest: res.Digest}); err != nil {
		return ShardOutput{}, err
	}
	if transform {
		if err := putTransformResult(ctx, env, in, stats); err != nil {
			return ShardOutput{}, err
		}
	}
	return ShardOutput{Index: in.Index, Records: res.Records}, nil
}

// transformOf is how shard i of plan p is transformed, with the CLI's
// display counting it.
func transformOf(env Env, p Plan, i int) (shard.Transformed, error) {
	policy, err := migration.ParseUnknownTags(p.UnknownTags)
	if err != nil {
		return shard.Transformed{}, err
	}
	path, err := migration.Path(p.From, p.To)
	if err != nil {
		return shard.Transformed{}, fmt.Errorf("workflow: transform: %w", err)
	}
	n := len(p.Ranges)
	return shard.Transformed{
		Out: env.staging(p.MigrationID).ImportURL(p.From, p.To, i, n), To: p.To, Path: path,
		Options: migration.Options{UnknownTags: policy}, CreatedBy: env.CreatedBy, Progress: env.Progress.Transform,
	}, nil
}

func putTransformResult(ctx context.Context, env Env, in ShardInput, stats migration.Stats) error {
	res := shardResult{Records: stats.RecordsOut, Digest: stats.Digest, Carried: stats.Carried, Dropped: stats.Dropped}
	return putJSON(ctx, env.Store, env.staging(in.MigrationID).ResultURL("transform", in.Index), res)
}

// TransformShard transforms shard Index from the source format to the
// target's, reading the shard ExportShard wrote.
func TransformShard(ctx context.Context, env Env, in ShardInput) (ShardOutput, error) {
	p, err := readPlan(ctx, env, in.MigrationID)
	if err != nil {
		return ShardOutput{}, err
	}
	if in.Index < 0 || in.Index >= len(p.Ranges) {
		return ShardOutput{}, fmt.Errorf("workflow: transform: shard %d of %d", in.Index, len(p.Ranges))
	}
	if err := confirmLock(ctx, env, p.Pointer, p.MigrationID); err != nil {
		return ShardOutput{}, err
	}
	t, err := transformOf(env, p, in.Index)
	if err != nil {
		return ShardOutput{}, err
	}
	if t.Progress != nil {
		t.Options.Read = &t.Progress.Records
	}
	in1 := env.staging(in.MigrationID).ShardURL(p.From, in.Index, len(p.Ranges))
	stats, err := migration.TransformFile(ctx, env.Store, in1, t.Out, p.To, env.CreatedBy, t.Options)
	if err != nil {
		return ShardOutput{}, err
	}
	if err := putTransformResult(ctx, env, in, stats); err != nil {
		return ShardOutput{}, err
	}
	return ShardOutput{Index: in.Index, Records: stats.RecordsOut}, nil
}

// ImportOutput says whether Import has every shard in; the state machine
// calls Import again until Done.
type ImportOutput struct {
	Migration
	Done        bool `json:"done"`
	ShardsDone  int  `json:"shards_done"`
	ShardsTotal int  `json:"shards_total"`
	// Rows is how many rows this call wrote (the dashboard's rows/s).
	Rows uint64 `json:"rows"`
}

func (o ImportOutput) stepRows() uint64 { return o.Rows }

// Import is the one writer of the new catalog. It imports shards until all
// are in or its deadline nears, keeping its progress in the target itself
// and its last state in staging.
func Import(ctx context.Context, env Env, m Migration) (ImportOutput, error) {
	// Rows come from the shard counter, which the CLI's display shares
	// when it gives one.
	prog := env.Progress.Import
	if prog == nil {
		prog = new(shard.Progress)
	}
	before := prog.Records.Load() // a shared counter spans the Import loop's calls
	opts := shard.ImportOptions{Format: m.To, Store: env.SlateDB, NoFinalize: true, Progress: prog}
	if dl, ok := ctx.Deadline(); ok {
		margin := env.ImportMargin
		if margin == 0 {
			margin = time.Minute
		}
		opts.StopAfter = dl.Add(-margin)
	}
	st := env.staging(m.MigrationID)
	if err := confirmLock(ctx, env, m.Pointer, m.MigrationID); err != nil {
		return ImportOutput{Migration: m}, err
	}
	if err := claimTarget(ctx, env, m); err != nil {
		return ImportOutput{Migration: m}, err
	}
	res, err := shard.Import(ctx, env.Store, st.ImportDir(m.From, m.To), m.Target, opts)
	if err != nil {
		return ImportOutput{Migration: m}, err
	}
	out := ImportOutput{Migration: m, Done: res.ShardsDone == res.ShardsTotal, ShardsDone: res.ShardsDone, ShardsTotal: res.ShardsTotal, Rows: prog.Records.Load() - before}
	if err := putJSON(ctx, env.Store, st.StepURL("import"), out); err != nil {
		return out, err
	}
	return out, nil
}

// claimTarget records in staging that this migration creates the target,
// before anything is written there, so that Abort deletes only a catalog this
// migration made. A target location that already holds objects when no claim
// exists is someone else's: TargetNotEmpty, and Abort leaves it alone (and
// withdraws the claim Check made beside the pointer).
func claimTarget(ctx context.Context, env Env, m Migration) error {
	owned, err := ownsTarget(ctx, env, m)
	if err != nil {
		return fmt.Errorf("workflow: read target claim: %w", err)
	}
	if owned {
		return nil
	}
	if err := targetFree(ctx, env, m); err != nil {
		return err
	}
	return putJSON(ctx, env.Store, env.staging(m.MigrationID).StepURL("target-claim"), map[string]string{"target": m.Target, "migration_id": m.MigrationID})
}

// ownsTarget reports whether this migration claimed its target.
func ownsTarget(ctx context.Context, env Env, m Migration) (bool, error) {
	_, _, err := env.Store.Get(ctx, env.staging(m.MigrationID).StepURL("target-claim"))
	if errors.Is(err, blob.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Finalize writes the counter and system keys and the format version in one
// batch: only now does the new catalog open.
func Finalize(ctx context.Context, env Env, m Migration) (Migration, error) {
	if err := confirmLock(ctx, env, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	return m, shard.Finalize(ctx, m.Target, m.To, env.SlateDB)
}

// VerifyOutput is what Verify found.
type VerifyOutput struct {
	Migration
	Counts map[string]uint64 `json:"counts"`
	Digest string            `json:"digest"`
	// Carried and Dropped count the records of unknown tags the transforms
	// carried or dropped, by tag ("tag 0xNN"): a drop is never silent.
	Carried map[string]uint64 `json:"carried_unknown,omitempty"`
	Dropped map[string]uint64 `json:"dropped_unknown,omitempty"`
}

// resultReads is how many of the shards' result objects a step reads at
// once: each is a small GET, so the round trips, not the bytes, are the
// time.
const resultReads = 16

// Verify rescans the new catalog: its per-table counts and digest must equal
// what the transforms wrote, and its version the target.
func Verify(ctx context.Context, env Env, m Migration) (VerifyOutput, error) {
	if err := confirmLock(ctx, env, m.Pointer, m.MigrationID); err != nil {
		return VerifyOutput{Migration: m}, err
	}
	p, err := readPlan(ctx, env, m.MigrationID)
	if err != nil {
		return VerifyOutput{Migration: m}, err
	}
	st := env.staging(m.MigrationID)
	c, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: m.To, Store: env.SlateDB})
	if err != nil {
		return VerifyOutput{Migration: m}, err
	}
	defer c.Close()
	// The transforms' results (one small object per shard, each a round
	// trip to S3) are read while the catalog is scanned.
	results := make([]shardResult, len(p.Ranges))
	var got, want ndjson.Digest
	err = shard.ForEach(ctx, 2, 2, func(ctx context.Context, part int) error {
		if part == 1 {
			var err error
			got, err = shard.DigestCatalog(ctx, c, env.Progress.Verify)
			return err
		}
		err := shard.ForEach(ctx, len(results), resultReads, func(ctx context.Context, i int) error {
			return getJSON(ctx, env.Store, st.ResultURL("transform", i), &results[i])
		})
		if err != nil {
			return err
		}
		for _, r := range results {
			want.Merge(r.Digest)
		}
		var records uint64
		for _, n := range want.Counts() {
			records += n
		}
		env.Progress.Verify.SetRecordsTotal(records)
		return nil
	})
	if err != nil {
		return VerifyOutput{Migration: m}, err
	}
	carried, dropped := map[string]uint64{}, map[string]uint64{}
	for _, r := range results {
		for t, n := range r.Carried {
			carried[t.String()] += n
		}
		for t, n := range r.Dropped {
			dropped[t.String()] += n
		}
	}
	cmp := shard.Compare(got, want)
	out := VerifyOutput{Migration: m, Counts: got.Counts(), Digest: got.Sum()}
	if len(carried) > 0 {
		out.Carried = carried
	}
	if len(dropped) > 0 {
		out.Dropped = dropped
	}
	if err := putJSON(ctx, env.Store, st.StepURL("verify"), cmp); err != nil {
		return out, err
	}
	if !cmp.Match {
		return out, fmt.Errorf("%w: %s: %v", shard.ErrMismatch, m.Target, cmp.Diff)
	}
	return out, nil
}

// FlipOutput reports the new pointer version.
type FlipOutput struct {
	Migration
	PointerVersionID string `json:"pointer_version_id"`
	// CleanupError: the source checkpoint could not be deleted. The
	// migration has succeeded all the same (the drift check reports the
	// leftover), so it is not an error of the step.
	CleanupError string `json:"cleanup_error,omitempty"`
	// HistoryError: the run's record could not be finished. The flip
	// stands (the pointer is the outcome, and its versions name the
	// migration); see record.go.
	HistoryError string `json:"history_error,omitempty"`
}

// Flip moves the pointer to the new catalog. Every precondition is checked
// before the decision to flip is taken, so that a Flip that refuses leaves
// a run Abort ends (and the next migration can start at once): the lock is
// still this run's, nobody moved the pointer since Check, the source took
// no write since Freeze, and the target passes its startup check right
// before the decision and the pointer's write (a target removed since
// Verify is never pointed at). A pointer moved between the check and the
// write refuses the write, and Flip withdraws its decision (withdrawFlip).
func Flip(ctx context.Context, env Env, m Migration) (FlipOutput, error) {
	start := time.Now()
	out := FlipOutput{Migration: m}
	p, err := readPlan(ctx, env, m.MigrationID)
	if err != nil {
		return out, err
	}
	decided, err := decision(ctx, env, m)
	if err != nil {
		return out, err
	}
	if decided == decisionAbort {
		return out, fmt.Errorf("%w: migration %s decided to abort first: the pointer is left as it is", ErrDecided, m.MigrationID)
	}
	cur, ref, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return out, err
	}
	// A retry of a Flip whose write landed (its answer lost) has nothing
	// left to check or write: the checkpoint it deleted moved the source's
	// engine state, and the lock may be free already.
	if decided != decisionFlip || cur.MigrationID != m.MigrationID || cur.Catalog != m.Target {
		if ref, err = flip(ctx, env, m, p, ref); err != nil {
			return out, err
		}
	}
	out.PointerVersionID = ref.VersionID
	var cleanup []string
	// The target was live: its claim keeps that beyond the pointer's
	// history and staging's lifecycle, so no cleanup ever takes it for a
	// leftover.
	if _, err := claim.Update(ctx, env.Store, m.Pointer, m.MigrationID, func(c *claim.Claim) {
		if c.Named == nil {
			c.Named = &claim.Event{By: m.MigrationID, At: time.Now().UTC(), PointerVersionID: ref.VersionID}
		}
	}); err != nil && !errors.Is(err, claim.ErrNoClaim) {
		cleanup = append(cleanup, err.Error())
	}
	if err := slatedb.DeleteCheckpoint(ctx, m.Source, p.Checkpoint, env.SlateDB); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
		cleanup = append(cleanup, err.Error())
	}
	if err := releaseLock(ctx, env, m); err != nil {
		cleanup = append(cleanup, err.Error())
	} else if err := dropReplica(ctx, env, m); err != nil {
		cleanup = append(cleanup, err.Error())
	}
	out.CleanupError = strings.Join(cleanup, "; ")
	stats, notes := collectStats(ctx, env, m)
	stats.seconds["Flip"] = time.Since(start).Seconds()
	if out.CleanupError != "" {
		notes = append(notes, "cleanup after the flip: "+out.CleanupError)
	}
	out.HistoryError = finishRecord(ctx, env, m, stats, notes, func(r *history.Record) {
		r.Outcome, r.State, r.PointerVersionID = history.Succeeded, "Flip", ref.VersionID
		r.ErrorName, r.Error = "", ""
	})
	return out, nil
}

// flip checks Flip's preconditions against the pointer as read (cur), then
// takes the decision and writes the pointer.
func flip(ctx context.Context, env Env, m Migration, p Plan, cur pointer.Ref) (pointer.Ref, error) {
	if cur.ETag != m.PointerETag {
		moved := &pointer.Error{Name: pointer.NameConflict, Op: "flip", URL: m.Pointer, ExpectedETag: m.PointerETag, CurrentETag: cur.ETag,
			Detail: fmt.Sprintf("the pointer was moved since Check read it (a rollback, an operator, another flip): expected ETag %s, found %s; nothing was written", m.PointerETag, cur.ETag)}
		return pointer.Ref{}, withdrawFlip(ctx, env, m, moved)
	}
	if err := confirmLock(ctx, env, m.Pointer, m.MigrationID); err != nil {
		return pointer.Ref{}, err
	}
	if err := sourceUnchanged(ctx, env, m, p); err != nil {
		return pointer.Ref{}, err
	}
	marks, err := targetMarks(ctx, env, m)
	if err != nil {
		return pointer.Ref{}, err
	}
	next, err := flipIntent(ctx, env, m, marks)
	if err != nil {
		return pointer.Ref{}, err
	}
	// Last, the decision: once it says flip, no Abort deletes the target.
	if err := decide(ctx, env, m, decisionFlip); err != nil {
		return pointer.Ref{}, err
	}
	ref, err := pointer.Flip(ctx, env.Store, m.Pointer, next, pointer.Ref{ETag: m.PointerETag})
	if errors.Is(err, pointer.ErrPointerConflict) {
		return ref, withdrawFlip(ctx, env, m, err)
	}
	return ref, err
}

// targetMarks runs the target's startup check, as Rollback does with the
// catalog it restores, and reads the marks the pointer records for it.
func targetMarks(ctx context.Context, env Env, m Migration) (pointer.Marks, error) {
	c, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: m.To, Store: env.SlateDB})
	if err != nil {
		return pointer.Marks{}, fmt.Errorf("workflow: flip: check %s: %w", m.Target, err)
	}
	defer c.Close()
	return catalogMarks(ctx, c)
}

// withdrawFlip takes back this migration's decision to flip when the
// pointer moved since Check (cause): its conditional write cannot land any
// more, so Abort may remove the target. The decision stays if a version of
// the pointer ever named this migration (its write landed and was rolled
// back or flipped over since): that catalog was live and may hold commits,
// and Abort keeps it. It returns cause, with what it could not do.
func withdrawFlip(ctx context.Context, env Env, m Migration, cause error) error {
	url := env.staging(m.MigrationID).DecisionURL()
	got, info, err := env.Store.Get(ctx, url)
	switch {
	case errors.Is(err, blob.ErrNotFound), err == nil && string(got) != decisionFlip:
		return cause
	case err != nil:
		return fmt.Errorf("%w; the decision to flip stays (reading it failed: %w)", cause, err)
	}
	named, err := pointerNamed(ctx, env, m)
	if err != nil {
		return fmt.Errorf("%w; the decision to flip stays: whether the pointer ever named %s cannot be told: %w", cause, m.Target, err)
	}
	if named {
		return fmt.Errorf("%w; the pointer named %s before, so the decision to flip stays and Abort keeps it", cause, m.Target)
	}
	if _, err := env.Store.PutIfMatch(ctx, url, []byte(decisionWithdrawn), info.ETag); err != nil {
		return fmt.Errorf("%w; withdrawing the decision to flip failed: %w", cause, err)
	}
	return cause
}

// pointerNamed tells whether any kept version of the pointer names
// migration m or its target. A version it cannot read counts as naming it.
func pointerNamed(ctx context.Context, env Env, m Migration) (bool, error) {
	vs, err := pointer.History(ctx, env.Store, m.Pointer)
	if err != nil {
		return false, err
	}
	for _, v := range vs {
		switch {
		case v.DeleteMarker:
		case v.Pointer == nil:
			return true, nil
		case v.Pointer.MigrationID == m.MigrationID || v.Pointer.Catalog == m.Target:
			return true, nil
		}
	}
	return false, nil
}

// sourceUnchanged refuses (ErrSourceChanged) a source that took writes
// since Freeze: RockLake's marks, and the engine's state for any other
// SlateDB writer.
func sourceUnchanged(ctx context.Context, env Env, m Migration, p Plan) error {
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.From, Store: env.SlateDB})
	if err != nil {
		return fmt.Errorf("workflow: flip: reopen source: %w", err)
	}
	epoch, nextSnap, err := c.Marks(ctx)
	c.Close()
	if err != nil {
		return err
	}
	if epoch != p.WriterEpoch || nextSnap != p.NextSnapshotID {
		return fmt.Errorf("%w: writer-epoch %d → %d, next_snapshot_id %d → %d since Freeze",
			ErrSourceChanged, p.WriterEpoch, epoch, p.NextSnapshotID, nextSnap)
	}
	state, err := engineState(ctx, env, m.Source)
	if err != nil {
		return err
	}
	if state != p.EngineState {
		return fmt.Errorf("%w: the source's SlateDB state moved since Freeze (%s → %s): another writer opened it",
			ErrSourceChanged, p.EngineState, state)
	}
	return nil
}

// flipIntent is the pointer Flip writes, fixed in staging on the first
// attempt (with the target's marks): a retried Flip (its response lost, say)
// sends the very same bytes, which pointer.Flip recognises as already
// current instead of a conflict.
func flipIntent(ctx context.Context, env Env, m Migration, marks pointer.Marks) (pointer.Pointer, error) {
	url := env.staging(m.MigrationID).StepURL("flip-intent")
	var next pointer.Pointer
	err := getJSON(ctx, env.Store, url, &next)
	if err == nil {
		return next, nil
	}
	if !errors.Is(err, blob.ErrNotFound) {
		return next, err
	}
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return next, err
	}
	next = cur.Next(m.Target, m.To, m.MigrationID)
	next.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	next.Marks = marks
	return next, putJSON(ctx, env.Store, url, next)
}

// The two decisions a migration can take, once, and what a Flip that did
// not write the pointer leaves of its own (withdrawFlip): no decision.
const (
	decisionFlip      = "flip"
	decisionAbort     = "abort"
	decisionWithdrawn = "withdrawn"
)

// ErrDecided: the other of Flip and Abort took the migration's decision
// first. After "flip", Abort keeps the target (it may be live); after
// "abort", Flip never writes the pointer (the target may be gone).
var ErrDecided = errname.New("workflow", NameDecided, "")

// decision reads the migration's decision, "" if none was taken (or a
// decision to flip was withdrawn).
func decision(ctx context.Context, env Env, m Migration) (string, error) {
	got, _, err := env.Store.Get(ctx, env.staging(m.MigrationID).DecisionURL())
	if errors.Is(err, blob.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("workflow: read the decision of %s: %w", m.MigrationID, err)
	}
	if string(got) == decisionWithdrawn {
		return "", nil
	}
	return string(got), nil
}

// decide takes the migration's decision with a conditional write that only
// one of Flip and Abort can win, even if a state timeout lets both run at
// once; a retry of the winner finds its own decision and goes on. The
// marker is never deleted (a withdrawn decision is overwritten, on its
// ETag): a delete marker would defeat If-None-Match on some S3 servers.
func decide(ctx context.Context, env Env, m Migration, want string) error {
	url := env.staging(m.MigrationID).DecisionURL()
	_, err := env.Store.PutIfAbsent(ctx, url, []byte(want))
	for range 3 {
		if err == nil {
			return nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) {
			return fmt.Errorf("workflow: decide %s: %w", want, err)
		}
		got, info, gerr := env.Store.Get(ctx, url)
		if gerr != nil {
			return fmt.Errorf("workflow: decide %s: read the decision: %w", want, gerr)
		}
		switch string(got) {
		case want:
			return nil
		case decisionWithdrawn:
			_, err = env.Store.PutIfMatch(ctx, url, []byte(want), info.ETag)
			continue
		case decisionAbort:
			return fmt.Errorf("%w: migration %s decided to abort first: the pointer is left as it is", ErrDecided, m.MigrationID)
		case decisionFlip:
			return fmt.Errorf("%w: migration %s decided to flip first: the target %s is kept, it may be live (%w)", ErrAbortAfterFlip, m.MigrationID, m.Target, ErrDecided)
		}
		return fmt.Errorf("%w: migration %s holds an unknown decision %q in %s; nothing was changed", ErrDecided, m.MigrationID, got, url)
	}
	return fmt.Errorf("workflow: decide %s: the decision of %s kept changing: %w", want, m.MigrationID, err)
}

// AbortInput is the migration and the error that stopped it (Catch output).
type AbortInput struct {
	Migration Migration      `json:"migration"`
	Error     map[string]any `json:"error,omitempty"`
}

// AbortOutput says what Abort removed.
type AbortOutput struct {
	Migration
	TargetObjects  int `json:"target_objects_deleted"`
	StagingObjects int `json:"staging_objects_deleted"`
	// HistoryError: the run's record could not be finished (the cleanup
	// stands).
	HistoryError string `json:"history_error,omitempty"`
}

// ErrAbortAfterFlip: the pointer already names the new catalog, which Abort
// must then not delete.
var ErrAbortAfterFlip = errname.New("workflow", NameAbortAfterFlip, "")

// ErrAbortUndecided: Abort could not read the pointer, and so refused to
// delete anything; it is Transient, for the state machine to retry.
var ErrAbortUndecided = errname.New("workflow", errname.Transient, "Abort undecided")

// Abort removes the new catalog, the staging objects and the checkpoint. It
// never touches the source's data or the pointer, refuses to delete a catalog
// the pointer names, and deletes the target only if this migration claimed it
// (a location someone else filled stays as it was).
func Abort(ctx context.Context, env Env, in AbortInput) (out AbortOutput, err error) {
	start := time.Now()
	out = AbortOutput{Migration: in.Migration}
	m := in.Migration
	// Fail closed: if the pointer cannot be read, the target may be the
	// live catalog (a Flip whose answer was lost), so nothing is deleted and
	// the state machine's Retry tries again.
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return out, fmt.Errorf("%w: cannot read the pointer %s, so it cannot tell whether %s is live: %w", ErrAbortUndecided, m.Pointer, m.Target, err)
	}
	if cur.Catalog == m.Target {
		// The migration flipped: it is over, and its lock with it.
		if err := releaseLock(ctx, env, m); err != nil {
			return out, err
		}
		return out, fmt.Errorf("%w: the pointer names %s", ErrAbortAfterFlip, m.Target)
	}
	if err := decide(ctx, env, m, decisionAbort); err != nil {
		if errors.Is(err, ErrAbortAfterFlip) {
			// Its Flip decided: the run is over, and its lock with it, so
			// the next migration need not wait out the lease. The target
			// stays: that Flip's write may have landed, or land yet (on
			// Check's ETag, so never over a later migration's flip).
			if lerr := releaseLock(ctx, env, m); lerr != nil {
				err = fmt.Errorf("%w; freeing the lock failed: %w", err, lerr)
			}
		}
		return out, err
	}
	// Decided: the run ends here, whatever the cleanup does. What staging
	// says of the run is read before the cleanup deletes it.
	stats, notes := collectStats(ctx, env, m)
	defer func() {
		stats.seconds["Abort"] = time.Since(start).Seconds()
		if err != nil {
			notes = append(notes, "the cleanup failed: "+err.Error())
		}
		out.HistoryError = finishRecord(ctx, env, m, stats, notes, func(r *history.Record) { abortOutcome(r, in) })
	}()
	owned, err := ownsTarget(ctx, env, m)
	if err != nil {
		return out, fmt.Errorf("workflow: abort: %w", err)
	}
	if m.Target != "" && owned {
		n, err := deleteTarget(ctx, env, m.Target)
		out.TargetObjects = n
		if err != nil {
			return out, fmt.Errorf("workflow: abort: %w", err)
		}
	}
	// The target is gone, or was never this migration's (Import did not
	// claim it: someone else's, or nothing written): the claim beside the
	// pointer must not outlive it.
	if m.Target != "" && !m.InPlace {
		if err := claim.Delete(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
			return out, fmt.Errorf("workflow: abort: %w", err)
		}
	}
	cp := m.Checkpoint
	if cp == "" { // Freeze wrote the plan but did not return
		if p, err := readPlan(ctx, env, m.MigrationID); err == nil {
			cp = p.Checkpoint
		}
	}
	if cp != "" {
		if err := slatedb.DeleteCheckpoint(ctx, m.Source, cp, env.SlateDB); err != nil && !errors.Is(err, slatedb.ErrCheckpointMissing) {
			return out, fmt.Errorf("workflow: abort: delete checkpoint: %w", err)
		}
	}
	n, err := env.Store.DeletePrefix(ctx, env.staging(m.MigrationID).Prefix())
	if err != nil {
		return out, fmt.Errorf("workflow: abort: delete staging: %w", err)
	}
	out.StagingObjects = n
	if err := releaseLock(ctx, env, m); err != nil {
		return out, err
	}
	return out, dropReplica(ctx, env, m)
}

// The target's removal waits for what an abandoned writer still had in
// flight: after a fence, fenceNotice for the old writer's manifest poller
// (every 100 ms for an import's, 1 s by default) to see it; after a
// delete, targetSettle, and the prefix must then be empty; all within
// targetSettleMax.
const (
	fenceNotice     = time.Second
	targetSettle    = 2 * time.Second
	targetSettleMax = time.Minute
)

// ErrTargetStillWritten: objects kept appearing under the target Abort
// removed, for targetSettleMax; Abort is retried (Transient).
var ErrTargetStillWritten = errname.New("workflow", errname.Transient, "target still written")

// deleteTarget removes the target this migration claimed, and reports how
// many objects it deleted. Its writer may still be at work: an Import
// abandoned mid-write (the CLI interrupted, whose writer's flushes and
// compactions go on in the engine; a Lambda that gave up at its deadline,
// frozen and thawed later). A writer opened on the target fences that one:
// SlateDB moves the writer and compactor epochs in the manifest, so the old
// writer and compactor fail at their next look at it and stop. What they
// had in flight may still land after the delete, so the prefix is deleted
// again (and fenced again if a manifest came back) until it stays empty for
// targetSettle.
func deleteTarget(ctx context.Context, env Env, target string) (int, error) {
	prefix := strings.TrimSuffix(target, "/") + "/"
	deadline := time.Now().Add(targetSettleMax)
	n := 0
	for {
		// A fence that fails (a manifest half deleted by an earlier
		// attempt) is not needed if the target settles all the same.
		fenced, fenceErr := fenceTarget(ctx, env, prefix)
		if fenced {
			if err := sleepCtx(ctx, fenceNotice); err != nil {
				return n, fmt.Errorf("delete %s: %w", target, err)
			}
		}
		k, err := env.Store.DeletePrefix(ctx, prefix)
		n += k
		if err != nil {
			return n, fmt.Errorf("delete %s: %w", target, err)
		}
		if err := sleepCtx(ctx, targetSettle); err != nil {
			return n, fmt.Errorf("delete %s: %w", target, err)
		}
		left, err := env.Store.List(ctx, prefix)
		if err != nil {
			return n, fmt.Errorf("delete %s: %w", target, err)
		}
		if len(left) == 0 {
			return n, nil
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("%w: %d objects appeared under %s after it was deleted, for %s", ErrTargetStillWritten, len(left), target, targetSettleMax)
			if fenceErr != nil {
				err = fmt.Errorf("%w (fencing its writer failed: %w)", err, fenceErr)
			}
			return n, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// fenceTarget opens and closes a writer of the catalog at prefix, if it has
// a manifest (else opening would create one): a writer with a compactor, so
// that both the old writer's and the old compactor's epochs move. Whatever
// this writer starts (a compaction) ends with its close.
func fenceTarget(ctx context.Context, env Env, prefix string) (bool, error) {
	manifests, err := env.Store.List(ctx, prefix+"manifest/")
	if err != nil || len(manifests) == 0 {
		return false, err
	}
	so := env.SlateDB
	so.Passive, so.BulkLoad = false, false
	w, err := slatedb.OpenWriter(ctx, strings.TrimSuffix(prefix, "/"), so)
	if err != nil {
		return false, fmt.Errorf("fence the writer of %s: %w", prefix, err)
	}
	return true, w.CloseContext(ctx)
}

// abortOutcome is how a run Abort ended is recorded: the error that sent it
// to Abort (the Catch's), else a dry run's cleanup, else an operator's abort.
func abortOutcome(r *history.Record, in AbortInput) {
	name, _ := in.Error["Error"].(string)
	cause, _ := in.Error["Cause"].(string)
	switch {
	case name != "":
		r.Outcome, r.ErrorName, r.Error = history.Failed, name, cause
	case in.Migration.DryRun:
		r.Outcome, r.State = history.DryRunOK, "Verify"
	default:
		r.Outcome = history.Aborted
	}
}

// RollbackInput names the pointer to roll back.
type RollbackInput struct {
	Pointer string `json:"pointer"`
	// DiscardNewerCommits rolls back even though the current catalog took
	// commits after the flip: they are not in the catalog restored.
	DiscardNewerCommits bool `json:"discard_newer_commits,omitempty"`
	// DryRun checks and reports, and writes nothing but the run's record.
	DryRun bool `json:"dry_run,omitempty"`
	// Trigger says who started the rollback, for its record.
	Trigger string `json:"trigger,omitempty"`
}

// RollbackOutput is the restored pointer, checked.
type RollbackOutput struct {
	Catalog          string         `json:"catalog"`
	FormatVersion    format.Version `json:"format_version"`
	PointerVersionID string         `json:"pointer_version_id"`
	// From is the catalog the pointer named before.
	From string `json:"from"`
	// Newer says what the catalog rolled back from took after the flip
	// ("" if nothing): with DiscardNewerCommits, what was left behind.
	Newer  string `json:"newer_commits,omitempty"`
	DryRun bool   `json:"dry_run,omitempty"`
	// RunID names the rollback's record; HistoryError says it could not
	// be written (the rollback stands).
	RunID        string `json:"run_id"`
	HistoryError string `json:"history_error,omitempty"`
	// InPlace: the rollback undid an in-place migration; Catalog is its
	// way back, the catalog as it was, copied before the migration.
	InPlace bool `json:"in_place,omitempty"`
}

// ErrRollbackLosesCommits: the catalog the pointer names took commits after
// the flip, which the catalog to be restored does not have.
var ErrRollbackLosesCommits = errname.New("workflow", NameRollbackLosesCommits, "")

// Rollback makes the previous pointer version current again. Before writing
// anything it runs the startup check on the catalog to be restored (one
// that is gone or in another format leaves the pointer as it is), and it
// compares the current catalog's writer-epoch and next_snapshot_id with
// those the pointer recorded at the flip: if RockLake committed to it since,
// it refuses, naming what would be lost, unless DiscardNewerCommits.
func Rollback(ctx context.Context, env Env, in RollbackInput) (RollbackOutput, error) {
	start := time.Now()
	out := RollbackOutput{RunID: newRunID("r-")}
	rec := history.Record{ID: out.RunID, Kind: history.KindRollback, Trigger: trigger(in.Trigger), Pointer: in.Pointer, Start: start, State: "Rollback"}
	out, err := rollback(ctx, env, in, out, &rec)
	rec.End = time.Now()
	rec.StateSeconds = map[string]float64{"Rollback": rec.End.Sub(start).Seconds()}
	switch {
	case err != nil:
		rec.Outcome, rec.ErrorName, rec.Error = history.Failed, ErrorName(err), err.Error()
	case in.DryRun:
		rec.Outcome = history.DryRunOK
	default:
		rec.Outcome, rec.PointerVersionID = history.Succeeded, out.PointerVersionID
	}
	if out.Newer != "" {
		rec.Notes = []string{"left behind: " + out.Newer}
	}
	if _, herr := history.Create(ctx, env.Store, rec); herr != nil {
		slog.ErrorContext(ctx, "the rollback's record was not written", "run_id", out.RunID, "pointer", in.Pointer, "error", herr.Error())
		out.HistoryError = herr.Error()
	}
	return out, err
}

func rollback(ctx context.Context, env Env, in RollbackInput, out RollbackOutput, rec *history.Record) (RollbackOutput, error) {
	check := func(ctx context.Context, cur, p pointer.Pointer) error {
		out.From = cur.Catalog
		rec.Source, rec.From, rec.Target, rec.To = cur.Catalog, cur.FormatVersion, p.Catalog, p.FormatVersion
		wb, ok := drift.WayBack(cur)
		out.InPlace = ok && p.Catalog == wb
		c, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: p.FormatVersion, Store: env.SlateDB})
		if err != nil {
			return fmt.Errorf("workflow: rollback: check %s: %w", p.Catalog, err)
		}
		if err := c.Close(); err != nil {
			return err
		}
		newer, err := newerCommits(ctx, env, cur)
		if err != nil && !in.DiscardNewerCommits {
			return fmt.Errorf("%w: cannot tell what %s took since the flip (pass --discard-newer-commits to roll back anyway): %w", ErrRollbackLosesCommits, cur.Catalog, err)
		}
		out.Newer = newer
		if newer != "" && !in.DiscardNewerCommits {
			return fmt.Errorf("%w: %s; rolling back would drop them (pass --discard-newer-commits to roll back anyway)", ErrRollbackLosesCommits, newer)
		}
		return nil
	}
	p, ref, err := pointer.Rollback(ctx, env.Store, in.Pointer, pointer.RollbackOptions{Check: check, Relocate: relocate, DryRun: in.DryRun})
	if err != nil {
		return RollbackOutput{RunID: out.RunID}, err
	}
	out.DryRun = in.DryRun
	out.Catalog, out.FormatVersion, out.PointerVersionID = p.Catalog, p.FormatVersion, ref.VersionID
	return out, nil
}

// relocate sends the rollback of an in-place migration to its way back: the
// catalog as it was, copied before the migration changed it where it lies.
func relocate(cur, restore pointer.Pointer) string {
	wb, ok := drift.WayBack(cur)
	if !ok || restore.Catalog != cur.Catalog {
		return ""
	}
	return wb
}

// newerCommits says what cur's catalog took since cur was written ("" for
// nothing), from the writer-epoch and next_snapshot_id recorded in cur.
func newerCommits(ctx context.Context, env Env, cur pointer.Pointer) (string, error) {
	if cur.Marks == (pointer.Marks{}) {
		return "", fmt.Errorf("the pointer recorded no marks of %s at the flip", cur.Catalog)
	}
	c, err := catalog.Open(ctx, cur.Catalog, catalog.Options{Expect: cur.FormatVersion, Store: env.SlateDB})
	if err != nil {
		return "", err
	}
	defer c.Close()
	now, err := catalogMarks(ctx, c)
	if err != nil {
		return "", err
	}
	was := cur.Marks
	var parts []string
	if now.NextSnapshotID != was.NextSnapshotID {
		parts = append(parts, fmt.Sprintf("snapshots %d to %d were committed to %s after the flip", was.NextSnapshotID, now.NextSnapshotID-1, cur.Catalog))
	}
	if now.WriterEpoch != was.WriterEpoch {
		parts = append(parts, fmt.Sprintf("its writer-epoch moved from %d to %d (a RockLake writer opened it)", was.WriterEpoch, now.WriterEpoch))
	}
	return strings.Join(parts, "; "), nil
}

// catalogMarks reads what RockLake moves when it writes: writer-epoch (0
// before any RockLake writer opened the catalog) and next_snapshot_id.
func catalogMarks(ctx context.Context, c *catalog.Catalog) (pointer.Marks, error) {
	epoch, next, err := c.Marks(ctx)
	return pointer.Marks{WriterEpoch: epoch, NextSnapshotID: next}, err
}
