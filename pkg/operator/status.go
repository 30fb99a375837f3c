package operator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// PointerStatus is the CLI's status: the pointer, the catalog it names with
// its startup check, the pointer's versions and the migration in progress.
// Its fields are in name order, as its JSON has always been.
type PointerStatus struct {
	// Check is "ok", or the startup check's error on the catalog the
	// pointer names: a status, not a failure of StatusOf.
	Check     string            `json:"check"`
	History   []pointer.Version `json:"history"`
	Migration RunStatus         `json:"migration"`
	Pointer   pointer.Pointer   `json:"pointer"`
	Ref       pointer.Ref       `json:"ref"`
}

// StatusOf reads the pointer at pointerURL, its versions and the migration
// in progress (Status, in env's staging), and runs the startup check on the
// catalog the pointer names; it writes nothing.
func StatusOf(ctx context.Context, env runstate.Env, pointerURL string) (PointerStatus, error) {
	var st PointerStatus
	var err error
	if st.Pointer, st.Ref, err = pointer.Read(ctx, env.Store, pointerURL); err != nil {
		return st, err
	}
	if st.History, err = pointer.History(ctx, env.Store, pointerURL); err != nil {
		return st, err
	}
	if st.Migration, err = Status(ctx, env, pointerURL); err != nil {
		return st, err
	}
	st.Check = "ok"
	if c, err := catalog.Open(ctx, st.Pointer.Catalog, catalog.Options{Expect: st.Pointer.FormatVersion, Store: env.SlateDB}); err != nil {
		st.Check = err.Error()
	} else {
		c.Close()
	}
	return st, nil
}

// RunStatus is what a migration in progress has done so far, read from its
// lock, its record and its staging; nothing is written.
type RunStatus struct {
	// Running: a migration holds the pointer's lock (Lock says which, since
	// when and until when).
	Running bool            `json:"running"`
	Lock    *lock.Lock      `json:"lock,omitempty"`
	Record  *history.Record `json:"record,omitempty"`
	// State is where the run is, as far as its staging tells.
	State string `json:"state,omitempty"`
	// FrozenSource is the source Freeze (or an online run's Fence) fenced
	// and checkpointed ("" before, or in a dry run, which fences nothing).
	FrozenSource string `json:"frozen_source,omitempty"`
	// OnlineSource is an online run's source before its fence: RockLake
	// commits on while the run copies from its snapshot and catches up.
	OnlineSource   string `json:"online_source,omitempty"`
	Checkpoint     string `json:"checkpoint,omitempty"`
	WriterEpoch    uint64 `json:"writer_epoch,omitempty"`
	NextSnapshotID uint64 `json:"next_snapshot_id,omitempty"`
	ShardsTotal    int    `json:"shards_total,omitempty"`
	Exported       int    `json:"shards_exported"`
	Transformed    int    `json:"shards_transformed"`
	Imported       int    `json:"shards_imported"`
	// Pending are the shards not yet through TransformShard: the ones to
	// look at when a Map stalls.
	Pending    []int     `json:"pending_shards,omitempty"`
	Verified   bool      `json:"verified"`
	Decision   string    `json:"decision,omitempty"`
	LastStep   string    `json:"last_step,omitempty"`
	LastStepAt time.Time `json:"last_step_at,omitzero"`
}

// Status reads the migration in progress on the pointer at pointerURL, if
// any: the lock's holder, its record, and its progress in env's staging.
func Status(ctx context.Context, env runstate.Env, pointerURL string) (RunStatus, error) {
	var st RunStatus
	l, _, err := lock.Get(ctx, env.Store, layout.Lock(pointerURL))
	if errors.Is(err, blob.ErrNotFound) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	st.Lock = &l
	if l.MigrationID == "" {
		return st, nil
	}
	st.Running = true
	m := runstate.Migration{Run: runstate.Run{MigrationID: l.MigrationID, Pointer: pointerURL}}
	if _, rec, err := history.Find(ctx, env.Store, pointerURL, l.MigrationID); err == nil {
		st.Record = &rec
		m.To, m.StartedAt = rec.To, rec.Start
	} else if !errors.Is(err, history.ErrNoRecord) {
		return st, err
	}
	if env.Staging == "" {
		st.State = "unknown (no staging location given)"
		return st, nil
	}
	return st, progress(ctx, env, m, &st)
}

// progress fills in st from migration m's staging.
func progress(ctx context.Context, env runstate.Env, m runstate.Migration, st *RunStatus) error {
	stg := env.StagingOf(m.MigrationID)
	infos, err := env.Store.List(ctx, stg.Prefix())
	if err != nil {
		return fmt.Errorf("workflow: status: list %s: %w", stg.Prefix(), err)
	}
	havePlan, haveVerify := false, false
	transformed := map[int]bool{}
	for _, in := range infos {
		switch o := stg.Object(in.URL, 0, 0); {
		case o.Kind == layout.PlanObject:
			havePlan = true
		case o.Kind == layout.VerifyObject:
			haveVerify = true
		case o.Kind == layout.ExportResultObject:
			st.Exported++
		case o.Kind == layout.TransformResultObject:
			st.Transformed++
			if o.Index >= 0 {
				transformed[o.Index] = true
			}
		case o.Kind == layout.TimingObject && in.LastModified.After(st.LastStepAt):
			st.LastStepAt = in.LastModified
			st.LastStep = o.Step
		}
	}
	if d, err := runstate.DecisionOf(ctx, env, m); err == nil {
		st.Decision = d
	}
	if havePlan {
		p, err := runstate.ReadPlan(ctx, env, m.MigrationID)
		if err != nil {
			return err
		}
		st.ShardsTotal, st.Checkpoint = len(p.Ranges), p.Checkpoint
		for i := range p.Ranges {
			if !transformed[i] {
				st.Pending = append(st.Pending, i)
			}
		}
		st.WriterEpoch, st.NextSnapshotID = p.WriterEpoch, p.NextSnapshotID
		switch {
		case p.Checkpoint == "":
		case st.Lock != nil && st.Lock.Online && p.FencedAt.IsZero():
			st.OnlineSource = p.Source
		default:
			st.FrozenSource = p.Source
		}
		var imp workflow.ImportOutput
		if err := env.Store.GetJSON(ctx, stg.ImportResult(), &imp); err == nil {
			st.Imported = imp.ShardsDone
		} else if !errors.Is(err, blob.ErrNotFound) {
			return err
		}
	}
	st.Verified = haveVerify
	switch {
	case st.Decision != "":
		st.State = fmt.Sprintf("%s decided", st.Decision)
	case haveVerify:
		st.State = "verified; Flip (or the dry run's cleanup) next"
	case havePlan && st.ShardsTotal > 0 && st.Imported == st.ShardsTotal:
		st.State = "imported; Finalize and Verify"
	case havePlan && st.Transformed == st.ShardsTotal:
		st.State = fmt.Sprintf("Import (%d/%d shards)", st.Imported, st.ShardsTotal)
	case havePlan:
		st.State = fmt.Sprintf("Shards (exported %d/%d, transformed %d/%d)", st.Exported, st.ShardsTotal, st.Transformed, st.ShardsTotal)
	default:
		st.State = "checked; Freeze"
	}
	return nil
}
