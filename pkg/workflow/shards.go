package workflow

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// ShardInput names one shard of a migration (the Map state's item).
type ShardInput struct {
	MigrationID string `json:"migration_id"`
	Index       int    `json:"index"`
}

// ShardOutput is what a shard step did; the digest stays in staging.
type ShardOutput struct {
	Index   int    `json:"index"`
	Records uint64 `json:"records"`
}

func (o ShardOutput) StepRows() uint64 { return o.Records }

// ExportShard exports the plan's range Index through a reader pinned to the
// Freeze checkpoint.
func ExportShard(ctx context.Context, env runstate.Env, in ShardInput) (ShardOutput, error) {
	return exportShard(ctx, env, in, false)
}

// ExportTransformShard is ExportShard then TransformShard in one read of
// the source, which is what the definition's Map runs: the same two shard
// files (the source-format one is the audit copy) and the same results in
// staging, with the transform on a second core (shard.ExportTransformShard).
func ExportTransformShard(ctx context.Context, env runstate.Env, in ShardInput) (ShardOutput, error) {
	return exportShard(ctx, env, in, true)
}

func exportShard(ctx context.Context, env runstate.Env, in ShardInput, transform bool) (ShardOutput, error) {
	p, err := runstate.ReadPlan(ctx, env, in.MigrationID)
	if err != nil {
		return ShardOutput{}, err
	}
	if p.RollbackOf != "" {
		return ShardOutput{Index: in.Index}, nil // a rollback copies nothing: its target holds the catalog up to the flip
	}
	if in.Index < 0 || in.Index >= len(p.Ranges) {
		return ShardOutput{}, fmt.Errorf("workflow: export: shard %d of %d", in.Index, len(p.Ranges))
	}
	if err := lock.Confirm(ctx, env.Store, p.Pointer, p.MigrationID); err != nil {
		return ShardOutput{}, err
	}
	var t shard.Transformed
	if transform {
		if t, err = transformOf(env, p, in.Index); err != nil {
			return ShardOutput{}, err
		}
	}
	view := catalog.Options{Expect: p.From, Checkpoint: p.Checkpoint, Store: env.SlateDB}
	if p.Checkpoint == "" {
		// A dry run: the latest state, WAL included, as one fixed view.
		view.Store.PollInterval = shard.FixedView
	}
	c, err := catalog.Open(ctx, p.Source, view)
	if err != nil {
		return ShardOutput{}, err
	}
	defer c.Close()
	n, r := len(p.Ranges), p.Ranges[in.Index]
	h := ndjson.Header{CatalogFormat: p.From, ShardIndex: in.Index, ShardCount: n, KeyStart: r.Start, KeyEnd: r.End,
		CheckpointID: p.Checkpoint, Source: p.Source, CreatedBy: env.CreatedBy}
	st := env.StagingOf(in.MigrationID)
	out := st.Shard(p.From, in.Index, n)
	var res shard.ShardResult
	var stats migration.Stats
	if transform {
		res, stats, err = shard.ExportTransformShard(ctx, env.Store, c, h, out, t, env.Progress.Export)
	} else {
		res, err = shard.ExportShard(ctx, env.Store, c, h, out, env.Progress.Export)
	}
	if err != nil {
		return ShardOutput{}, err
	}
	if err := env.Store.PutJSON(ctx, st.ExportResult(in.Index), runstate.ShardResult{Records: res.Records, Digest: res.Digest}); err != nil {
		return ShardOutput{}, err
	}
	if transform {
		if err := putTransformResult(ctx, env, in, stats); err != nil {
			return ShardOutput{}, err
		}
	}
	return ShardOutput{Index: in.Index, Records: res.Records}, nil
}

// transformOf is how shard i of plan p is transformed, with the CLI's
// display counting it.
func transformOf(env runstate.Env, p runstate.Plan, i int) (shard.Transformed, error) {
	policy, err := migration.ParseUnknownTags(p.UnknownTags)
	if err != nil {
		return shard.Transformed{}, err
	}
	path, err := migration.Path(p.From, p.To)
	if err != nil {
		return shard.Transformed{}, fmt.Errorf("workflow: transform: %w", err)
	}
	n := len(p.Ranges)
	return shard.Transformed{
		Out: env.StagingOf(p.MigrationID).ImportShard(p.From, p.To, i, n), To: p.To, Path: path,
		Options: migration.Options{UnknownTags: policy}, CreatedBy: env.CreatedBy, Progress: env.Progress.Transform,
	}, nil
}

func putTransformResult(ctx context.Context, env runstate.Env, in ShardInput, stats migration.Stats) error {
	res := runstate.ShardResult{Records: stats.RecordsOut, Digest: stats.Digest, Carried: stats.Carried, Dropped: stats.Dropped}
	return env.Store.PutJSON(ctx, env.StagingOf(in.MigrationID).TransformResult(in.Index), res)
}

// TransformShard transforms shard Index from the source format to the
// target's, reading the shard ExportShard wrote.
func TransformShard(ctx context.Context, env runstate.Env, in ShardInput) (ShardOutput, error) {
	p, err := runstate.ReadPlan(ctx, env, in.MigrationID)
	if err != nil {
		return ShardOutput{}, err
	}
	if in.Index < 0 || in.Index >= len(p.Ranges) {
		return ShardOutput{}, fmt.Errorf("workflow: transform: shard %d of %d", in.Index, len(p.Ranges))
	}
	if err := lock.Confirm(ctx, env.Store, p.Pointer, p.MigrationID); err != nil {
		return ShardOutput{}, err
	}
	t, err := transformOf(env, p, in.Index)
	if err != nil {
		return ShardOutput{}, err
	}
	if t.Progress != nil {
		t.Options.Read = &t.Progress.Records
	}
	in1 := env.StagingOf(in.MigrationID).Shard(p.From, in.Index, len(p.Ranges))
	stats, err := migration.TransformFile(ctx, env.Store, in1, t.Out, p.To, env.CreatedBy, t.Options)
	if err != nil {
		return ShardOutput{}, err
	}
	if err := putTransformResult(ctx, env, in, stats); err != nil {
		return ShardOutput{}, err
	}
	return ShardOutput{Index: in.Index, Records: stats.RecordsOut}, nil
}
