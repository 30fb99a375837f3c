package shard

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// ErrNoShards: nothing at the input looks like a shard file.
var ErrNoShards = errors.New("shard: no shard files at input")

// List finds the shard files of input: the file itself, or the shard files
// directly under a directory or S3 prefix, in index order.
func List(ctx context.Context, store *blob.Store, input string) ([]string, error) {
	files, err := ListSized(ctx, store, input)
	if err != nil {
		return nil, err
	}
	urls := make([]string, len(files))
	for i, f := range files {
		urls[i] = f.URL
	}
	return urls, nil
}

// ListSized is List with each file's size (0 for a single file given as
// input: there is nothing to order it against).
func ListSized(ctx context.Context, store *blob.Store, input string) ([]blob.Info, error) {
	if layout.IsShardFile(input) {
		return []blob.Info{{URL: input}}, nil
	}
	prefix := strings.TrimSuffix(input, "/") + "/"
	infos, err := store.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("shard: list %s: %w", input, err)
	}
	var files []blob.Info
	for _, in := range infos {
		rest := strings.TrimPrefix(in.URL, prefix)
		if !strings.Contains(rest, "/") && layout.IsShardName(rest) {
			files = append(files, in)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoShards, input)
	}
	return files, nil
}

// LargestFirst orders the files' positions by size, largest first (ties in
// the order given): the order to start work on shards of uneven size in, so
// that the last to finish is a small one and the CPUs stay busy to the end.
func LargestFirst(files []blob.Info) []int {
	order := make([]int, len(files))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return files[order[a]].Size > files[order[b]].Size })
	return order
}

// Headers reads every shard's header and checks that together they are one
// whole export: the same source, checkpoint and format, indexes 0..n-1 each
// once. It returns the headers in index order with their URLs.
func Headers(ctx context.Context, store *blob.Store, urls []string) ([]ndjson.Header, []string, error) {
	if len(urls) == 0 {
		return nil, nil, ErrNoShards
	}
	var hs []ndjson.Header
	for _, u := range urls {
		fr, err := ndjson.Open(ctx, store, u)
		if err != nil {
			return nil, nil, fmt.Errorf("shard: %s: %w", u, err)
		}
		hs = append(hs, fr.Header())
		fr.Close()
	}
	n := hs[0].ShardCount
	if n != len(hs) {
		return nil, nil, fmt.Errorf("%w: the shards say there are %d, %d given", ErrIncompleteSet, n, len(hs))
	}
	ordered := make([]ndjson.Header, n)
	orderedURLs := make([]string, n)
	seen := make([]bool, n)
	for i, h := range hs {
		switch {
		case h.ShardCount != n:
			return nil, nil, fmt.Errorf("%w: %s says %d shards, %s says %d", ErrIncompleteSet, urls[i], h.ShardCount, urls[0], n)
		case h.CatalogFormat != hs[0].CatalogFormat:
			return nil, nil, fmt.Errorf("%w: %s is format %s, %s is %s", ErrIncompleteSet, urls[i], h.CatalogFormat, urls[0], hs[0].CatalogFormat)
		case h.Source != hs[0].Source || h.CheckpointID != hs[0].CheckpointID:
			return nil, nil, fmt.Errorf("%w: %s comes from %s@%s, %s from %s@%s", ErrIncompleteSet,
				urls[i], h.Source, h.CheckpointID, urls[0], hs[0].Source, hs[0].CheckpointID)
		case h.ShardIndex < 0 || h.ShardIndex >= n:
			return nil, nil, fmt.Errorf("%w: %s has index %d of %d", ErrIncompleteSet, urls[i], h.ShardIndex, n)
		case seen[h.ShardIndex]:
			return nil, nil, fmt.Errorf("%w: shard %d given twice (%s)", ErrIncompleteSet, h.ShardIndex, urls[i])
		}
		seen[h.ShardIndex] = true
		ordered[h.ShardIndex], orderedURLs[h.ShardIndex] = h, urls[i]
	}
	rs := make([]Range, n)
	for i, h := range ordered {
		rs[i] = Range{Index: i, Start: h.KeyStart, End: h.KeyEnd}
	}
	if err := CheckRanges(rs); err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrIncompleteSet, err)
	}
	return ordered, orderedURLs, nil
}
