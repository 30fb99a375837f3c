package slatedb

/*
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// closeTimeout bounds Close when no context is given: closing flushes.
const closeTimeout = 2 * time.Minute

// Writer is the single writer of a database. Opening one fences any earlier
// writer; a fenced writer's next write fails with ErrFenced.
type Writer struct {
	url string
	mu  sync.RWMutex // read-held by calls, write-held by Close
	h   *C.rl_writer
	// bulk: Options.BulkLoad, whose memtable goes to L0 every flushAt
	// batch bytes; unflushed counts batch bytes written since it last did.
	bulk      bool
	flushAt   int64
	warmed    Warmed
	unflushed atomic.Int64
}

// bulkMemtableBytes is how much a BulkLoad writer takes, unless
// Options.BulkMemtableBytes says otherwise, before it moves its memtable to
// L0 and waits for it. SlateDB's own limit (MaxUnflushedBytes)
// counts encoded bytes, and a memtable holds about three times that in
// memory, so this, not that, is what keeps a bulk load's memory flat.
const bulkMemtableBytes = 8 << 20

// OpenWriter opens (or creates) the database at url as its writer.
func OpenWriter(ctx context.Context, url string, opts Options) (*Writer, error) {
	if err := useS3(ctx, "open writer", url); err != nil {
		return nil, err
	}
	curl, copts := C.CString(url), C.CString(opts.json())
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	var h *C.rl_writer
	start := time.Now()
	err := native(ctx, "open writer", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_writer_open(curl, copts, t, c, &h, e)
	})
	if err != nil {
		return nil, err
	}
	flushAt := int64(opts.BulkMemtableBytes)
	if flushAt <= 0 {
		flushAt = bulkMemtableBytes
	}
	w := &Writer{url: url, h: h, bulk: opts.BulkLoad, flushAt: flushAt}
	if opts.WarmWAL {
		var ssts, bytes, ms C.uint64_t
		err := native(ctx, "writer warmed", func(_ C.uint64_t, _ *C.rl_cancel, e **C.char) C.int32_t {
			return C.rl_writer_warmed(h, &ssts, &bytes, &ms, e)
		})
		if err != nil {
			return nil, errors.Join(err, w.Close())
		}
		took := time.Duration(ms) * time.Millisecond
		w.warmed = Warmed{SSTs: int(ssts), Bytes: int64(bytes), Took: took, OpenedAt: start.Add(took)}
	}
	return w, nil
}

// Warmed is what a writer's open fetched ahead (Options.WarmWAL): the WAL
// SSTs it then replayed from memory, their bytes, and the time the fetch
// took before the open itself (the old writer was fenced only after it).
type Warmed struct {
	SSTs  int           `json:"ssts"`
	Bytes int64         `json:"bytes"`
	Took  time.Duration `json:"took"`
	// OpenedAt is when the open itself began, the fetch done: the old
	// writer was fenced after it (a few requests later), not before.
	OpenedAt time.Time `json:"opened_at"`
}

// Warmed is what the writer's open fetched ahead (zero without
// Options.WarmWAL).
func (w *Writer) Warmed() Warmed { return w.warmed }

// URL is the database's URL.
func (w *Writer) URL() string { return w.url }

func (w *Writer) use() (*C.rl_writer, func(), error) {
	w.mu.RLock()
	if w.h == nil {
		w.mu.RUnlock()
		return nil, nil, fmt.Errorf("slatedb: writer %s: %w", w.url, ErrClosed)
	}
	return w.h, w.mu.RUnlock, nil
}

// Write applies the batch atomically and returns once it is durable in
// object storage.
func (w *Writer) Write(ctx context.Context, b *Batch) error { return w.write(ctx, b, true) }

// WriteAsync applies the batch atomically without waiting for durability:
// reads see it at once, and Flush or Close make it durable. Bulk loads use it
// and flush at their own checkpoints.
func (w *Writer) WriteAsync(ctx context.Context, b *Batch) error { return w.write(ctx, b, false) }

func (w *Writer) write(ctx context.Context, b *Batch, durable bool) error {
	if b == nil || b.n == 0 {
		return fmt.Errorf("slatedb: write: %w: empty batch", ErrInvalid)
	}
	h, done, err := w.use()
	if err != nil {
		return err
	}
	defer done()
	p, n := cBytes(b.buf)
	var d C.uint8_t
	if durable {
		d = 1
	}
	err = native(ctx, "write", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_writer_write(h, p, n, d, t, c, e)
	})
	if err != nil || !w.bulk || w.unflushed.Add(int64(len(b.buf))) < w.flushAt {
		return err
	}
	w.unflushed.Store(0)
	if err := w.flushMemtable(ctx, h); err != nil {
		return err
	}
	trimMalloc()
	return nil
}

// Flush makes every write so far durable (a BulkLoad writer, which has no
// WAL, moves its memtable to L0).
func (w *Writer) Flush(ctx context.Context) error {
	h, done, err := w.use()
	if err != nil {
		return err
	}
	defer done()
	return native(ctx, "flush", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_writer_flush(h, t, c, e)
	})
}

// FlushMemtable writes the memtables to L0 and waits until they are there
// (a BulkLoad writer does so by itself every few MiB). After it, a detached
// checkpoint covers every write so far.
func (w *Writer) FlushMemtable(ctx context.Context) error {
	h, done, err := w.use()
	if err != nil {
		return err
	}
	defer done()
	return w.flushMemtable(ctx, h)
}

func (w *Writer) flushMemtable(ctx context.Context, h *C.rl_writer) error {
	return native(ctx, "flush memtable", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_writer_flush_memtable(h, t, c, e)
	})
}

// Get reads one key; a missing key is ErrNotFound.
func (w *Writer) Get(ctx context.Context, key []byte) ([]byte, error) {
	h, done, err := w.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return get(ctx, 0, unsafe.Pointer(h), key)
}

// Scan iterates over [start, end) in key order; a nil end means to the end.
func (w *Writer) Scan(ctx context.Context, start, end []byte) (*Iterator, error) {
	h, done, err := w.use()
	if err != nil {
		return nil, err
	}
	defer done()
	return scan(ctx, 0, unsafe.Pointer(h), start, end)
}

// Checkpoint creates a checkpoint holding every write made so far through
// this writer.
func (w *Writer) Checkpoint(ctx context.Context, cp CheckpointOptions) (Checkpoint, error) {
	h, done, err := w.use()
	if err != nil {
		return Checkpoint{}, err
	}
	defer done()
	name := C.CString(cp.Name)
	defer C.free(unsafe.Pointer(name))
	var out *C.char
	err = native(ctx, "checkpoint", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_writer_checkpoint(h, C.uint64_t(cp.Lifetime.Milliseconds()), name, t, c, &out, e)
	})
	if err != nil {
		return Checkpoint{}, err
	}
	return parseCheckpoint(takeString(out))
}

// Close flushes and closes the writer and frees its handle. A fenced writer
// closes without error: there is nothing of its own left to flush.
func (w *Writer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return w.CloseContext(ctx)
}

// CloseContext is Close bounded by ctx (closeLimit). The handle is freed
// even when the flush fails or ctx expires.
func (w *Writer) CloseContext(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.h == nil {
		return nil
	}
	h := w.h
	w.h = nil
	limit := C.uint64_t(closeLimit(ctx) / time.Millisecond)
	return native(context.Background(), "close writer", func(_ C.uint64_t, _ *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_writer_close(h, limit, e)
	})
}

// closeLimit is how long a close may flush: until ctx's deadline, or
// closeTimeout without one, and only a millisecond (free the handle, flush
// nothing) once ctx is done: a caller that gave up is not held by a flush.
func closeLimit(ctx context.Context) time.Duration {
	limit := closeTimeout
	if dl, ok := ctx.Deadline(); ok {
		limit = time.Until(dl)
	}
	if ctx.Err() != nil {
		limit = 0
	}
	return max(limit, time.Millisecond)
}
