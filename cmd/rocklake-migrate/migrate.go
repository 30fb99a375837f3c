package main

import (
	"github.com/spf13/cobra"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/progress"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// migrateReport is migrate's final report.
type migrateReport struct {
	MigrationID      string             `json:"migration_id"`
	Outcome          string             `json:"outcome"`
	Source           string             `json:"source,omitempty"`
	Target           string             `json:"target,omitempty"`
	From             format.Version     `json:"from,omitempty"`
	To               format.Version     `json:"to,omitempty"`
	Counts           map[string]uint64  `json:"counts,omitempty"`
	Digest           string             `json:"digest,omitempty"`
	PointerVersionID string             `json:"pointer_version_id,omitempty"`
	StateSeconds     map[string]float64 `json:"state_seconds"`
	Error            string             `json:"error,omitempty"`
	// NotifyError: the outcome message could not be sent. It does not
	// change the outcome, which is what happened to the pointer.
	NotifyError string `json:"notify_error,omitempty"`
	// HistoryError: the run's record beside the pointer could not be
	// finished. It does not change the outcome either.
	HistoryError string `json:"history_error,omitempty"`
	// WouldFence: a dry run touches nothing in the source; this says what a
	// real run would fence.
	WouldFence string `json:"would_fence,omitempty"`
	// Carried and Dropped: records of unknown tags, by tag.
	Carried map[string]uint64 `json:"carried_unknown,omitempty"`
	Dropped map[string]uint64 `json:"dropped_unknown,omitempty"`
	// Gate: the migration waits at the gate (--postpone-flip); GateHow
	// says how to approve or abort it.
	Gate    *workflow.GateRecord `json:"gate,omitempty"`
	GateHow string               `json:"gate_instructions,omitempty"`
	// InPlace: what a Strategy A (--in-place) run did.
	InPlace *inplace.Result `json:"in_place,omitempty"`
}

func newMigrateCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "migrate --pointer s3://… (--to vN | --rebuild) [--target-dir URL] [--dry-run | --postpone-flip] [--shards N] [--concurrency K] [--in-place [--in-place-max-bytes N]]",
		Short: "run the migration workflow (statemachine/migration.asl.json) locally",
		Example: `  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --shards 16 --dry-run
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --postpone-flip
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --in-place
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --rebuild --target-dir s3://other-bucket/catalogs/`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	to := fs.String("to", "", "target format (v2)")
	dryRun := fs.Bool("dry-run", false, "stop after Verify: the pointer stays, the new catalog is removed")
	postpone := fs.Bool("postpone-flip", false, "stop after Verify at the gate, the source frozen and the lock held, until `approve ID` flips or `abort ID` cleans up")
	shards := fs.Int("shards", 8, "shards to export, transform and import")
	replica := fs.Bool("read-replica", true, "at Freeze, copy the frozen source into a read replica beside it (server side) that `serve` answers reads from until the flip or the abort; --read-replica=false makes none")
	concurrency := fs.Int("concurrency", 2, "shards worked on at once")
	staging := fs.String("staging", "", "staging prefix (default: beside the pointer, …/migrations)")
	unknown := fs.String("unknown-tags", "fail", "unknown tags: fail, carry or drop")
	topic := fs.String("sns-topic", "", "SNS topic ARN for the outcome message")
	asJSON := jsonFlag(fs, "print the report as JSON on stdout, and progress as JSON events on stderr")
	id := fs.String("migration-id", "", "the migration's id (default: a new one); reusing one resumes or repeats that migration")
	inPlace := fs.Bool("in-place", false, "Strategy A: migrate the catalog where it lies, in one atomic batch, after copying it as it was beside it (the way back rollback flips to; small catalogs)")
	auto := fs.Bool("in-place-auto", false, "Strategy A if the catalog's transformed keys and values fit --in-place-max-bytes, else Strategy B (measured first, read-only)")
	maxBytes := fs.Int64("in-place-max-bytes", inplace.DefaultMaxBytes, "with --in-place: refuse, writing nothing, a catalog whose transformed keys and values pass this many bytes; with --in-place-auto: the size up to which A is chosen")
	graceFlag := freezeGraceFlag(fs)
	rb := newRebuildFlags(fs)
	return setup(e, c, 12*time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		grace, err := freezeGrace(*graceFlag)
		if err != nil {
			return err
		}
		if *maxBytes <= 0 {
			return usagef("--in-place-max-bytes: %d is not a positive number of bytes", *maxBytes)
		}
		v, err := rb.version(*to)
		if err != nil {
			return err
		}
		if (*inPlace || *auto) && (*rb.rebuild || *rb.targetDir != "") {
			return usagef("--in-place and --in-place-auto make no new catalog: they exclude --rebuild and --target-dir")
		}
		if *inPlace && *auto {
			return usagef("--in-place and --in-place-auto exclude each other: one forces Strategy A, the other chooses")
		}
		if *dryRun && *postpone {
			return usagef("--dry-run and --postpone-flip exclude each other: a dry run never flips")
		}
		if *staging == "" {
			*staging = layout.DefaultStaging(*ptr)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		var publish workflow.Publish
		if *topic != "" {
			if publish, err = workflow.SNSPublish(ctx); err != nil {
				return err
			}
		}
		if *id == "" {
			// Chosen here, so that every report names the migration, even
			// one that Check refused.
			*id = workflow.NewMigrationID()
		}
		m, err := workflow.LoadLocal(*topic)
		if err != nil {
			return err
		}
		env := workflow.Env{Store: store, Staging: *staging, CreatedBy: createdBy()}
		check := workflow.CheckInput{Pointer: *ptr, TargetVersion: uint64(v), Shards: *shards, DryRun: *dryRun, PostponeFlip: *postpone, UnknownTags: *unknown, MigrationID: *id, Trigger: trigger(),
			Rebuild: *rb.rebuild, TargetPrefix: *rb.targetDir, FreezeGrace: grace, ReadReplica: replica}
		if *auto {
			// Chosen here, read-only, since the CLI runs A and B differently;
			// Check then runs with the choice made.
			a, why, err := workflow.ChooseInPlace(ctx, env, workflow.CheckInput{Pointer: *ptr, TargetVersion: uint64(v), UnknownTags: *unknown, InPlaceMaxBytes: *maxBytes})
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stderr, "strategy: %s\n", why)
			*inPlace = a
		}
		if *inPlace {
			check.InPlace, check.InPlaceMaxBytes = true, *maxBytes
			return migrateInPlace(ctx, e, env, check, publish, *topic, *asJSON)
		}
		in, _ := json.Marshal(check)

		var mu sync.Mutex
		times := map[string]float64{}
		// Known as soon as Check is done, so that every report names the
		// migration, a failed one too.
		var checked workflow.Migration
		var verified json.RawMessage // the state after Verify, for a run that stops at the gate
		// Progress: a line per top-level state as it starts and ends, and
		// the long steps as stages: export and transform (the Shards map,
		// by shard: their totals are not known up front), import and
		// verify (by rows, totals from the shards).
		d := e.progress(*asJSON)
		var exportP, transformP, importP, verifyP shard.Progress
		env.Progress = workflow.Progress{Export: &exportP, Transform: &transformP, Import: &importP, Verify: &verifyP}
		stages := map[string]*progress.Stage{}
		start := func(name string, p *shard.Progress) {
			if stages[name] == nil { // Import loops until done: one stage
				stages[name] = d.Stage(name, "rows", p)
			}
		}
		failed := func(ev asl.StateEvent) error {
			if ev.Output != nil {
				return nil
			}
			return fmt.Errorf("%s: %s", ev.Error, ev.Cause)
		}
		obs := asl.ObserverFuncs{
			Entered: func(ev asl.StateEvent) {
				if len(ev.MapIndex) > 0 {
					return
				}
				d.State(ev.Name, false, ev.Time, 0)
				mu.Lock()
				defer mu.Unlock()
				switch ev.Name {
				case "Shards":
					exportP.ShardsTotal.Store(int64(*shards))
					transformP.ShardsTotal.Store(int64(*shards))
					start("export", &exportP)
					start("transform", &transformP)
				case "Import":
					start("import", &importP)
				case "Verify":
					start("verify", &verifyP)
				}
			},
			Exited: func(ev asl.StateEvent) {
				mu.Lock()
				defer mu.Unlock()
				times[ev.Name] += ev.Duration.Seconds()
				switch {
				case (ev.Name == "ExportTransformShard" || ev.Name == "TransformShard") && ev.Output != nil:
					transformP.ShardsDone.Add(1)
				case len(ev.MapIndex) > 0:
					return
				case ev.Name == "Check" && ev.Output != nil:
					var st struct {
						Migration workflow.Migration `json:"migration"`
					}
					if json.Unmarshal(ev.Output, &st) == nil {
						checked = st.Migration
					}
				case ev.Name == "Shards":
					stages["export"].Stop(failed(ev))
					stages["transform"].Stop(failed(ev))
				case ev.Name == "Import":
					var st struct {
						Import workflow.ImportOutput `json:"import"`
					}
					if ev.Output == nil || json.Unmarshal(ev.Output, &st) != nil || st.Import.Done {
						stages["import"].Stop(failed(ev))
					}
				case ev.Name == "Verify":
					stages["verify"].Stop(failed(ev))
					verified = ev.Output // the state after Verify, for a run that stops at the gate
				}
				if len(ev.MapIndex) == 0 {
					d.State(ev.Name, true, ev.Time, ev.Duration)
				}
			},
		}
		out, runErr := asl.Run(ctx, m, in, asl.Options{Tasks: workflow.LocalTasks(env, publish), Observer: obs, MaxConcurrency: *concurrency})
		for _, st := range stages {
			st.Stop(runErr) // a no-op for a stage already ended
		}
		d.Close()
		rep := migrateReport{StateSeconds: times, Outcome: "migrated"}
		if runErr != nil && ctx.Err() != nil && checked.NeedsMigration {
			// Interrupted (a signal, the deadline): the state machine's own
			// Abort did not run. Run it on a fresh context so that no
			// checkpoint, staging, lock or half-made target is left; it
			// refuses to touch a target the pointer already names.
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			ab, err := workflow.Abort(actx, env, workflow.AbortInput{Migration: checked, Error: map[string]any{"Error": "Interrupted", "Cause": runErr.Error()}})
			cancel()
			if err != nil {
				runErr = fmt.Errorf("%w; the cleanup after the interruption failed too: %w", runErr, err)
			} else {
				runErr = fmt.Errorf("%w; cleaned up after the interruption (%d target and %d staging objects removed)", runErr, ab.TargetObjects, ab.StagingObjects)
			}
		}
		var state struct {
			Migration   workflow.Migration             `json:"migration"`
			Verify      workflow.VerifyOutput          `json:"verify"`
			Flip        workflow.FlipOutput            `json:"flip"`
			NotifyError *struct{ Error, Cause string } `json:"notify_error"`
		}
		state.Migration = checked
		if state.Migration.MigrationID == "" {
			state.Migration.MigrationID = *id
		}
		var suspended *asl.Suspended
		if errors.As(runErr, &suspended) {
			// At the gate: the run is over for this process, not failed.
			rec, err := workflow.RecordSuspension(ctx, env, *id, suspended)
			if err != nil {
				return fmt.Errorf("migrate: migration %s waits at the gate, but its run could not be recorded for approve (abort %s still works): %w", *id, *id, err)
			}
			runErr, out = nil, verified
			rep.Outcome, rep.Gate, rep.GateHow = "waiting at the gate for approve or abort", &rec, workflow.GateInstructions(rec)
		}
		if runErr == nil {
			if err := json.Unmarshal(out, &state); err != nil {
				return fmt.Errorf("migrate: the run's output: %w", err)
			}
		}
		if state.NotifyError != nil {
			rep.NotifyError = state.NotifyError.Error + ": " + state.NotifyError.Cause
		}
		rep.MigrationID, rep.Source, rep.Target = state.Migration.MigrationID, state.Migration.Source, state.Migration.Target
		rep.From, rep.To, rep.Counts, rep.Digest = state.Migration.From, state.Migration.To, state.Verify.Counts, state.Verify.Digest
		rep.PointerVersionID = state.Flip.PointerVersionID
		rep.HistoryError = state.Flip.HistoryError
		rep.WouldFence = state.Migration.WouldFence
		rep.Carried, rep.Dropped = state.Verify.Carried, state.Verify.Dropped
		switch {
		case runErr != nil:
			rep.Outcome, rep.Error = "failed", runErr.Error()
		case !state.Migration.NeedsMigration:
			rep.Outcome = "nothing to do"
		case state.Migration.DryRun:
			rep.Outcome = "dry run verified (pointer unchanged)"
		case state.Migration.Rebuild:
			rep.Outcome = "rebuilt"
		}
		if *asJSON {
			if err := printJSON(e.stdout, rep); err != nil {
				return err
			}
		} else {
			printMigrateReport(e, rep)
		}
		var ee *asl.ExecutionError
		if errors.As(runErr, &ee) && ee.Name == format.NameVersionMismatch {
			if v == 0 { // a rebuild's: the format the pointer names
				v = state.Migration.To
			}
			return &format.FormatVersionMismatch{Found: uint64(state.Migration.From), Expected: uint64(v)}
		}
		return runErr
	})
}

func printMigrateReport(e *env, r migrateReport) {
	fmt.Fprintf(e.stdout, "\nmigration %s: %s\n", r.MigrationID, r.Outcome)
	if r.Source != "" && r.Target != "" {
		fmt.Fprintf(e.stdout, "  %s (%s) → %s (%s)\n", r.Source, r.From, r.Target, r.To)
	}
	if len(r.Counts) > 0 {
		fmt.Fprintln(e.stdout, "rows per table:")
		printCounts(e, r.Counts)
		fmt.Fprintf(e.stdout, "digest %s\n", r.Digest)
	}
	if r.PointerVersionID != "" {
		fmt.Fprintf(e.stdout, "pointer version %s\n", r.PointerVersionID)
	}
	if r.Error != "" {
		fmt.Fprintf(e.stdout, "error: %s\n", r.Error)
	}
	for _, u := range []struct {
		verb   string
		counts map[string]uint64
	}{{"carried", r.Carried}, {"DROPPED", r.Dropped}} {
		for tag, n := range u.counts {
			fmt.Fprintf(e.stdout, "unknown tags: %s %d records of %s\n", u.verb, n, tag)
		}
	}
	if r.GateHow != "" {
		fmt.Fprintf(e.stdout, "\n%s", r.GateHow)
	}
	if r.WouldFence != "" {
		fmt.Fprintf(e.stdout, "the source was not touched; %s\n", r.WouldFence)
	}
	if r.HistoryError != "" {
		fmt.Fprintf(e.stdout, "WARNING: the run's record was not finished (the outcome stands; the pointer's versions name the migration): %s\n", r.HistoryError)
	}
	if r.NotifyError != "" {
		fmt.Fprintf(e.stdout, "warning: the outcome message was not sent (the outcome stands): %s\n", r.NotifyError)
	}
	fmt.Fprintf(e.stdout, "time per state (Map items summed): %s\n", stateTimes(r.StateSeconds))
}
