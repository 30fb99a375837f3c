package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

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
	outcome := history.Succeeded
	if in.DryRun {
		outcome = history.DryRunOK
	} else {
		rec.PointerVersionID = out.PointerVersionID
	}
	if out.Newer != "" {
		rec.Notes = []string{"left behind: " + out.Newer}
	}
	out.HistoryError = recordOneStateRun(ctx, env, rec, err, outcome)
	return out, err
}

func rollback(ctx context.Context, env Env, in RollbackInput, out RollbackOutput, rec *history.Record) (RollbackOutput, error) {
	check := func(ctx context.Context, cur, p pointer.Pointer) error {
		out.From = cur.Catalog
		rec.Source, rec.From, rec.Target, rec.To = cur.Catalog, cur.FormatVersion, p.Catalog, p.FormatVersion
		wb, ok := layout.WayBackOf(cur)
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
	wb, ok := layout.WayBackOf(cur)
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
