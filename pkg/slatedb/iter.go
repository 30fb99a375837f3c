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
	"unsafe"
)

// Entries and bytes per native call: large enough that the FFI crossing is
// noise next to the copy, small enough to keep memory flat.
const (
	chunkEntries = 4096
	chunkBytes   = 1 << 20
)

// Iterator walks a range scan in key order, fetching entries in chunks. It
// keeps the context given to Scan for its I/O. Use it from one goroutine;
// Close may come from another (the native iterator is mutable, so a fetch
// and a Close never overlap: mu guards h).
//
//	it, err := db.Scan(ctx, start, end)
//	...
//	defer it.Close()
//	for it.Next() { use(it.Key(), it.Value()) }
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	ctx   context.Context
	mu    sync.Mutex
	h     *C.rl_iter
	chunk []byte
	key   []byte
	value []byte
	err   error
	done  bool
}

func scan(ctx context.Context, kind C.uint8_t, h unsafe.Pointer, start, end []byte) (*Iterator, error) {
	sp, sn := cBytes(start)
	ep, en := cBytes(end)
	var it *C.rl_iter
	err := native(ctx, "scan", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_scan(kind, h, sp, sn, ep, en, t, c, &it, e)
	})
	if err != nil {
		return nil, err
	}
	return &Iterator{ctx: ctx, h: it}, nil
}

// Next advances to the next entry and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if len(it.chunk) == 0 {
		if it.done || !it.fetch() {
			return false
		}
	}
	k, v, rest, err := splitEntry(it.chunk)
	if err != nil {
		it.err = err
		return false
	}
	it.key, it.value, it.chunk = k, v, rest
	return true
}

func (it *Iterator) fetch() bool {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.h == nil {
		it.err = fmt.Errorf("slatedb: scan next: %w: the iterator is closed", ErrClosed)
		return false
	}
	var out *C.uint8_t
	var n C.size_t
	it.err = native(it.ctx, "scan next", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_iter_next(it.h, chunkEntries, chunkBytes, t, c, &out, &n, e)
	})
	if it.err != nil {
		return false
	}
	it.chunk = takeBytes(out, n)
	if len(it.chunk) == 0 {
		it.done = true
		return false
	}
	return true
}

func splitEntry(b []byte) (key, value, rest []byte, err error) {
	field := func() ([]byte, bool) {
		if len(b) < 4 {
			return nil, false
		}
		n := binary.LittleEndian.Uint32(b)
		if uint64(len(b)-4) < uint64(n) {
			return nil, false
		}
		f := b[4 : 4+n : 4+n]
		b = b[4+n:]
		return f, true
	}
	k, ok1 := field()
	v, ok2 := field()
	if !ok1 || !ok2 {
		return nil, nil, nil, fmt.Errorf("slatedb: scan next: %w: malformed chunk from native library", ErrInternal)
	}
	return k, v, b, nil
}

// Key is the current entry's key. The slice stays valid after Next.
func (it *Iterator) Key() []byte { return it.key }

// Value is the current entry's value. The slice stays valid after Next.
func (it *Iterator) Value() []byte { return it.value }

// Err is the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.err }

// Close frees the iterator. It is safe to call more than once.
func (it *Iterator) Close() {
	it.mu.Lock()
	defer it.mu.Unlock()
	if it.h != nil {
		C.rl_iter_close(it.h)
		it.h = nil
	}
}
