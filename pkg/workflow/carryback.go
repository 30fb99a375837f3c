package workflow

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A rollback that carries commits back (docs/rollback.md) is an online
// migration in reverse, run by the migration definition with input
// {"rollback": true}: its source is the catalog the pointer names, its
// target the catalog the pointer's previous version names, which already
// holds everything up to the flip. So there is no copy: Snapshot starts
// the rounds at the flip's pin of the source (pointer.FlipPoint) with the
// target's digest, after proving the target still reads as its own pin;
// the Map's shard and Import have nothing to do, nor has Finalize; the
// rounds, VerifyCatchUp, Fence, the last round and Verify are the
// migration's; Flip writes the previous pointer version back, saying what
// was carried. Abort puts the target back as its pin.

// downInstead is what a refused rollback can do instead.
func downInstead(from string) string {
	return "migrate the current catalog into a fresh one instead (migrate --to " + from + ", or --rebuild in the same format), or roll back with --discard-newer-commits"
}

// preflightRollback is Check's preflight of a rollback run: the pointer,
// the version it goes back to (pointer.Rollback's choice), the flip's pins,
// both catalogs' startup checks and the path between their formats,
// staging and the lock. It writes nothing.
func preflightRollback(ctx context.Context, env runstate.Env, in CheckInput, m runstate.Migration, now time.Time) (runstate.Migration, error) {
	if in.InPlace || in.InPlaceAuto || in.Rebuild || in.TargetPrefix != "" || in.DryRun || in.TargetVersion != 0 || in.Online != nil && !*in.Online {
		return m, fmt.Errorf("%w: a rollback goes back to the catalog the pointer's previous version names, online; it takes none of in_place, rebuild, target_prefix, target_version, dry_run (rollback --dry-run) or online: false", ErrBadInput)
	}
	var err error
	if m.FreezeGrace, err = runstate.FreezeGraceOf(in.FreezeGrace); err != nil {
		return m, err
	}
	cur, ref, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return m, err
	}
	// An in-place migration's previous version names the catalog it
	// changed where it lies: the rollback goes to its way back (relocate).
	prev, _, err := pointer.Rollback(ctx, env.Store, in.Pointer, pointer.RollbackOptions{DryRun: true, Relocate: relocate})
	if err != nil {
		return m, err
	}
	if cur.FlipPoint == nil {
		return m, fmt.Errorf("%w: the flip to %s (migration %s) pinned neither catalog, so what %s took since cannot be found; %s",
			ErrPreviousCatalogChanged, cur.Catalog, cur.MigrationID, cur.Catalog, downInstead(prev.FormatVersion.String()))
	}
	m.PointerETag, m.Source, m.Target, m.RollbackOf = ref.ETag, cur.Catalog, prev.Catalog, cur.MigrationID
	m.NeedsMigration, m.Online, m.ReadReplica = true, true, false
	// Records of tags this binary does not know go back byte for byte: the
	// migration carried them here, or a newer writer made them, and the
	// way back must not lose them (a policy of fail would refuse the whole
	// catalog's view at VerifyCatchUp).
	m.UnknownTags = migration.UnknownCarry.String()
	for _, c := range []struct {
		p pointer.Pointer
		v *format.Version
	}{{cur, &m.From}, {prev, &m.To}} {
		cat, err := catalog.Open(ctx, c.p.Catalog, catalog.Options{Expect: c.p.FormatVersion, Store: env.SlateDB})
		if err != nil {
			return m, fmt.Errorf("workflow: check %s: %w", c.p.Catalog, err)
		}
		*c.v = cat.Version()
		if err := cat.Close(); err != nil {
			return m, err
		}
	}
	if _, err := migration.Path(m.From, m.To); err != nil {
		return m, fmt.Errorf("workflow: check: %w", err)
	}
	if err := stagingReadable(ctx, env, m.MigrationID); err != nil {
		return m, err
	}
	if _, err := lockState(ctx, env, in.Pointer, m.MigrationID, now); err != nil {
		return m, err
	}
	return m, nil
}

// rollbackStart is a rollback run's Snapshot: the previous catalog (the
// target) proven to read as its pin, its digest taken (canonical, so that
// a downward carry compares like with like), and the plan written with the
// rounds' start, the source's pin.
func rollbackStart(ctx context.Context, env runstate.Env, m runstate.Migration) (runstate.Migration, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return m, err
	}
	cur, ref, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return m, err
	}
	if ref.ETag != m.PointerETag || cur.FlipPoint == nil || cur.MigrationID != m.RollbackOf {
		return m, fmt.Errorf("%w: the pointer moved since Check (migration %s): nothing was written", pointer.ErrPointerConflict, cur.MigrationID)
	}
	fp := *cur.FlipPoint
	if err := targetAsPinned(ctx, env, m, fp.Previous); err != nil {
		return m, err
	}
	opts, err := catchUpOptions(env, m, runstate.Plan{UnknownTags: m.UnknownTags})
	if err != nil {
		return m, err
	}
	digest, err := shard.DigestCanonical(ctx, m.Target, opts)
	if err != nil {
		return m, err
	}
	c, err := catalog.Open(ctx, m.Source, catalog.Options{Expect: m.From, Store: env.SlateDB})
	if err != nil {
		return m, fmt.Errorf("workflow: rollback %s: %w", m.Source, err)
	}
	epoch, nextSnap, err := c.Marks(ctx)
	c.Close()
	if err != nil {
		return m, err
	}
	state, err := runstate.EngineState(ctx, env, m.Source)
	if err != nil {
		return m, err
	}
	p := runstate.Plan{Run: m.Run, WriterEpoch: epoch, NextSnapshotID: nextSnap, EngineState: state, UnknownTags: m.UnknownTags,
		Start: &runstate.RoundStart{View: runstate.ViewOf(fp.Current), Digest: digest}, RollbackOf: m.RollbackOf, FlipPoint: &fp}
	return m, env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).Plan(), p)
}

// targetAsPinned proves a rollback's target reads as its pin: no key
// differs between the pin and a view taken now (SlateDB's changes between
// them, compared value by value). A pin that is gone proves nothing.
func targetAsPinned(ctx context.Context, env runstate.Env, m runstate.Migration, pin pointer.Pin) error {
	now, err := slatedb.TakeView(ctx, m.Target, slatedb.CheckpointOptions{Lifetime: time.Hour, Name: layout.FreezeCheckpoint(m.MigrationID)}, env.SlateDB)
	if err != nil {
		return fmt.Errorf("workflow: rollback: a view of %s: %w", m.Target, err)
	}
	defer slatedb.DeleteCheckpoint(context.WithoutCancel(ctx), m.Target, now.Checkpoint, env.SlateDB)
	n, first, err := countChanges(ctx, env, m.Target, runstate.ViewOf(pin), now)
	switch {
	case errors.Is(err, slatedb.ErrCheckpointMissing):
		return fmt.Errorf("%w: %s's pin at the flip (checkpoint %s) is gone (cleanup removed it?), so it cannot be proven to read as it did; %s",
			ErrPreviousCatalogChanged, m.Target, pin.Checkpoint, downInstead(m.To.String()))
	case err != nil:
		return fmt.Errorf("workflow: rollback: %s since the flip: %w", m.Target, err)
	case n > 0:
		return fmt.Errorf("%w: %s took %d key changes since the flip (the first at key %x): a writer opened it, or a rollback was cut short; nothing was written to it; %s",
			ErrPreviousCatalogChanged, m.Target, n, first, downInstead(m.To.String()))
	}
	return nil
}

// countChanges counts the keys that differ between views from and to of
// the catalog at url, and gives the first.
func countChanges(ctx context.Context, env runstate.Env, url string, from, to slatedb.View) (int, []byte, error) {
	ch, err := slatedb.OpenChanges(ctx, url, from, to, env.SlateDB, slatedb.DefaultMaxChangedFraction)
	if err != nil {
		return 0, nil, err
	}
	defer ch.Close()
	n := 0
	var first []byte
	for ch.Next() {
		if n == 0 {
			first = append([]byte(nil), ch.Change().Key...)
		}
		n++
	}
	return n, first, ch.Err()
}

// rollbackIntent is the pointer a rollback's Flip writes: the previous
// version (pointer.Rollback's choice) with the next generation and what was
// carried. Its marks and flip point stay those of the flip that version
// recorded: they say what its catalog took since that flip, which a later
// rollback of it must not take for nothing.
func rollbackIntent(ctx context.Context, env runstate.Env, m runstate.Migration, keys int) (pointer.Pointer, error) {
	prev, _, err := pointer.Rollback(ctx, env.Store, m.Pointer, pointer.RollbackOptions{DryRun: true, Relocate: relocate})
	if err != nil {
		return prev, err
	}
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return prev, err
	}
	if prev.Catalog != m.Target {
		return prev, fmt.Errorf("%w: the pointer's previous version names %s, not %s", pointer.ErrPointerConflict, prev.Catalog, m.Target)
	}
	next := prev
	next.Generation = max(cur.Generation, prev.Generation) + 1
	next.UpdatedAt = time.Now().UTC().Truncate(time.Millisecond)
	next.RolledBack = &pointer.RolledBack{Of: m.RollbackOf, By: m.MigrationID, Keys: keys}
	return next, nil
}

// carriedKeys is how many source keys a rollback's rounds carried.
func carriedKeys(ctx context.Context, env runstate.Env, m runstate.Migration) int {
	n := 0
	for i := 1; i <= m.Round; i++ {
		if r, err := runstate.ReadRound(ctx, env, m, i); err == nil {
			n += r.Result.Keys
		}
	}
	return n
}

// revertTarget is a rollback's Abort on its target: every key its rounds
// changed put back as the target's pin reads it (the rounds' changes
// undone by a round from now back to the pin, in the target's own
// format), so that the target reads as at the flip again and a later
// rollback can start over. A pointer already naming the target is never
// reverted (Abort refuses before).
func revertTarget(ctx context.Context, env runstate.Env, m runstate.Migration) (int, error) {
	cur, _, err := pointer.Read(ctx, env.Store, m.Pointer)
	if err != nil {
		return 0, err
	}
	if cur.FlipPoint == nil || cur.MigrationID != m.RollbackOf {
		return 0, fmt.Errorf("workflow: abort: the pointer no longer names migration %s's flip, so %s's pin is unknown; it was left as it is", m.RollbackOf, m.Target)
	}
	pin := runstate.ViewOf(cur.FlipPoint.Previous)
	now, err := slatedb.TakeView(ctx, m.Target, slatedb.CheckpointOptions{Lifetime: time.Hour, Name: layout.FreezeCheckpoint(m.MigrationID) + "-revert"}, env.SlateDB)
	if err != nil {
		return 0, fmt.Errorf("workflow: abort: a view of %s: %w", m.Target, err)
	}
	defer slatedb.DeleteCheckpoint(context.WithoutCancel(ctx), m.Target, now.Checkpoint, env.SlateDB)
	res, err := shard.CatchUp(ctx, m.Target, now, pin, m.Target, ndjson.Digest{}, shard.CatchUpOptions{From: m.To, To: m.To, UnknownTags: migration.UnknownCarry, Store: env.SlateDB})
	if err != nil {
		return 0, fmt.Errorf("workflow: abort: put %s back as its pin: %w", m.Target, err)
	}
	// The revert is checked as rollbackStart checks the target: a
	// rollback run again starts from there.
	if err := targetAsPinned(ctx, env, m, cur.FlipPoint.Previous); err != nil {
		return res.Keys, fmt.Errorf("workflow: abort: %s after the revert: %w", m.Target, err)
	}
	return res.Keys, nil
}

// rollbackNote is the line a rollback's record and report give.
func rollbackNote(m runstate.Migration, keys int) string {
	return fmt.Sprintf("rollback of migration %s: %d keys of %s carried back into %s", m.RollbackOf, keys, m.Source, strings.TrimSuffix(m.Target, "/"))
}

// RollbackCarries reports whether the rollback of the pointer's latest flip
// runs as a rollback run (CheckInput.Rollback), carrying commits back: the
// flip pinned both catalogs (an in-place migration's, the catalog and its
// way back, where the rollback goes).
func RollbackCarries(ctx context.Context, env runstate.Env, pointerURL string) (bool, error) {
	cur, _, err := pointer.Read(ctx, env.Store, pointerURL)
	if err != nil {
		return false, err
	}
	return cur.FlipPoint != nil, nil
}
