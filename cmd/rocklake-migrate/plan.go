package main

import (
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/spf13/cobra"

	"context"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func newPlanCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "plan --pointer s3://… (--to vN | --rebuild) [--target-dir URL] [--shards N] [--concurrency K] [--staging s3://…] [--migration-id ID] [--json]",
		Short: "read-only preflight of a migration: every check migrate makes before Freeze, the shards, and the run's duration and AWS cost; writes nothing",
		Example: `  rocklake-migrate plan --pointer s3://b/rocklake/CURRENT --to v2 --shards 16 --concurrency 40
  rocklake-migrate plan --pointer s3://b/rocklake/CURRENT --rebuild --target-dir s3://other-bucket/catalogs/`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	to := fs.String("to", "", "target format (v2)")
	dryRun := fs.Bool("dry-run", false, "plan a dry run")
	shards := fs.Int("shards", 8, "shards to plan")
	concurrency := fs.Int("concurrency", 2, "shards worked on at once (on AWS: the Map's MaxConcurrency)")
	staging := fs.String("staging", "", "staging prefix (default: beside the pointer, …/migrations)")
	unknown := fs.String("unknown-tags", "fail", "unknown tags: fail, carry or drop")
	graceFlag := freezeGraceFlag(fs)
	offline := fs.Bool("offline", false, "plan an offline run (migrate --offline): the source fenced for the whole copy")
	id := fs.String("migration-id", "", "the id migrate will be given (its target path is checked); default: a new one, printed")
	asJSON := jsonFlag(fs, "print the report as JSON")
	rb := newRebuildFlags(fs)
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		v, err := rb.version(*to)
		if err != nil {
			return err
		}
		if *shards < 1 || *concurrency < 1 {
			return usagef("--shards and --concurrency: want 1 or more")
		}
		grace, err := freezeGrace(*graceFlag)
		if err != nil {
			return err
		}
		if *staging == "" {
			*staging = layout.DefaultStaging(*ptr)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		env := runstate.Env{Store: store, Staging: *staging, CreatedBy: createdBy()}
		rep, err := operator.Plan(ctx, env, operator.PlanInput{
			CheckInput: workflow.CheckInput{Pointer: *ptr, TargetVersion: uint64(v), Shards: *shards, DryRun: *dryRun, UnknownTags: *unknown, MigrationID: *id, Trigger: trigger(),
				Rebuild: *rb.rebuild, TargetPrefix: *rb.targetDir, FreezeGrace: grace, Online: onlineSetting(*offline)},
			Concurrency: *concurrency,
		})
		if *asJSON {
			if perr := printJSON(e.stdout, rep); perr != nil {
				return perr
			}
		} else {
			printPlan(e, rep, *staging, *rb.targetDir)
		}
		return err
	})
}

func printPlan(e *env, r operator.PlanReport, staging, targetDir string) {
	w := e.stdout
	kind := ""
	if r.Rebuild {
		kind = " (a rebuild: records moved as they are)"
	}
	fmt.Fprintf(w, "plan for %s → %s%s (migration id %s); nothing was written\n", r.Pointer, r.To, kind, r.MigrationID)
	for _, c := range r.Checks {
		mark := "ok  "
		if !c.OK {
			mark = "FAIL"
		}
		name := ""
		if c.ErrorName != "" && !strings.HasPrefix(c.Detail, c.ErrorName) {
			name = c.ErrorName + ": "
		}
		fmt.Fprintf(w, "  %s %-18s %s%s\n", mark, c.Check, name, c.Detail)
	}
	fmt.Fprintln(w, "  not checked (only a write proves them; migrate's Check does, before touching anything):")
	for _, c := range r.Cannot {
		fmt.Fprintf(w, "       %s\n", c)
	}
	if c := r.Catalog; c != nil {
		fmt.Fprintf(w, "catalog %s: %d objects, %s stored; %d keys, %s of keys and values\n",
			r.Source, c.Objects, bytesHuman(c.StoredBytes), c.Keys, bytesHuman(c.Bytes))
	}
	if len(r.Shards) > 0 {
		fmt.Fprintf(w, "shards: %d, balanced by bytes: the largest %.2f× the mean (block plan: %.2f×; key-range estimate: %.2f×)\n", len(r.Shards), r.Imbalance, r.BlockImbalance, r.KeyRangeImbalance)
		if r.Balance != "bytes" {
			fmt.Fprintf(w, "  Freeze would cut them by %s\n", r.Balance)
		}
		for _, s := range r.Shards {
			fmt.Fprintf(w, "  %3d  %-10s [%s, %s)\n", s.Index, bytesHuman(s.Bytes), s.Start, s.End)
		}
	}
	if est := r.Estimate; est != nil {
		fmt.Fprintf(w, "estimated duration: %s (%s)\n", time.Duration(est.TotalSeconds*float64(time.Second)).Round(100*time.Millisecond), stateTimes(est.Seconds))
		if !r.DryRun {
			how := "offline: from the fence before the copy"
			if r.Online {
				how = "online: from the fence after the copy and the catch-up"
			}
			fmt.Fprintf(w, "estimated write freeze: %s (%s to the flip; RockLake refuses commits meanwhile)\n", time.Duration(est.WriteFreezeSeconds*float64(time.Second)).Round(10*time.Millisecond), how)
		}
		fmt.Fprintf(w, "estimated AWS cost (us-east-1, prices of %s): $%.4f = Lambda $%.4f (%d invocations, %.1f GB-s) + Step Functions $%.4f (%d transitions) + S3 $%.4f (%d writes, %d reads, %.3f GB staged for up to a week)\n",
			est.PricesDate, est.TotalUSD, est.Lambda.USD, est.Lambda.Invocations, est.Lambda.GBSeconds,
			est.StepFunctions.USD, est.StepFunctions.Transitions, est.S3.USD, est.S3.WriteRequests, est.S3.ReadRequests, est.S3.StagingGB)
		fmt.Fprintf(w, "  then the new catalog's storage, while the old one is kept for rollback: $%.4f a month\n", est.S3.TargetUSDPerMonth)
		for _, a := range est.Assumptions {
			fmt.Fprintf(w, "  assumes %s\n", a)
		}
	}
	switch {
	case r.Ready:
		how := "--to " + r.To.String()
		if r.Rebuild {
			how = "--rebuild"
		}
		if targetDir != "" {
			how += " --target-dir " + targetDir
		}
		switch {
		case r.DryRun:
			how += " --dry-run"
		case !r.Online:
			how += " --offline"
		}
		fmt.Fprintf(w, "ready: rocklake-migrate migrate --pointer %s %s --shards %d --staging %s --migration-id %s\n", r.Pointer, how, len(r.Shards), staging, r.MigrationID)
	case !r.NeedsMigration && r.From != 0 && r.From == r.To:
		fmt.Fprintln(w, "nothing to do: the catalog is at the target format")
	default:
		fmt.Fprintln(w, "NOT ready: migrate would refuse (see FAIL above)")
	}
}

// bytesHuman prints n bytes in binary units.
func bytesHuman(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// onlineSetting is the input's online setting for --offline: false when
// given, else left to the input's default (online, but for in place).
func onlineSetting(offline bool) *bool {
	if offline {
		return &[]bool{false}[0]
	}
	return nil
}
