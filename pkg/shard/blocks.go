package shard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// ErrBlocksUnusable: a block profile cannot be trusted to balance shards
// (no compacted data, too much of it still in the WAL, too few blocks per
// shard); the caller balances another way (a byte scan).
var ErrBlocksUnusable = errors.New("shard: the SST block profile cannot balance the shards")

// Thresholds of a usable block profile.
const (
	// MaxBlocks is how many blocks PlanByBlocks asks for: cuts land within
	// about 1/MaxBlocks of the total of where they should.
	MaxBlocks = 1 << 16
	// minBlocksPerShard: fewer, and one block's share of a shard is too
	// coarse a step to balance by.
	minBlocksPerShard = 32
	// The WAL beyond the compacted SSTs is data the profile cannot place:
	// tolerated up to walShareOfShard of a shard, or walTolerated bytes.
	walTolerated    = 1 << 20
	walShareOfShard = 10
)

// FromBlocks builds a profile from the blocks of a database's compacted
// SSTs, for cutting it into n shards: each block's stored bytes counted at
// its start key. Blocks of different SSTs overlap in key space (L0 SSTs
// with everything, sorted runs with each other); sorted by their starts,
// each block's bytes are where its keys begin, which is what balancing
// needs. Bytes are stored bytes (the engine's encoding, compressed if the
// database compresses), not keys' and values' lengths as Measure counts
// them; Keys and PerTag are not known. The profile is ErrBlocksUnusable
// when it cannot be trusted for n shards.
func FromBlocks(b slatedb.Blocks, n int) (*Profile, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard: plan: %d shards: need at least 1", n)
	}
	var total int64
	for _, bl := range b.Blocks {
		total += bl.Bytes
	}
	switch {
	case len(b.Blocks) == 0 || total == 0:
		return nil, fmt.Errorf("%w: no compacted SST holds data", ErrBlocksUnusable)
	case b.WALBytes > walTolerated && b.WALBytes > total/int64(n)/walShareOfShard:
		return nil, fmt.Errorf("%w: %d bytes in %d WAL SSTs are in no compacted SST (more than 1/%d of a shard of %d bytes)", ErrBlocksUnusable, b.WALBytes, b.WALSSTs, walShareOfShard, total/int64(n))
	case len(b.Blocks)*b.Merged < minBlocksPerShard*n:
		// Merged blocks are still the SSTs' blocks: their count before the
		// merge is what says how fine the profile could be.
		return nil, fmt.Errorf("%w: %d blocks for %d shards, fewer than %d a shard", ErrBlocksUnusable, len(b.Blocks)*b.Merged, n, minBlocksPerShard)
	}
	bs := slices.Clone(b.Blocks)
	slices.SortStableFunc(bs, func(x, y slatedb.Block) int { return bytes.Compare(x.Start, y.Start) })
	p := &Profile{Bytes: total, PerTag: map[format.Tag]TagBytes{}, samples: make([]sample, 0, len(bs))}
	var before int64
	for _, bl := range bs {
		p.samples = append(p.samples, sample{bl.Start, before})
		before += bl.Bytes
		p.step = max(p.step, bl.Bytes)
	}
	return p, nil
}

// PlanByBlocks plans n ranges of about equal bytes from the SST indexes of
// the database at url as checkpoint checkpointID holds it ("": its latest
// state): a read of each SST's index, whatever the row count, where
// PlanByBytes scans every key. ErrBlocksUnusable when the profile cannot
// be trusted (FromBlocks).
func PlanByBlocks(ctx context.Context, url, checkpointID string, opts slatedb.Options, n int) ([]Range, error) {
	b, err := slatedb.ProfileBlocks(ctx, url, checkpointID, opts, MaxBlocks)
	if err != nil {
		return nil, fmt.Errorf("shard: plan by blocks %s: %w", url, err)
	}
	p, err := FromBlocks(b, n)
	return planOf(p, err, n)
}
