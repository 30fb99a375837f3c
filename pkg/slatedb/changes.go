package slatedb

/*
#include <stdlib.h>
#include "rocklake_slatedb.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unsafe"
)

// Ways the changes between two views are found (ChangeSummary.Method).
const (
	// MethodSSTDiff reads the keys of the SSTs and WAL SSTs one view names
	// and the other does not, and compares those keys in both views: a
	// cost in proportion to the change.
	MethodSSTDiff = "sst-diff"
	// MethodMergeScan scans both views side by side: a cost in proportion
	// to the database, taken when a compaction rewrote most of it.
	MethodMergeScan = "merge-scan"
)

// DefaultMaxChangedFraction is where OpenChanges gives up the SST diff for
// the merge scan: when the sources the views do not share hold more than a
// quarter of the later view's stored bytes. The SST diff reads those
// sources one block per request (SlateDB 0.13.1 has no public bulk read of
// a compacted SST) and then seeks every candidate key in both views, while
// the merge scan streams both views with 1 MiB read-ahead; past a quarter,
// the requests cost more than the bytes the scan would read.
const DefaultMaxChangedFraction = 0.25

// ChangeSummary is how the changes between two views were found.
type ChangeSummary struct {
	// Method is MethodSSTDiff or MethodMergeScan; Reason says why the merge
	// scan was taken.
	Method string `json:"method"`
	Reason string `json:"reason,omitempty"`
	// FromManifest and ToManifest are the manifests compared, FromWALEnd
	// and ToWALEnd the ends of the WAL SSTs each view replays.
	FromManifest uint64 `json:"from_manifest"`
	ToManifest   uint64 `json:"to_manifest"`
	FromWALEnd   uint64 `json:"from_wal_end"`
	ToWALEnd     uint64 `json:"to_wal_end"`
	// SSTsAdded and SSTsRemoved are the compacted SSTs only the later, and
	// only the earlier, view names; WALsAdded and WALsRemoved the WAL SSTs
	// only one of them replays.
	SSTsAdded   int `json:"ssts_added"`
	SSTsRemoved int `json:"ssts_removed"`
	WALsAdded   int `json:"wals_added"`
	WALsRemoved int `json:"wals_removed"`
	// ChangedBytes are the stored bytes of those sources; TotalBytes all of
	// the later view's.
	ChangedBytes int64 `json:"changed_bytes"`
	TotalBytes   int64 `json:"total_bytes"`
	// Candidates is how many distinct keys those sources hold, each read in
	// both views (0 for the merge scan).
	Candidates int `json:"candidates"`
}

// Change is one key whose value or presence differs between the two views.
// Old is nil when the key is absent from the earlier view, New when it is
// absent from the later one (a delete); a present empty value is non-nil.
type Change struct {
	Key, Old, New []byte
}

// Changes walks the changes between two views of a database in key order,
// fetched in chunks. Use it from one goroutine; Close may come from another.
//
//	ch, err := slatedb.OpenChanges(ctx, url, from, to, opts, slatedb.DefaultMaxChangedFraction)
//	...
//	defer ch.Close()
//	for ch.Next() { use(ch.Change()) }
//	if err := ch.Err(); err != nil { ... }
type Changes struct {
	chunks
	summary ChangeSummary
	h       *C.rl_changes
	cur     Change
}

// View is a view of a database that can be named again in any process: a
// checkpoint, plus the WAL SSTs past the ones its manifest names, up to
// WALEnd (exclusive; 0, or at most the manifest's own end: none). A
// detached checkpoint of a live database holds only what its writer's
// manifest records; its writer's latest commits sit in WAL SSTs that
// manifest does not name yet (docs/online.md). The checkpoint keeps its
// own SSTs; the WAL SSTs past its manifest are kept by nothing once the
// writer moved them into an L0 SST (SlateDB's garbage collection removes
// them 5 minutes after they were written, by default): a view is for
// minutes, and one found missing a WAL SST is ErrNotFound.
type View struct {
	Checkpoint string `json:"checkpoint"`
	WALEnd     uint64 `json:"wal_end,omitempty"`
}

// TakeView takes a view of everything the writer of the database at url
// had written: a detached checkpoint (no writer fenced), then the end of
// the WAL SSTs listed after it.
func TakeView(ctx context.Context, url string, cp CheckpointOptions, opts Options) (View, error) {
	c, err := CreateCheckpoint(ctx, url, cp, opts)
	if err != nil {
		return View{}, err
	}
	end, err := WALEnd(ctx, url, opts)
	if err != nil {
		return View{}, err
	}
	return View{Checkpoint: c.ID, WALEnd: end}, nil
}

// WALEnd is one past the highest WAL SST id of the database at url (0:
// none).
func WALEnd(ctx context.Context, url string, opts Options) (uint64, error) {
	if err := useS3(ctx, "wal end", url); err != nil {
		return 0, err
	}
	curl, copts := C.CString(url), C.CString(opts.json())
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	var end C.uint64_t
	err := native(ctx, "wal end", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_wal_end(curl, copts, t, c, &end, e)
	})
	return uint64(end), err
}

// OpenChanges opens the changes of the database at url between views from
// and to. Every key that changed lies in a source (compacted SST, WAL SST)
// one view names and the other does not: those keys are read in both
// views, unless those sources hold more than maxFraction of the later
// view's stored bytes (<= 0: always), when both views are scanned side by
// side instead. Writes nothing. A view without a checkpoint is ErrInvalid;
// a checkpoint that does not exist, ErrCheckpointMissing; a WAL SST of a
// view that is gone, ErrNotFound.
func OpenChanges(ctx context.Context, url string, from, to View, opts Options, maxFraction float64) (*Changes, error) {
	for _, u := range []string{url, opts.OverlayCache} {
		if err := useS3(ctx, "open changes", u); err != nil {
			return nil, err
		}
	}
	curl, copts := C.CString(url), C.CString(opts.json())
	cfrom, cto := C.CString(from.Checkpoint), C.CString(to.Checkpoint)
	defer C.free(unsafe.Pointer(curl))
	defer C.free(unsafe.Pointer(copts))
	defer C.free(unsafe.Pointer(cfrom))
	defer C.free(unsafe.Pointer(cto))
	var h *C.rl_changes
	var summary *C.char
	err := native(ctx, "open changes", func(t C.uint64_t, c *C.rl_cancel, e **C.char) C.int32_t {
		return C.rl_changes_open(curl, copts, cfrom, C.uint64_t(from.WALEnd), cto, C.uint64_t(to.WALEnd), C.double(maxFraction), t, c, &h, &summary, e)
	})
	if err != nil {
		return nil, err
	}
	ch := &Changes{chunks: chunks{ctx: ctx}, h: h}
	if err := json.Unmarshal([]byte(takeString(summary)), &ch.summary); err != nil {
		_ = ch.Close()
		return nil, fmt.Errorf("slatedb: open changes: %w: summary: %w", ErrInternal, err)
	}
	return ch, nil
}

// Summary is how the changes are found.
func (ch *Changes) Summary() ChangeSummary { return ch.summary }

// Next advances to the next change and reports whether there is one.
func (ch *Changes) Next() bool {
	next := func(t C.uint64_t, c *C.rl_cancel, out **C.uint8_t, n *C.size_t, e **C.char) C.int32_t {
		return C.rl_changes_next(ch.h, chunkEntries, chunkBytes, t, c, out, n, e)
	}
	if !ch.more("changes next", func() bool { return ch.h != nil }, next) {
		return false
	}
	c, ok := splitChange(&ch.chunk)
	if !ok {
		ch.err = fmt.Errorf("slatedb: changes next: %w: malformed chunk from native library", ErrInternal)
		return false
	}
	ch.cur = c
	return true
}

// splitChange reads one change off the front of *b (rocklake_slatedb.h):
// klen | key | old | new, each of old and new 0 (absent) or 1 | vlen | value.
func splitChange(b *[]byte) (Change, bool) {
	value := func() ([]byte, bool) {
		if len(*b) < 1 {
			return nil, false
		}
		present := (*b)[0]
		*b = (*b)[1:]
		switch present {
		case 0:
			return nil, true
		case 1:
			v, ok := field(b)
			if ok && v == nil {
				v = []byte{}
			}
			return v, ok
		}
		return nil, false
	}
	k, ok1 := field(b)
	o, ok2 := value()
	n, ok3 := value()
	return Change{Key: k, Old: o, New: n}, ok1 && ok2 && ok3
}

// Change is the current change. Its slices stay valid after Next.
func (ch *Changes) Change() Change { return ch.cur }

// Err is the error that ended the walk, if any.
func (ch *Changes) Err() error { return ch.err }

// Close closes the two views' readers and frees the handle, within
// closeTimeout. It is safe to call more than once.
func (ch *Changes) Close() error {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.h == nil {
		return nil
	}
	h := ch.h
	ch.h = nil
	var msg *C.char
	if code := C.rl_changes_close(h, C.uint64_t(closeTimeout/time.Millisecond), &msg); code != C.RL_OK {
		return &Error{Code: Code(code), Op: "close changes", Msg: takeString(msg)}
	}
	return nil
}
