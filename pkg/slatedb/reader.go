package slatedb

/*
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// ReaderOptions choose what a Reader sees.
type ReaderOptions struct {
	Options
	// Checkpoint pins the reader to that checkpoint's state: later writes
	// stay invisible. Empty: follow the latest state (polling every
	// PollInterval) without writing anything to the database, not even a
	// checkpoint of its own.
	Checkpoint string
}

// Reader is a read-only view of a database. Opening one never modifies the
// database.
type Reader struct {
	url string
	mu  sync.RWMutex
	h   *C.rl_reader
}

// OpenReader opens a reader of the database at url. A location without a
// database is ErrNoDatabase; a checkpoint that does not exist is
// ErrCheckpointMissing.
func OpenReader(ctx context.Context, url string, opts ReaderOptions) (*Reader, error) {
	if err := useS3(ctx, "open reader", url); err != nil {
		return nil, err
	}
	curl, copts, ccp := C.CString(url), C.CString(opts.json()), C.CString(opts.Checkpoint)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	defer C.free(unsafe.Pointer(ccp))
	var h *C.rl_reader
	err := native(ctx, "open reader", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_reader_open(curl, copts, ccp, t, c, &h, e)
	})
	if err != nil {
		return nil, err
	}
	return &Reader{url: url, h: h}, nil
}

// URL is the database's URL.
func (r *Reader) URL() string { return r.url }

func (r *Reader) use() (*C.rl_reader, func(), error) {
	r.mu.RLock()
	if r.h == nil {
		r.mu.RUnlock()
		return nil, nil, fmt.Errorf("slatedb: reader %s: %w", r.url, ErrClosed)
	}
	return r.h, r.mu.RUnlock, nil
}

// Get reads one key; a missing key is ErrNotFound.
func (r *Reader) Get(ctx context.Context, key []byte) ([]byte, error) {
	h, done, err := r.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return get(ctx, 1, unsafe.Pointer(h), key)
}

// Scan iterates over [start, end) in key order; a nil end means to the end.
func (r *Reader) Scan(ctx context.Context, start, end []byte) (*Iterator, error) {
	h, done, err := r.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return scan(ctx, 1, unsafe.Pointer(h), start, end)
}

// Close closes the reader and frees its handle, within closeTimeout.
func (r *Reader) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return r.CloseContext(ctx)
}

// CloseContext is Close bounded by ctx (closeLimit). The handle is freed
// even when the close times out.
func (r *Reader) CloseContext(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.h == nil {
		return nil
	}
	h := r.h
	r.h = nil
	limit := closeLimit(ctx)
	var msg *C.char
	if code := C.rl_reader_close(h, C.uint64_t(limit/time.Millisecond), &msg); code != C.RL_OK {
		return &Error{Code: Code(code), Op: "close reader", Msg: takeString(msg)}
	}
	return nil
}

// KV is what Writer and Reader share: point reads and range scans.
type KV interface {
	Get(ctx context.Context, key []byte) ([]byte, error)
	Scan(ctx context.Context, start, end []byte) (*Iterator, error)
}

var (
	_ KV = (*Writer)(nil)
	_ KV = (*Reader)(nil)
)

func get(ctx context.Context, kind C.uint8_t, h unsafe.Pointer, key []byte) ([]byte, error) {
	kp, kn := cBytes(key)
	var out *C.uint8_t
	var n C.size_t
	err := native(ctx, "get", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_get(kind, h, kp, kn, t, c, &out, &n, e)
	})
	if err != nil {
		return nil, err
	}
	v := takeBytes(out, n)
	if v == nil {
		v = []byte{}
	}
	return v, nil
}
