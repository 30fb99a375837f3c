package workflow

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// An online run (docs/online.md): Snapshot instead of Freeze, the copy from
// its checkpoint while RockLake commits, CatchUp rounds until one is small,
// Fence, a last CatchUp, then Finalize, Verify and Flip as offline.

// checkpointLifetime bounds the life of the checkpoints a run takes of its
// source, should neither Flip nor Abort remove them.
const checkpointLifetime = 7 * 24 * time.Hour

// Snapshot is an online run's Freeze without the fence: a detached
// checkpoint of the source (RockLake keeps its writer and commits on), the
// shard plan from that checkpoint. A run that is not online freezes.
func Snapshot(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if !m.CopiesOnline() {
		return Freeze(ctx, env, m)
	}
	if m.RollbackOf != "" {
		return rollbackStart(ctx, env, m)
	}
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	cp, err := slatedb.CreateCheckpoint(ctx, m.Source, slatedb.CheckpointOptions{Lifetime: checkpointLifetime, Name: layout.FreezeCheckpoint(m.MigrationID)}, env.SlateDB)
	if err != nil {
		return m, fmt.Errorf("workflow: snapshot %s: %w", m.Source, err)
	}
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.From, Checkpoint: cp.ID, Store: env.SlateDB})
	if mismatch := (*format.FormatVersionMismatch)(nil); errors.As(err, &mismatch) && mismatch.Missing {
		return snapshotOffline(ctx, env, m, cp.ID)
	}
	if err != nil {
		return m, fmt.Errorf("workflow: snapshot %s: %w", m.Source, err)
	}
	defer c.Close()
	// The snapshot's marks stand until Fence records the fenced source's.
	epoch, nextSnap, err := c.Marks(ctx)
	if err != nil {
		return m, err
	}
	ranges, balance, err := shard.PlanBalanced(ctx, c, shard.BlockSource{URL: m.Source, Checkpoint: cp.ID, Options: env.SlateDB}, m.Shards, shard.ByteScanBudget)
	if err != nil {
		return m, err
	}
	m.Checkpoint = cp.ID
	return m, runstate.WritePlan(ctx, env, m, epoch, nextSnap, ranges, balance)
}

// offlineUnflushed is why an online run migrates a source offline whose
// checkpoint holds no catalog.
const offlineUnflushed = "the source's catalog lies wholly in RockLake's WAL (RockLake has not flushed it since the catalog was made), which a snapshot does not hold; it is small (under one memtable), so the run fenced it for the copy"

// snapshotOffline migrates offline a source whose snapshot (checkpoint
// cpID) holds no catalog: RockLake made it and has written only to its WAL
// since, which a detached checkpoint does not name. Such a catalog is
// under one memtable, so its offline copy is short. The fence is named in
// the lock first (the supervisors switch to reader mode), then Freeze runs;
// the report says why (OfflineBecause).
func snapshotOffline(ctx context.Context, env runstate.Env, m runstate.Migration, cpID string) (runstate.Migration, error) {
	if err := slatedb.DeleteCheckpoint(ctx, m.Source, cpID, env.SlateDB); err != nil {
		return m, fmt.Errorf("workflow: snapshot %s: %w", m.Source, err)
	}
	var err error
	if m.FenceAt, err = runstate.AnnounceFence(ctx, env, m); err != nil {
		return m, err
	}
	m.Online, m.OfflineBecause = false, offlineUnflushed
	m.FencedAt = m.FenceAt
	return Freeze(ctx, env, m)
}

// CatchUp runs the next catch-up round: the source's changes from the last
// round's view (the snapshot's, first) to a new one (the fenced source's,
// after the fence) carried into the target, the digest kept. It says
// whether the round was small enough to fence next (CaughtUp).
func CatchUp(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	p, err := runstate.ReadPlan(ctx, env, m.MigrationID)
	if err != nil {
		return m, err
	}
	st := env.StagingOf(m.MigrationID)
	from, digest := slatedb.View{Checkpoint: p.Checkpoint}, ndjson.Digest{}
	switch {
	case m.Round == 0 && p.Start != nil:
		from, digest = p.Start.View, p.Start.Digest
	case m.Round == 0:
		if digest, _, _, err = transformsDigest(ctx, env, m, len(p.Ranges)); err != nil {
			return m, err
		}
	default:
		var prev runstate.Round
		if err := env.Store.GetJSON(ctx, st.Round(m.Round), &prev); err != nil {
			return m, err
		}
		from, digest = prev.To, prev.Result.Digest
	}
	n := m.Round + 1
	r, err := roundViews(ctx, env, m, p, n, from)
	if err != nil {
		return m, err
	}
	opts, err := catchUpOptions(env, m, p)
	if err != nil {
		return m, err
	}
	start := time.Now()
	res, err := shard.CatchUp(ctx, m.Source, r.From, r.To, m.Target, digest, opts)
	if err != nil {
		return m, err
	}
	r.Done, r.Result, r.Seconds = true, res, time.Since(start).Seconds()
	if err := env.Store.PutJSON(ctx, st.Round(n), r); err != nil {
		return m, err
	}
	lim := m.CatchUp.WithDefaults()
	m.Round = n
	m.CaughtUp = res.Keys <= lim.MaxKeys && r.Seconds <= lim.MaxSeconds || n >= lim.MaxRounds
	return m, nil
}

// roundViews returns round n's record with its views: the one a earlier
// attempt recorded (a retry carries the same change), else from and a new
// view, recorded before anything is written.
func roundViews(ctx context.Context, env runstate.Env, m runstate.Migration, p runstate.Plan, n int, from slatedb.View) (runstate.Round, error) {
	st := env.StagingOf(m.MigrationID)
	var r runstate.Round
	err := env.Store.GetJSON(ctx, st.Round(n), &r)
	switch {
	case err == nil:
		return r, nil
	case !errors.Is(err, blob.ErrNotFound):
		return r, err
	}
	r = runstate.Round{Round: n, From: from, Last: m.Fenced}
	if m.Fenced {
		r.To = p.FenceView
	} else if r.To, err = slatedb.TakeView(ctx, m.Source, slatedb.CheckpointOptions{Lifetime: checkpointLifetime, Name: layout.RoundCheckpoint(m.MigrationID, n)}, env.SlateDB); err != nil {
		return r, fmt.Errorf("workflow: catch-up round %d: %w", n, err)
	}
	return r, env.Store.PutJSON(ctx, st.Round(n), r)
}

// Fence is an online run's fence, Freeze's without the copy: the fence time
// named in the lock and its grace awaited (the supervisors switch the
// servers to reader mode), the source's writer opened (fencing RockLake's),
// its marks, a view of the fenced source (the last round's end) and its
// engine state recorded. The write freeze starts here.
func Fence(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	p, err := runstate.ReadPlan(ctx, env, m.MigrationID)
	if err != nil {
		return m, err
	}
	if m.FenceAt, err = runstate.AnnounceFence(ctx, env, m); err != nil {
		return m, err
	}
	if err := runstate.AwaitFence(ctx, env, m); err != nil {
		return m, err
	}
	// The writer's open fences RockLake's and replays RockLake's WAL
	// backlog (its WAL since its memtable last reached L0): fetched ahead
	// first (WarmWAL), while RockLake still commits, so that the freeze
	// does not wait on a request per WAL SST.
	so := env.SlateDB
	so.Passive, so.WarmWAL = true, true
	w, err := catalog.OpenWriter(ctx, m.Source, catalog.Options{Expect: m.From, Store: so})
	if err != nil {
		return m, fmt.Errorf("workflow: fence %s: %w", m.Source, err)
	}
	defer w.Close()
	// The freeze counts from before the open itself, the fetch done.
	warmed := w.Warmed()
	m.FencedAt = warmed.OpenedAt.UTC()
	epoch, nextSnap, err := w.Catalog.Marks(ctx)
	if err != nil {
		return m, err
	}
	// The fenced source's view: a detached checkpoint and the WAL listed
	// after it, taken before this writer flushes anything. Opening it
	// wrote an empty WAL SST past RockLake's last, which fences RockLake's
	// WAL writes, so the view holds every commit RockLake acknowledged. It
	// shares RockLake's WAL backlog with the last round's earlier view:
	// that round's candidates are the commits since, not the backlog (a
	// checkpoint through this writer would move the backlog into an L0
	// SST, every key of it a candidate).
	view, err := slatedb.TakeView(ctx, m.Source, slatedb.CheckpointOptions{Lifetime: checkpointLifetime, Name: layout.FenceCheckpoint(m.MigrationID)}, env.SlateDB)
	if err != nil {
		return m, fmt.Errorf("workflow: fence %s: %w", m.Source, err)
	}
	if m.ReadReplica {
		// The replica copies a checkpoint's objects: one through this
		// writer, which holds the WAL backlog in an L0 SST.
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: checkpointLifetime, Name: layout.FenceReplicaCheckpoint(m.MigrationID)})
		if err != nil {
			return m, err
		}
		p.Replica = runstate.MakeReplica(ctx, env, m, cp.ID)
	}
	if err := w.CloseContext(ctx); err != nil {
		return m, fmt.Errorf("workflow: fence %s: close: %w", m.Source, err)
	}
	state, err := runstate.EngineState(ctx, env, m.Source)
	if err != nil {
		return m, err
	}
	p.WriterEpoch, p.NextSnapshotID, p.EngineState, p.FenceView, p.FencedAt = epoch, nextSnap, state, view, m.FencedAt
	p.FenceBacklog = &history.Backlog{WALSSTs: warmed.SSTs, Bytes: warmed.Bytes, FetchSeconds: warmed.Took.Seconds()}
	if err := env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).Plan(), p); err != nil {
		return m, err
	}
	m.Replica, m.Fenced = p.Replica, true
	return m, nil
}

// catchUpOptions are the rounds' and the verification's options for m.
func catchUpOptions(env runstate.Env, m runstate.Migration, p runstate.Plan) (shard.CatchUpOptions, error) {
	policy, err := migration.ParseUnknownTags(p.UnknownTags)
	so := env.SlateDB
	// RockLake's WAL backlog lies in every view: the rounds before the
	// fence keep their views' overlays in staging, so that each reads only
	// the WAL written since the last, and the last round and Verify, inside
	// the freeze, read none of the backlog (nor miss a WAL SST collected
	// meanwhile).
	so.OverlayCache, so.KeepOverlay = env.StagingOf(m.MigrationID).Overlays(), !m.Fenced
	return shard.CatchUpOptions{From: m.From, To: m.To, UnknownTags: policy, Store: so}, err
}

// VerifyCatchUp is the whole of an online run's verification that can run
// while writes go on, before the fence: the target (an unfinished import)
// must hold what the rounds wrote (their digest), and that digest must
// equal the transform of the last round's view of the source, digested
// from its own scan. Both scans run at once. Verify, after the fence, then
// checks only what changed since (VerifyChanges), so that the write freeze
// does not grow with the catalog.
func VerifyCatchUp(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	p, err := runstate.ReadPlan(ctx, env, m.MigrationID)
	if err != nil {
		return m, err
	}
	last, err := runstate.ReadRound(ctx, env, m, m.Round)
	if err != nil {
		return m, err
	}
	opts, err := catchUpOptions(env, m, p)
	if err != nil {
		return m, err
	}
	// The source's view read from its own WAL SSTs, not from the overlays
	// the rounds kept: this check owes the rounds nothing.
	opts.Store.OverlayCache, opts.Store.KeepOverlay = "", false
	var target, source ndjson.Digest
	err = shard.ForEach(ctx, 2, 2, func(ctx context.Context, part int) error {
		var err error
		switch {
		case part == 0 && p.Start != nil:
			// A rollback's target is a finished catalog, whose keys the
			// rounds did not write are as they were, in the canonical
			// form its rounds' digest holds them in.
			target, err = shard.DigestCanonical(ctx, m.Target, opts)
		case part == 0:
			target, err = shard.DigestImport(ctx, m.Target, env.SlateDB)
		default:
			source, err = shard.DigestView(ctx, m.Source, last.To, opts)
		}
		return err
	})
	if err != nil {
		return m, err
	}
	if cmp := shard.Compare(target, last.Result.Digest); !cmp.Match {
		return m, fmt.Errorf("%w: %s does not hold what the catch-up rounds wrote, at round %d: %v", shard.ErrMismatch, m.Target, m.Round, cmp.Diff)
	}
	if cmp := shard.Compare(source, last.Result.Digest); !cmp.Match {
		return m, fmt.Errorf("%w: the catch-up rounds' digest is not the transform of the source's view at round %d: %v", shard.ErrMismatch, m.Round, cmp.Diff)
	}
	m.Verified, m.VerifiedRound, m.CaughtUp = true, m.Round, false
	return m, nil
}

// verifyOnline is Verify for an online run, after the fence, in proportion
// to the change since VerifyCatchUp verified the whole target: every key
// the source changed between the verified round's view and the fenced
// source must read in the target as its transform (VerifyChanges), and the
// verified digest updated by those changes, computed here, must equal the
// digest the rounds kept.
func verifyOnline(ctx context.Context, env runstate.Env, m runstate.Migration, p runstate.Plan) (ndjson.Digest, int, error) {
	if !m.Verified || !m.Fenced {
		return ndjson.Digest{}, 0, fmt.Errorf("%w: %s: an online run is verified before its fence and after it; this one was not (verified %v, fenced %v)", shard.ErrMismatch, m.Target, m.Verified, m.Fenced)
	}
	verified, err := runstate.ReadRound(ctx, env, m, m.VerifiedRound)
	if err != nil {
		return ndjson.Digest{}, 0, err
	}
	last, err := runstate.ReadRound(ctx, env, m, m.Round)
	if err != nil {
		return ndjson.Digest{}, 0, err
	}
	if !last.Last {
		return ndjson.Digest{}, 0, fmt.Errorf("%w: %s: round %d is not the round after the fence", shard.ErrMismatch, m.Target, m.Round)
	}
	opts, err := catchUpOptions(env, m, p)
	if err != nil {
		return ndjson.Digest{}, 0, err
	}
	d, keys, unknown, err := shard.VerifyChanges(ctx, m.Source, verified.To, last.To, m.Target, verified.Result.Digest, opts)
	if err != nil {
		return d, keys, err
	}
	// What the rounds since dropped, net, against the change counted again.
	rounds := map[string]int64{}
	for n := m.VerifiedRound + 1; n <= m.Round; n++ {
		r, err := runstate.ReadRound(ctx, env, m, n)
		if err != nil {
			return d, keys, err
		}
		for tag, k := range r.Result.DroppedNet {
			if rounds[tag] += k; rounds[tag] == 0 {
				delete(rounds, tag)
			}
		}
	}
	if !maps.Equal(rounds, unknown.DroppedNet) && (len(rounds) > 0 || len(unknown.DroppedNet) > 0) {
		return d, keys, fmt.Errorf("%w: the catch-up rounds since round %d dropped records of unknown tags %v (net), the change since counts %v", shard.ErrMismatch, m.VerifiedRound, rounds, unknown.DroppedNet)
	}
	if cmp := shard.Compare(d, last.Result.Digest); !cmp.Match {
		return d, keys, fmt.Errorf("%w: the catch-up rounds' digest of %s is not the verified one updated by the %d source keys changed since round %d: %v", shard.ErrMismatch, m.Target, keys, m.VerifiedRound, cmp.Diff)
	}
	return d, keys, nil
}
