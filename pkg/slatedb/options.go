package slatedb

import (
	"encoding/json"
	"time"
)

// Options tune how the engine talks to object storage. The zero value is
// sensible: bounded retries and timeouts, so an unreachable endpoint or a
// missing bucket fails in seconds rather than retrying forever (the engine's
// own default).
type Options struct {
	// MaxRetries bounds the engine's retries of one object-store operation
	// (default 3).
	MaxRetries int
	// S3MaxRetries and S3RetryTimeout bound the S3 client's retries of one
	// request (defaults from the process's awsconfig.Limits: Attempts-1,
	// and Attempts first-byte timeouts).
	S3MaxRetries   int
	S3RetryTimeout time.Duration
	// S3RequestTimeout bounds one S3 request whole, its upload or download
	// included (default 30 s); S3ConnectTimeout its connection (default
	// Limits.Connect). Limits.FirstByte and Limits.Stall bound the wait
	// for a response and for each next part of its body.
	S3RequestTimeout time.Duration
	S3ConnectTimeout time.Duration
	// FlushInterval is the writer's WAL flush interval (engine default 100 ms).
	FlushInterval time.Duration
	// PollInterval is how often a latest-following reader looks for new
	// state (engine default 10 s).
	PollInterval time.Duration
	// MaxUnflushedBytes bounds a writer's memtables awaiting upload before
	// writes wait (engine default 1 GiB): bulk loads set it low so that
	// memory stays flat however much they write.
	MaxUnflushedBytes int
	// BulkLoad tunes a writer that loads a whole database so that its
	// memory does not grow with the database: it moves its memtable to L0
	// every 8 MiB written, and the engine runs one L0 upload and one
	// compaction at a time, with small read-ahead and SSTs of at most 64 MiB,
	// and looks for compaction work and its results every 100 ms (so that a
	// full L0 waits for a compaction, not for the engine's 5 s and 1 s polls).
	// It writes no WAL, so its data goes to object storage once: a write is
	// durable when its memtable is in L0 (Write and Flush move it there), and
	// what survives a crash is always a prefix of its writes in their order.
	BulkLoad bool
	// BulkMemtableBytes is how many batch bytes a BulkLoad writer takes
	// before it moves its memtable to L0 and waits for it (default 8 MiB).
	BulkMemtableBytes int
	// Passive: the writer runs no compactor and no garbage collector, so it
	// changes nothing in the database but what it writes (and the fencing),
	// and its L0 limit is lifted so that a flush never waits for a compaction.
	// For short-lived writers on a database that has a regular writer.
	Passive bool
	// WarmWAL: before the writer opens (and fences the writer before it),
	// the WAL its open replays (the SSTs past the latest manifest) is
	// fetched ahead, 64 SSTs at a time, and the open replays it from
	// memory, not a request per SST 4 at a time: the online fence, whose
	// write freeze would otherwise grow with the old writer's WAL backlog
	// on S3. Writer.Warmed says what was fetched and how long it took.
	WarmWAL bool
	// OverlayCache is where OpenChanges finds views' overlays kept by
	// earlier calls (a URL prefix, in an online run's staging): a view's
	// overlay (its WAL SSTs past its checkpoint's manifest, newest per key)
	// starts from the kept one that reaches furthest, and only the WAL SSTs
	// past it are read, so a writer's WAL backlog is read once for all
	// rounds, and a WAL SST garbage-collected since it was kept does not
	// fail the round. KeepOverlay writes both views' overlays there.
	OverlayCache string
	KeepOverlay  bool
}

// bulkUnflushedBytes is a BulkLoad writer's MaxUnflushedBytes unless set.
const bulkUnflushedBytes = 64 << 20

// json renders the options the native side expects; zero fields are left out
// so that its defaults apply.
func (o Options) json() string {
	m := map[string]any{}
	put := func(k string, v int64) {
		if v > 0 {
			m[k] = v
		}
	}
	put("max_retries", int64(o.MaxRetries))
	put("s3_max_retries", int64(o.S3MaxRetries))
	put("s3_retry_timeout_ms", o.S3RetryTimeout.Milliseconds())
	put("s3_request_timeout_ms", o.S3RequestTimeout.Milliseconds())
	put("s3_connect_timeout_ms", o.S3ConnectTimeout.Milliseconds())
	put("flush_interval_ms", o.FlushInterval.Milliseconds())
	put("poll_interval_ms", o.PollInterval.Milliseconds())
	unflushed := o.MaxUnflushedBytes
	if o.BulkLoad && unflushed == 0 {
		// A backstop behind the writer's own memtable flushes.
		unflushed = bulkUnflushedBytes
	}
	put("max_unflushed_bytes", int64(unflushed))
	if o.BulkLoad {
		m["bulk_load"] = true
	}
	if o.Passive {
		m["passive"] = true
	}
	if o.WarmWAL {
		m["warm_wal"] = true
	}
	if o.OverlayCache != "" {
		m["overlay_cache"] = o.OverlayCache
	}
	if o.KeepOverlay {
		m["keep_overlay"] = true
	}
	b, _ := json.Marshal(m) // a map of numbers, booleans and strings always marshals
	return string(b)
}
