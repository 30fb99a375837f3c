package shard

import (
	"context"
	"fmt"
	"path"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// TransformOptions tune a transform of shard files (the CLI's transform).
type TransformOptions struct {
	To          format.Version
	UnknownTags migration.UnknownTags
	// Concurrency is how many shards are transformed at once.
	Concurrency int
	CreatedBy   string
	// Progress counts the records read and the shards done (nil: none).
	Progress *Progress
}

// TransformResult is what a transform wrote.
type TransformResult struct {
	Input   string            `json:"input"`
	Output  string            `json:"output"`
	To      format.Version    `json:"to"`
	Shards  int               `json:"shards"`
	Records uint64            `json:"records"`
	Stats   []migration.Stats `json:"stats"`
	Digest  ndjson.Digest     `json:"digest"`
}

// Transform is a transform of the shard files of one input, checked and
// ready to write (NewTransform); Run writes it.
type Transform struct {
	input string
	opts  TransformOptions
	urls  []string
	order []int
}

// NewTransform lists the shard files at input (a file, a directory or a
// prefix) and, under the fail policy, refuses unknown tags from their
// trailers before any shard is written (migration.CheckUnknownTags), not
// after the others; it writes nothing. opts.Progress is given the shard
// count and, under the fail policy, the records in all.
func NewTransform(ctx context.Context, store *blob.Store, input string, opts TransformOptions) (*Transform, error) {
	files, err := ListSized(ctx, store, input)
	if err != nil {
		return nil, err
	}
	t := &Transform{input: input, opts: opts, urls: make([]string, len(files))}
	for i, f := range files {
		t.urls[i] = f.URL
	}
	// Largest first: the last shard to finish is then a small one.
	t.order = LargestFirst(files)
	p := opts.Progress
	if p == nil {
		p = new(Progress)
		t.opts.Progress = p
	}
	p.ShardsTotal.Store(int64(len(t.urls)))
	if opts.UnknownTags == migration.UnknownFail {
		records, err := migration.CheckUnknownTags(ctx, store, t.urls)
		if err != nil {
			return nil, err
		}
		p.SetRecordsTotal(records) // the other policies read no trailer up front
	}
	return t, nil
}

// Run transforms every shard into output: a file for a file input, else a
// directory or prefix that gets each shard under its own name.
func (t *Transform) Run(ctx context.Context, store *blob.Store, output string) (TransformResult, error) {
	if layout.IsShardFile(t.input) != layout.IsShardFile(output) {
		return TransformResult{}, fmt.Errorf("%w: %s and %s must both be files, or both directories or prefixes", ErrTransformOutput, t.input, output)
	}
	p := t.opts.Progress
	res := TransformResult{Input: t.input, Output: output, To: t.opts.To, Shards: len(t.urls), Stats: make([]migration.Stats, len(t.urls))}
	err := ForEach(ctx, len(t.urls), t.opts.Concurrency, func(ctx context.Context, next int) error {
		i := t.order[next]
		out := output
		if !layout.IsShardFile(output) {
			out = layout.Join(output, path.Base(t.urls[i]))
		}
		st, err := migration.TransformFile(ctx, store, t.urls[i], out, t.opts.To, t.opts.CreatedBy, migration.Options{UnknownTags: t.opts.UnknownTags, Read: &p.Records})
		res.Stats[i] = st
		if err == nil {
			p.ShardsDone.Add(1)
		}
		return err
	})
	if err != nil {
		return res, err
	}
	for _, st := range res.Stats {
		res.Records += st.RecordsOut
		res.Digest.Merge(st.Digest)
	}
	return res, nil
}
