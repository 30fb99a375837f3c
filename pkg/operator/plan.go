package operator

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/estimate"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// PlanInput is a migration as Check would start it, and how many
// shards the run works on at once (the Map's MaxConcurrency on AWS, the
// CLI's --concurrency).
type PlanInput struct {
	workflow.CheckInput
	Concurrency int `json:"concurrency,omitempty"`
}

// ShardEstimate is one planned shard.
type ShardEstimate struct {
	Index int    `json:"index"`
	Start string `json:"start"`
	End   string `json:"end"`
	Bytes int64  `json:"bytes"`
}

// CatalogSize is the source catalog as measured: its objects in S3, and its
// keys and their bytes by a scan.
type CatalogSize struct {
	Objects     int                       `json:"objects"`
	StoredBytes int64                     `json:"stored_bytes"`
	Keys        uint64                    `json:"keys"`
	Bytes       int64                     `json:"bytes"`
	PerTag      map[string]shard.TagBytes `json:"per_tag,omitempty"`
}

// PlanReport is what Preflight found and predicts.
type PlanReport struct {
	// MigrationID: a run with this id (migrate --migration-id) has the
	// target that was checked.
	MigrationID    string         `json:"migration_id"`
	Pointer        string         `json:"pointer"`
	Source         string         `json:"source,omitempty"`
	Target         string         `json:"target,omitempty"`
	From           format.Version `json:"from,omitempty"`
	To             format.Version `json:"to"`
	NeedsMigration bool           `json:"needs_migration"`
	// Rebuild: the run moves the catalog into a new one in its format.
	Rebuild bool `json:"rebuild,omitempty"`
	// DryRun and Online: the run planned (a dry run is never online).
	DryRun bool `json:"dry_run,omitempty"`
	Online bool `json:"online"`
	// Ready: every check passed; a migration would start.
	Ready  bool               `json:"ready"`
	Checks []workflow.Finding `json:"checks"`
	// Cannot is what only a write could prove, which Check does.
	Cannot  []string        `json:"cannot_check_without_writing"`
	Catalog *CatalogSize    `json:"catalog,omitempty"`
	Shards  []ShardEstimate `json:"shards,omitempty"`
	// Balance is how Freeze would cut the shards (shard.PlanBalanced): "blocks"
	// when the SSTs' block indexes can be trusted, else "bytes (why)", or
	// by the counters' estimate.
	Balance string `json:"balance,omitempty"`
	// Imbalance is the largest shard's bytes over the mean, measured by
	// the scan: the byte plan's (the Shards listed), the block plan's
	// (what Freeze uses when Balance is "blocks"; 0 when unusable), and
	// the key-range estimate's.
	Imbalance         float64            `json:"imbalance,omitempty"`
	BlockImbalance    float64            `json:"block_imbalance,omitempty"`
	KeyRangeImbalance float64            `json:"key_range_imbalance,omitempty"`
	Estimate          *estimate.Estimate `json:"estimate,omitempty"`
}

// Plan checks what Check checks before a migration, and measures the
// catalog for the estimates: it writes nothing anywhere (no probe, no lock,
// no record, nothing in the source; its SlateDB reader is read-only). Unlike
// Check it goes on past a failed check, so that one run names every problem;
// the error is the first failure's, with its stable name.
func Plan(ctx context.Context, env runstate.Env, in PlanInput) (PlanReport, error) {
	id := in.MigrationID
	if id == "" {
		id = runstate.NewMigrationID()
	}
	m, found, err := workflow.Preflight(ctx, env, in.CheckInput, id, time.Now())
	rep := PlanReport{
		MigrationID: id, Pointer: in.Pointer, Source: m.Source, Target: m.Target, From: m.From, To: m.To,
		NeedsMigration: m.NeedsMigration, Rebuild: m.Rebuild, DryRun: m.DryRun, Online: m.Online, Ready: err == nil && m.NeedsMigration, Checks: found,
		Cannot: []string{
			"that staging takes writes (Check writes and deletes a probe there before anything is touched)",
			"that the lock can be taken (a conditional write; Check takes it)",
			"that the source can be fenced and checkpointed (Freeze opens it as its writer)",
		},
	}
	if m.Source == "" || m.From == 0 || !m.NeedsMigration {
		return rep, err
	}
	if merr := measure(ctx, env, m, max(in.Concurrency, 1), &rep); merr != nil {
		rep.Checks = append(rep.Checks, workflow.Finding{Check: "measure", ErrorName: runstate.ErrorName(merr), Detail: merr.Error()})
		rep.Ready = false
		if err == nil {
			err = merr
		}
	}
	return rep, err
}

// measure sizes the source (its objects, and a scan of its keys), plans
// the shards as Freeze would and estimates the run.
func measure(ctx context.Context, env runstate.Env, m runstate.Migration, concurrency int, rep *PlanReport) error {
	objs, err := env.Store.List(ctx, strings.TrimSuffix(m.Source, "/")+"/")
	if err != nil {
		return fmt.Errorf("workflow: list %s: %w", m.Source, err)
	}
	size := &CatalogSize{Objects: len(objs), PerTag: map[string]shard.TagBytes{}}
	for _, o := range objs {
		size.StoredBytes += o.Size
	}
	view := catalog.Options{Expect: m.From, Store: env.SlateDB}
	view.Store.PollInterval = shard.FixedView // one fixed view, as a dry run's
	c, err := catalog.Open(ctx, m.Source, view)
	if err != nil {
		return fmt.Errorf("workflow: measure %s: %w", m.Source, err)
	}
	defer c.Close()
	began := time.Now()
	prof, err := shard.Measure(ctx, c, nil)
	if err != nil {
		return err
	}
	rep.Balance = "bytes"
	if took := time.Since(began); took > shard.ByteScanBudget {
		rep.Balance = fmt.Sprintf("key ranges estimated from the counters: this scan took %s, past Freeze's budget of %s", took.Round(time.Second), shard.ByteScanBudget)
	}
	// Freeze tries the block indexes first, of its checkpoint; here, of
	// the latest manifest.
	blocks, berr := slatedb.ProfileBlocks(ctx, m.Source, "", env.SlateDB, shard.MaxBlocks)
	var byBlocks []shard.Range
	if berr == nil {
		var bp *shard.Profile
		if bp, berr = shard.FromBlocks(blocks, m.Shards); berr == nil {
			byBlocks, berr = bp.Ranges(m.Shards)
		}
	}
	if berr != nil {
		if ctx.Err() != nil {
			return berr
		}
		rep.Balance += " (blocks unusable: " + strings.TrimPrefix(berr.Error(), shard.ErrBlocksUnusable.Error()+": ") + ")"
	} else {
		rep.Balance = "blocks"
		rep.BlockImbalance = shard.Imbalance(prof.RangeBytes(byBlocks))
	}
	size.Keys, size.Bytes = prof.Keys, prof.Bytes
	for t, tb := range prof.PerTag {
		size.PerTag[t.String()] = tb
	}
	rep.Catalog = size
	ranges, err := prof.Ranges(m.Shards)
	if err != nil {
		return err
	}
	sizes := prof.RangeBytes(ranges)
	for i, r := range ranges {
		rep.Shards = append(rep.Shards, ShardEstimate{Index: i, Start: hex.EncodeToString(r.Start), End: hex.EncodeToString(r.End), Bytes: sizes[i]})
	}
	rep.Imbalance = shard.Imbalance(sizes)
	if byKeys, err := shard.Plan(ctx, c, m.Shards); err == nil {
		rep.KeyRangeImbalance = shard.Imbalance(prof.RangeBytes(byKeys))
	}
	imbalance, ssts := rep.Imbalance, 0
	if rep.Balance == "blocks" {
		imbalance, ssts = rep.BlockImbalance, blocks.SSTs
	}
	est, err := estimate.Run(estimate.Input{
		Rows: prof.Keys, Bytes: prof.Bytes, StoredBytes: size.StoredBytes, Objects: size.Objects,
		Shards: m.Shards, Concurrency: concurrency, Imbalance: imbalance, SSTs: ssts, DryRun: m.DryRun,
		FreezeGraceSeconds: m.FreezeGrace, ReadReplica: m.ReadReplica, Online: m.Online,
		Definition: statemachine.Migration,
	})
	if err != nil {
		return err
	}
	rep.Estimate = &est
	return nil
}
