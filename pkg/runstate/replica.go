package runstate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Bounds of the read replica's copy (server side, about the catalog's
// bytes): at most replicaBudget, and a third of what Freeze has left; with
// less than minReplicaBudget there, Freeze makes none.
const (
	replicaBudget    = 2 * time.Minute
	minReplicaBudget = 10 * time.Second
)

// replicaLeave bounds how long Abort and Flip wait, after freeing the
// lock, for the live supervisors to leave the read replica (they report
// what they serve, pkg/presence) before they remove it, fencing whoever is
// still on it.
const replicaLeave = 30 * time.Second

// MakeReplica copies checkpoint cp of the frozen source into the
// migration's replica (layout.Replica, a name the servers' supervisors
// derive from the pointer and the lock's holder: Freeze's role writes
// neither the lock nor deletes anything), for them to serve reads from
// until the flip or the abort; its manifest, copied last, says it is
// whole. It is an optional help: when it cannot be made in its budget, or
// fails, the run goes on without it (reads then fail until the flip), the
// reason logged; what a failed copy left, never a database, Abort or Flip
// removes. A retried Freeze finds the earlier attempt's copy (of the same
// frozen state) and keeps it. It returns the replica's URL, "" when none.
func MakeReplica(ctx context.Context, env Env, m Migration, cp string) string {
	if !m.ReadReplica {
		return ""
	}
	skip := func(why string, err error) string {
		slog.WarnContext(ctx, "runstate: freeze: no read replica: "+why, "migration_id", m.MigrationID, "source", m.Source, "error", err)
		return ""
	}
	url, err := layout.Replica(m.Source, m.MigrationID)
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
	slog.InfoContext(ctx, "runstate: freeze: read replica made", "migration_id", m.MigrationID, "replica", url,
		"objects", copied.Objects, "bytes", copied.Bytes, "seconds", time.Since(start).Seconds())
	return url
}

// ClaimReplica claims the read replica migration m may make (Check, which
// holds the pointer's rights; Freeze's role has none).
func ClaimReplica(ctx context.Context, env Env, m Migration) error {
	url, err := layout.Replica(m.Source, m.MigrationID)
	if err != nil {
		return nil // no place for one: Freeze makes none
	}
	_, err = claim.Create(ctx, env.Store, claim.Claim{Pointer: m.Pointer, Catalog: url, Kind: claim.KindReplica, Source: m.Source,
		MigrationID: claim.ReplicaID(m.MigrationID), Created: time.Now(), CreatedBy: env.CreatedBy})
	if err != nil {
		return fmt.Errorf("runstate: claim the read replica %s: %w", url, err)
	}
	return nil
}

// replicaWhole reports whether the replica at url has its manifest.
func replicaWhole(ctx context.Context, env Env, url string) bool {
	objs, err := env.Store.List(ctx, url+"/manifest/")
	return err == nil && len(objs) > 0
}

// DropReplica removes migration m's read replica, if any, once the lock
// is free: once the live supervisors left it (at most replicaLeave),
// fencing a server still on it (DeleteTarget), within half of what the step has
// left. The name is the migration's own (layout.Replica), so a Freeze
// that died before returning is covered.
func DropReplica(ctx context.Context, env Env, m Migration) error {
	if m.Source == "" || m.InPlace || m.DryRun {
		return nil
	}
	url, err := layout.Replica(m.Source, m.MigrationID)
	if err != nil {
		return nil // Freeze made none: there is no place for it
	}
	left, err := env.Store.List(ctx, url+"/")
	if err != nil && !errors.Is(err, blob.ErrNotFound) && !errors.Is(err, blob.ErrNoSuchBucket) {
		return fmt.Errorf("runstate: look for the read replica %s: %w", url, err)
	}
	if len(left) == 0 {
		// None made (or removed already): its claim, if any, goes.
		return claim.Delete(ctx, env.Store, m.Pointer, claim.ReplicaID(m.MigrationID))
	}
	if err := claim.Confirm(ctx, env.Store, m.Pointer, claim.ReplicaID(m.MigrationID), claim.KindReplica, url); err != nil {
		// Fail closed: a directory by that name this run did not claim
		// (a run from before claims, another pointer's) stays; drift
		// and cleanup find it.
		slog.WarnContext(ctx, "runstate: the read replica is not removed: no claim of this run's", "replica", url, "error", err)
		return nil
	}
	if dl, ok := ctx.Deadline(); ok {
		// Half of what the step has left: its own record comes after.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Until(dl)/2)
		defer cancel()
	}
	if m.FreezeGrace > 0 {
		// A run with no grace has no supervisor to wait for. One that
		// stays on the replica past the bound is fenced by the delete.
		waited, err := presence.Await(ctx, env.Store, m.Pointer, replicaLeave, "leave the read replica "+url,
			func(r presence.Record) bool { return r.Catalog == url })
		if err != nil && !errors.Is(err, presence.ErrNotAcknowledged) {
			return fmt.Errorf("runstate: remove the read replica %s: %w", url, err)
		}
		slog.InfoContext(ctx, "runstate: the servers left the read replica", "replica", url, "seconds", waited.Seconds(), "error", err)
		if err == nil {
			// No live server on it, and a gone supervisor's RockLake died
			// with it (Pdeathsig): nothing writes there; a delete that
			// leaves something behind falls back to fencing it.
			if _, err := env.Store.DeletePrefix(ctx, url+"/"); err == nil {
				if left, err := env.Store.List(ctx, url+"/"); err == nil && len(left) == 0 {
					return claim.Delete(ctx, env.Store, m.Pointer, claim.ReplicaID(m.MigrationID))
				}
			}
		}
	}
	if _, err := DeleteTarget(ctx, env, url); err != nil {
		return fmt.Errorf("runstate: remove the read replica: %w", err)
	}
	return claim.Delete(ctx, env.Store, m.Pointer, claim.ReplicaID(m.MigrationID))
}
