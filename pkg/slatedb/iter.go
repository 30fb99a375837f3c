package slatedb

/*
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"fmt"
	"unsafe"
)

// Iterator walks a range scan in key order, fetching entries in chunks. It
// keeps the context given to Scan for its I/O. Use it from one goroutine;
// Close may come from another (chunks).
//
//	it, err := db.Scan(ctx, start, end)
//	...
//	defer it.Close()
//	for it.Next() { use(it.Key(), it.Value()) }
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	chunks
	h     *C.rl_iter
	key   []byte
	value []byte
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
	return &Iterator{chunks: chunks{ctx: ctx}, h: it}, nil
}

// Next advances to the next entry and reports whether there is one.
func (it *Iterator) Next() bool {
	next := func(t C.uint64_t, c *C.rl_cancel, out **C.uint8_t, n *C.size_t, e **C.char) C.int32_t {
		return C.rl_iter_next(it.h, chunkEntries, chunkBytes, t, c, out, n, e)
	}
	if !it.more("scan next", func() bool { return it.h != nil }, next) {
		return false
	}
	k, ok1 := field(&it.chunk)
	v, ok2 := field(&it.chunk)
	if !ok1 || !ok2 {
		it.err = fmt.Errorf("slatedb: scan next: %w: malformed chunk from native library", ErrInternal)
		return false
	}
	it.key, it.value = k, v
	return true
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
