package main

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func newMigrateCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "migrate --pointer s3://… (--to vN | --rebuild) [--target-dir URL] [--dry-run | --postpone-flip] [--shards N] [--concurrency K] [--offline | --in-place [--in-place-max-bytes N]]",
		Short: "run the migration workflow (statemachine/migration.asl.json) locally",
		Example: `  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --shards 16 --dry-run
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --postpone-flip
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --offline
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --to v2 --in-place
  rocklake-migrate migrate --pointer s3://b/rocklake/CURRENT --rebuild --target-dir s3://other-bucket/catalogs/`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	to := fs.String("to", "", "target format (v2)")
	dryRun := fs.Bool("dry-run", false, "stop after Verify: the pointer stays, the new catalog is removed")
	postpone := fs.Bool("postpone-flip", false, "stop after Verify at the gate, the source frozen and the lock held, until `approve ID` flips or `abort ID` cleans up")
	shards := fs.Int("shards", 8, "shards to export, transform and import")
	replica := fs.Bool("read-replica", true, "at Freeze, copy the frozen source into a read replica beside it (server side) that `serve` answers reads from until the flip or the abort; --read-replica=false makes none. With --online none unless asked for (--read-replica): its copy would be most of the write freeze")
	concurrency := fs.Int("concurrency", 2, "shards worked on at once")
	staging := fs.String("staging", "", "staging prefix (default: beside the pointer, …/migrations)")
	unknown := fs.String("unknown-tags", "fail", "unknown tags: fail, carry or drop")
	topic := fs.String("sns-topic", "", "SNS topic ARN for the outcome message")
	asJSON := jsonFlag(fs, "print the report as JSON on stdout, and progress as JSON events on stderr")
	id := fs.String("migration-id", "", "the migration's id (default: a new one); reusing one resumes or repeats that migration")
	inPlace := fs.Bool("in-place", false, "Strategy A: migrate the catalog where it lies, in one atomic batch, after copying it as it was beside it (the way back rollback flips to; small catalogs)")
	auto := fs.Bool("in-place-auto", false, "Strategy A if the catalog's transformed keys and values fit --in-place-max-bytes, else Strategy B (measured first, read-only)")
	maxBytes := fs.Int64("in-place-max-bytes", inplace.DefaultMaxBytes, "with --in-place: refuse, writing nothing, a catalog whose transformed keys and values pass this many bytes; with --in-place-auto: the size up to which A is chosen")
	online := fs.Bool("online", true, "copy while RockLake keeps committing (from a snapshot), catch up in rounds until one is small, and fence the source only for the last round: writes freeze for seconds, not the whole copy (the default, but for --in-place)")
	offline := fs.Bool("offline", false, "fence the source for the whole copy (the same as --online=false): writes freeze from the start to the flip")
	maxKeys := fs.Int("catch-up-max-keys", runstate.DefaultCatchUpMaxKeys, "online: fence once a catch-up round carries at most this many keys")
	maxTime := fs.Duration("catch-up-max-time", time.Duration(runstate.DefaultCatchUpMaxSeconds*float64(time.Second)), "online: …and takes at most this long")
	maxRounds := fs.Int("catch-up-max-rounds", runstate.DefaultCatchUpMaxRounds, "online: fence after this many rounds anyway (the writers outpaced the catch-up)")
	graceFlag := freezeGraceFlag(fs)
	rb := newRebuildFlags(fs)
	return setup(e, c, 12*time.Hour, 0, func(ctx context.Context, args []string) error {
		grace, err := needPointerAndGrace(*ptr, *graceFlag)
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
		if *offline && fs.Changed("online") && *online {
			return usagef("--online and --offline exclude each other")
		}
		if *inPlace && fs.Changed("online") && *online {
			return usagef("--online copies while the source takes writes; --in-place migrates it where it lies: choose one")
		}
		setting := onlineSetting(*offline) // left out: the input's default
		if fs.Changed("online") {
			setting = online
		}
		on := setting == nil && !*inPlace || setting != nil && *setting
		if on && !fs.Changed("read-replica") {
			replica = nil // the input's default for an online run: none
		}
		if *maxKeys < 0 || *maxTime < 0 || *maxRounds < 1 {
			return usagef("--catch-up-max-keys and --catch-up-max-time take no negative value, --catch-up-max-rounds at least 1")
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
		env := runstate.Env{Store: store, Staging: *staging, CreatedBy: createdBy()}
		rep, err := localrun.Run(ctx, env, localrun.Options{
			Check: workflow.CheckInput{Pointer: *ptr, TargetVersion: uint64(v), Shards: *shards, DryRun: *dryRun, PostponeFlip: *postpone, UnknownTags: *unknown, MigrationID: *id, Trigger: trigger(),
				Rebuild: *rb.rebuild, TargetPrefix: *rb.targetDir, FreezeGrace: grace, ReadReplica: replica,
				InPlace: *inPlace, InPlaceAuto: *auto, InPlaceMaxBytes: *maxBytes,
				Online: setting, CatchUp: runstate.CatchUpLimits{MaxKeys: *maxKeys, MaxSeconds: maxTime.Seconds(), MaxRounds: *maxRounds}},
			Topic: *topic, Concurrency: *concurrency, Log: e.stderr,
			Display: func() localrun.Display { return e.progress(*asJSON) },
		})
		if rep == nil {
			return err
		}
		if *asJSON {
			if perr := printJSON(e.stdout, rep); perr != nil {
				return perr
			}
			return err
		}
		printMigrateReport(e, *rep)
		if r := rep.InPlace; r != nil && r.Records > 0 {
			fmt.Fprintf(e.stdout, "in place: %d keys in format %s (%d bytes), %d format-%s keys deleted, one batch of %d bytes", r.Records, r.To, r.Bytes, r.Deleted, r.From, r.BatchBytes)
			if wb := r.WayBack; wb != nil {
				fmt.Fprintf(e.stdout, "; the way back is %s, the format-%s catalog as it was (%d objects, %d bytes copied; rocklake-migrate rollback --pointer %s names it)", wb.Catalog, r.From, wb.Objects, wb.Bytes, *ptr)
			}
			fmt.Fprintln(e.stdout)
		}
		return err
	})
}

func printMigrateReport(e *env, r localrun.Report) {
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
	printOnline(e.stdout, r.Online, "")
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
