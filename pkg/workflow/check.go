package workflow

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/statemachine"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

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
	// An online run, left out, makes none (Fence would copy it inside the
	// freeze).
	ReadReplica *bool `json:"read_replica,omitempty"`
	// Online copies while RockLake keeps committing, and fences the source
	// only for the last catch-up round (Migration.Online); CatchUp bounds
	// the rounds (zero: the defaults). nil (left out) is online, but for
	// in_place (Strategy A migrates where the catalog lies, frozen); false
	// fences the source for the whole copy (offline).
	Online  *bool                  `json:"online,omitempty"`
	CatchUp runstate.CatchUpLimits `json:"catch_up,omitzero"`
	// Rollback runs the rollback of the pointer's latest flip: the current
	// catalog's commits since the flip carried back into the catalog the
	// previous pointer version names, online, then the pointer flipped
	// back (carryback.go).
	Rollback bool `json:"rollback,omitempty"`
}

// online reports whether the run copies online: asked, or left out of a
// run that is not in place.
func (in CheckInput) online() bool {
	if in.Online != nil {
		return *in.Online
	}
	return !in.InPlace
}

// Check resolves the pointer, runs the startup check on the catalog it names
// and decides whether a migration is needed; before a migration it runs
// every preflight check (Plan runs the same ones), proves staging takes
// writes, takes the pointer's lock and starts the run's record. It touches
// neither the source nor the pointer. A run it refuses is recorded as
// failed, one with nothing to do as such.
func Check(ctx context.Context, env runstate.Env, in CheckInput) (runstate.Migration, error) {
	start := time.Now()
	id := in.MigrationID
	if id == "" {
		id = runstate.NewMigrationID()
	}
	m, _, err := preflight(ctx, env, in, id, start, false)
	if err != nil || !m.NeedsMigration {
		recordRefusal(ctx, env, in, m, start, err)
		if err != nil {
			return runstate.Migration{}, err
		}
		return m, nil
	}
	if m, err = begin(ctx, env, m, start); err != nil {
		recordRefusal(ctx, env, in, m, start, err)
		return runstate.Migration{}, err
	}
	return m, nil
}

// begin does what Check writes once the preflight passed: the staging
// probe, the lock and the record.
func begin(ctx context.Context, env runstate.Env, m runstate.Migration, start time.Time) (runstate.Migration, error) {
	// Staging must take writes before the source is touched: Freeze's
	// checkpoint would otherwise be left behind by a run that cannot
	// write its plan.
	if err := runstate.ProbeStaging(ctx, env, m); err != nil {
		return m, err
	}
	// One migration at a time, decided before anything is touched.
	held, err := runstate.AcquireLock(ctx, env, m, start)
	if err != nil {
		return m, err
	}
	m.StartedAt, m.FenceAt = held.AcquiredAt, held.FenceAt
	// A rollback's target is the previous catalog: not made by this run.
	claimed := !m.DryRun && !m.InPlace && m.RollbackOf == ""
	if claimed {
		// The new catalog is this pointer's before anything is written
		// there (Import writes it): the claim is what the drift check and
		// cleanup accept as proof. Check writes it because it holds the
		// pointer's rights, which the shard Lambdas do not.
		if _, err := claim.Create(ctx, env.Store, claim.Claim{Pointer: m.Pointer, Catalog: m.Target, Kind: claim.KindTarget, Source: m.Source,
			MigrationID: m.MigrationID, Created: time.Now(), CreatedBy: env.CreatedBy}); err != nil {
			err = fmt.Errorf("workflow: claim the target %s: %w", m.Target, err)
			if rerr := lock.Release(ctx, env.Store, m.Pointer, m.MigrationID); rerr != nil {
				err = fmt.Errorf("%w; freeing the lock failed too: %w", err, rerr)
			}
			return m, err
		}
	}
	replica := m.ReadReplica && !m.DryRun && !m.InPlace
	if replica {
		// The read replica Freeze (or Fence) may make beside the source,
		// claimed as the target is: no delete of it (Flip, Abort,
		// cleanup) goes ahead without this claim.
		if err := runstate.ClaimReplica(ctx, env, m); err != nil {
			if claimed {
				err = errors.Join(err, claim.Delete(ctx, env.Store, m.Pointer, m.MigrationID))
			}
			return m, errors.Join(err, lock.Release(ctx, env.Store, m.Pointer, m.MigrationID))
		}
	}
	if err := runstate.StartRecord(ctx, env, m, time.Since(start).Seconds()); err != nil {
		if claimed {
			if cerr := claim.Delete(ctx, env.Store, m.Pointer, m.MigrationID); cerr != nil {
				err = fmt.Errorf("%w; withdrawing the target's claim failed too: %w", err, cerr)
			}
		}
		if replica {
			if cerr := claim.Delete(ctx, env.Store, m.Pointer, claim.ReplicaID(m.MigrationID)); cerr != nil {
				err = fmt.Errorf("%w; withdrawing the replica's claim failed too: %w", err, cerr)
			}
		}
		if rerr := lock.Release(ctx, env.Store, m.Pointer, m.MigrationID); rerr != nil {
			err = fmt.Errorf("%w; freeing the lock failed too: %w", err, rerr)
		}
		return m, err
	}
	return m, nil
}

// targetURL puts the new catalog beside the source: .../prod → .../v2-<id>
// (layout.Target, the name the drift check knows targets by).
func targetURL(source string, to format.Version, id string) (string, error) {
	t, err := layout.Target(source, to, id)
	return t, besideSource(source, err)
}

// wayBackURL is where in-place migration id copies the source as it was,
// in format from (layout.WayBack, beside the source).
func wayBackURL(source string, from format.Version, id string) (string, error) {
	wb, err := layout.WayBack(source, from, id)
	return wb, besideSource(source, err)
}

// besideSource says why there is no place beside source (err from
// pkg/layout); nil when there is.
func besideSource(source string, err error) error {
	switch {
	case errors.Is(err, layout.ErrAtRoot):
		return fmt.Errorf("%w: %s is at the root of its bucket or file system, so there is no place beside it for the new catalog; move the catalog under a prefix (for example s3://bucket/catalogs/prod)", ErrSourceAtRoot, source)
	case err != nil:
		return fmt.Errorf("workflow: catalog URL %s: %w", source, err)
	}
	return nil
}

// newTarget is where migration id makes its new catalog: in dir, when the
// input names one (another prefix or bucket), as layout.TargetIn names it;
// else beside the source (targetURL).
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
	return layout.TargetIn(dir, to, id), nil
}

// recordRefusal records a run that Check refused (or found nothing to do
// for): a whole record, written once. A transient failure is not recorded,
// as the state machine retries it, nor a missing pointer, which has no
// place for a history. The record is best effort: the refusal
// is the caller's answer either way.
func recordRefusal(ctx context.Context, env runstate.Env, in CheckInput, m runstate.Migration, start time.Time, checkErr error) {
	name := ""
	if checkErr != nil {
		name = runstate.ErrorName(checkErr)
		// No pointer, no history beside it; a retryable failure is
		// retried; a silent endpoint would not take the record either.
		if errname.Retryable(checkErr) || name == errname.Unreachable || in.Pointer == "" || errors.Is(checkErr, pointer.ErrPointerMissing) {
			return
		}
	}
	id := m.MigrationID
	if id == "" {
		id = in.MigrationID
	}
	if id == "" {
		id = runstate.NewMigrationID()
	}
	r := history.Record{
		ID: id, Kind: runstate.RunKind(in.DryRun), Trigger: runstate.Trigger(in.Trigger), Pointer: in.Pointer,
		Source: m.Source, Target: m.Target, From: m.From, To: format.Version(in.TargetVersion),
		Start: start, End: time.Now(), Outcome: history.NothingToDo, State: statemachine.StepCheck,
		StateSeconds: map[string]float64{statemachine.StepCheck: time.Since(start).Seconds()},
	}
	if checkErr != nil {
		r.Outcome, r.ErrorName, r.Error = history.Failed, name, checkErr.Error()
	}
	if _, err := history.Create(ctx, env.Store, r); err != nil {
		slog.WarnContext(ctx, "the run's record was not written", "migration_id", id, "pointer", in.Pointer, "error", err.Error())
	}
}
