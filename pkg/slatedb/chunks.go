package slatedb

/*
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
)

// Entries and bytes per native call: large enough that the FFI crossing is
// noise next to the copy, small enough to keep memory flat.
const (
	chunkEntries = 4096
	chunkBytes   = 1 << 20
)

// chunks is the Go side of a native cursor that hands its entries over in
// chunks (rl_iter_next, rl_changes_next): the chunk being read, the error
// that ended the walk, whether the native side said the end. mu keeps a
// fetch and the handle's Close from overlapping (the native cursor is
// mutable; Close may come from another goroutine).
type chunks struct {
	ctx   context.Context
	mu    sync.Mutex
	chunk []byte
	err   error
	done  bool
}

// nextChunk is a native call that puts the next chunk in out (up to
// chunkEntries entries and about chunkBytes).
type nextChunk func(t C.uint64_t, c *C.rl_cancel, out **C.uint8_t, n *C.size_t, e **C.char) C.int32_t

// more reports whether the chunk holds entries, fetching the next with next
// once the last is read. open, called under mu, reports whether the handle
// is still open (a closed one is ErrClosed).
func (c *chunks) more(op string, open func() bool, next nextChunk) bool {
	switch {
	case c.err != nil:
		return false
	case len(c.chunk) > 0:
		return true
	case c.done:
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !open() {
		c.err = fmt.Errorf("slatedb: %s: %w: the handle is closed", op, ErrClosed)
		return false
	}
	var out *C.uint8_t
	var n C.size_t
	c.err = native(c.ctx, op, func(t C.uint64_t, cc *C.rl_cancel, e **C.char) C.int32_t {
		return next(t, cc, &out, &n, e)
	})
	if c.err != nil {
		return false
	}
	c.chunk = takeBytes(out, n)
	c.done = len(c.chunk) == 0
	return !c.done
}

// field reads one length-prefixed field (len:u32 little-endian | bytes) off
// the front of *b; false when *b is too short. The field keeps its own
// capacity, so appending to it never writes into the chunk.
func field(b *[]byte) ([]byte, bool) {
	if len(*b) < 4 {
		return nil, false
	}
	n := binary.LittleEndian.Uint32(*b)
	if uint64(len(*b)-4) < uint64(n) {
		return nil, false
	}
	f := (*b)[4 : 4+n : 4+n]
	*b = (*b)[4+n:]
	return f, true
}
