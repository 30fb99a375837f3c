package slatedb

/*
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"unsafe"
)

// Block is one data block of a compacted SST (or, past ProfileBlocks'
// bound, a run of adjacent blocks of one SST).
type Block struct {
	// Start is where the block starts in key order: the SST's first key for
	// its first block, else the index's separator (after the previous
	// block's last key, at most this block's first), raised to the start
	// of the SST's visible range when a view shows only part of it.
	Start []byte
	// Bytes is the block's stored size (as in the SST, compressed if the
	// database compresses).
	Bytes int64
	// SST is the SST's ULID (hex of its 16 bytes); SortedRun is the sorted
	// run it belongs to, -1 for L0.
	SST       string
	SortedRun int64
}

// Blocks is where a database's bytes lie in key order, from its SSTs'
// indexes.
type Blocks struct {
	// ManifestID is the manifest profiled (the checkpoint's, or the latest).
	ManifestID uint64
	// SSTs is how many compacted SST views were profiled.
	SSTs int
	// Blocks, in manifest order: L0 SSTs newest first, then each sorted run
	// in key order; within an SST in key order. SSTs overlap in key space
	// (L0 with everything, sorted runs with each other).
	Blocks []Block
	// Merged is how many adjacent blocks of an SST each Block stands for
	// (1: none merged).
	Merged int
	// WALSSTs and WALBytes are the WAL SSTs a reader of the checkpoint (or
	// of the latest state) replays: data in no compacted SST, so not in
	// Blocks.
	WALSSTs  int
	WALBytes int64
}

// ProfileBlocks reads the index of every compacted SST of the database at
// url, as checkpoint checkpointID holds it ("": its latest manifest): the
// stored bytes of each data block in key order, at a cost of one small read
// per SST whatever the row count. maxBlocks bounds the blocks returned
// (adjacent blocks of an SST are merged past it; 0: no bound), though never
// below one block per SST. It writes nothing. A checkpoint that does not
// exist is ErrCheckpointMissing; a database that lives partly elsewhere (a
// SlateDB clone, a WAL in another store) is ErrInvalid.
func ProfileBlocks(ctx context.Context, url, checkpointID string, opts Options, maxBlocks int) (Blocks, error) {
	if err := useS3(ctx, "profile blocks", url); err != nil {
		return Blocks{}, err
	}
	curl, copts, cid := C.CString(url), C.CString(opts.json()), C.CString(checkpointID)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	defer C.free(unsafe.Pointer(cid))
	var out *C.uint8_t
	var n C.size_t
	err := native(ctx, "profile blocks", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_block_profile(curl, copts, cid, C.size_t(max(maxBlocks, 0)), t, c, &out, &n, e)
	})
	if err != nil {
		return Blocks{}, err
	}
	b, err := decodeBlocks(takeBytes(out, n))
	if err != nil {
		return Blocks{}, fmt.Errorf("slatedb: profile blocks of %s: %w", url, err)
	}
	return b, nil
}

// errShortProfile: the native profile ended early (a binding bug).
var errShortProfile = errors.New("block profile is truncated")

// decodeBlocks reads the native profile (native/include/rocklake_slatedb.h).
func decodeBlocks(raw []byte) (Blocks, error) {
	le := binary.LittleEndian
	take := func(n int) ([]byte, error) {
		if len(raw) < n {
			return nil, errShortProfile
		}
		b := raw[:n]
		raw = raw[n:]
		return b, nil
	}
	head, err := take(40)
	if err != nil {
		return Blocks{}, err
	}
	out := Blocks{
		ManifestID: le.Uint64(head[0:]),
		SSTs:       int(le.Uint64(head[8:])),
		WALSSTs:    int(le.Uint64(head[16:])),
		WALBytes:   int64(le.Uint64(head[24:])),
		Merged:     int(le.Uint32(head[32:])),
	}
	count := int(le.Uint32(head[36:]))
	out.Blocks = make([]Block, 0, count)
	for range count {
		kl, err := take(4)
		if err != nil {
			return Blocks{}, err
		}
		key, err := take(int(le.Uint32(kl)))
		if err != nil {
			return Blocks{}, err
		}
		rest, err := take(8 + 8 + 16)
		if err != nil {
			return Blocks{}, err
		}
		out.Blocks = append(out.Blocks, Block{
			Start:     key,
			Bytes:     int64(le.Uint64(rest[0:])),
			SortedRun: int64(le.Uint64(rest[8:])),
			SST:       hex.EncodeToString(rest[16:32]),
		})
	}
	if len(raw) != 0 {
		return Blocks{}, fmt.Errorf("block profile has %d bytes past its %d blocks", len(raw), count)
	}
	return out, nil
}
