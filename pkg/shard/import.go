package shard

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// ImportOptions tune an import.
type ImportOptions struct {
	// Format is the format the target is to be in; every shard must be in it.
	Format format.Version
	Store  slatedb.Options
	// StopAfter, when set, makes Import return (Done false) after the first
	// shard that finishes past it: a Lambda returns before its deadline and
	// the next call continues.
	StopAfter time.Time
	Progress  *Progress
	// AfterShard, when set, is called after each shard is durable (for
	// progress lines and tests).
	AfterShard func(index int)
	// Continue, when set, is asked after each shard is durable whether
	// to go on: its error ends the import (the workflow's: the run still
	// holds the pointer's lock), so that a run that lost its right to
	// write stops within one shard.
	Continue func(ctx context.Context) error
	// AfterBatch, when set, is called after each batch of shard index's data
	// is written, durable or not (for tests that stop an import mid-shard).
	AfterBatch func(index int)
	// NoFinalize leaves the final batch to Finalize (the workflow runs it as
	// a step of its own); the target then stays unopenable after every shard.
	NoFinalize bool
}

// ImportResult reports an import's state after a call.
type ImportResult struct {
	Target      string         `json:"target"`
	Format      format.Version `json:"format"`
	ShardsDone  int            `json:"shards_done"`
	ShardsTotal int            `json:"shards_total"`
	// Done: the catalog is finalized (its format version written).
	Done    bool          `json:"done"`
	Resumed bool          `json:"resumed"`
	Records uint64        `json:"records"`
	Digest  ndjson.Digest `json:"digest"`
}

var (
	// ErrTargetNotEmpty: the target holds keys that are not an unfinished
	// import of the same input. It is catalog.ErrTargetNotEmpty.
	ErrTargetNotEmpty = catalog.ErrTargetNotEmpty
	// ErrWrongFormat: the shards are not in the format asked for.
	ErrWrongFormat = errors.New("shard: shards are in another format")
	// ErrNoVersion: the shards hold no catalog-format-version key, or one that
	// disagrees with their format.
	ErrNoVersion = errors.New("shard: shards hold no valid catalog-format-version")
)

// progressKey holds an unfinished import's progress inside the target. It is
// written after each durable shard and deleted in the final batch, so a
// finished catalog never holds it, and a target holding it has no version key
// yet: no binary opens it meanwhile.
var progressKey = format.SystemKey("rocklake-migrate-import-progress")

type entry struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

type progress struct {
	Source     string         `json:"source"`
	Checkpoint string         `json:"checkpoint"`
	Format     format.Version `json:"format"`
	Shards     int            `json:"shards"`
	Done       []bool         `json:"done"`
	// System holds the counter and system keys met so far: written last.
	System  []entry       `json:"system"`
	Records uint64        `json:"records"`
	Digest  ndjson.Digest `json:"digest"`
}

func (p *progress) sameInput(h ndjson.Header) bool {
	return p.Source == h.Source && p.Checkpoint == h.CheckpointID && p.Format == h.CatalogFormat && p.Shards == h.ShardCount
}

// Import writes the shards at input (a file, a directory or an S3 prefix)
// into a new catalog at url. The target must hold nothing, or an unfinished
// import of the same shards, which Import then continues: keys are rewritten
// idempotently, so a rerun after a crash ends with the same catalog. Every
// shard's framing, record count and sha256 are checked before anything is
// written (at hashing speed, without decoding); a shard that passes that but
// fails while it is written (a line that does not decode, per-table counts
// that are not its trailer's) has what was written of it deleted before the
// error returns. Decoding runs on a goroutine of its own, ahead of the
// writer. Data goes first and the counter and system keys, the format
// version among them, last, in one atomic batch.
func Import(ctx context.Context, store *blob.Store, input, url string, opts ImportOptions) (ImportResult, error) {
	res := ImportResult{Target: url, Format: opts.Format}
	urls, err := List(ctx, store, input)
	if err != nil {
		return res, err
	}
	hs, urls, err := Headers(ctx, store, urls)
	if err != nil {
		return res, err
	}
	if hs[0].CatalogFormat != opts.Format {
		return res, fmt.Errorf("%w: %s holds format %s, import --format %s (transform it first)", ErrWrongFormat, input, hs[0].CatalogFormat, opts.Format)
	}
	res.ShardsTotal = len(hs)
	opts.Progress.total(len(hs))

	prog, err := targetState(ctx, url, hs[0], opts.Store)
	noDB := errors.Is(err, errNoDatabase)
	if err != nil && !noDB {
		return res, err
	}
	// An empty database (an import killed before its first progress
	// record) or an unfinished one of these shards may be there; nothing else.
	if err := checkLocation(ctx, store, url, !noDB); err != nil {
		return res, err
	}
	res.Resumed = prog != nil
	if prog == nil {
		prog = &progress{Source: hs[0].Source, Checkpoint: hs[0].CheckpointID, Format: opts.Format, Shards: len(hs), Done: make([]bool, len(hs))}
	}
	// Check every remaining shard's framing and checksum before writing
	// anything: a damaged or cut-short shard found midway would otherwise
	// leave part of itself behind.
	todo, err := skimShards(ctx, store, urls, prog.Done)
	if err != nil {
		return res, err
	}
	opts.Progress.SetRecordsTotal(todo)

	so := opts.Store
	so.BulkLoad = true
	w, err := slatedb.OpenWriter(ctx, url, so)
	if err != nil {
		return res, fmt.Errorf("shard: import: open target %s: %w", url, err)
	}
	// Closed within ctx: an import that failed, was canceled or ran out of
	// time is not held past that by a flush; what the close does not flush,
	// no progress record counts, and the rerun writes it again.
	defer w.CloseContext(ctx)
	if !res.Resumed {
		// The progress record goes in before any data: an import killed in
		// its first shard must find its own work on the rerun, not a target
		// that is merely "not empty".
		if err := writeProgress(ctx, w, prog, true); err != nil {
			return res, err
		}
	}
	if err := writeShards(ctx, store, w, urls, prog, opts); err != nil {
		return res, err
	}
	res.ShardsDone = count(prog.Done)
	res.Records, res.Digest = prog.Records, prog.Digest
	if res.ShardsDone < len(hs) || opts.NoFinalize {
		return res, w.CloseContext(ctx)
	}
	if err := finalize(ctx, w, prog, opts.Format); err != nil {
		return res, err
	}
	res.Done = true
	return res, w.CloseContext(ctx)
}

func count(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// targetState returns the progress of an unfinished import of the same input,
// nil for an empty target, and ErrTargetNotEmpty for anything else.
func targetState(ctx context.Context, url string, h ndjson.Header, so slatedb.Options) (*progress, error) {
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: so})
	if errors.Is(err, slatedb.ErrNoDatabase) {
		return nil, errNoDatabase
	}
	if err != nil {
		return nil, fmt.Errorf("shard: import: target %s: %w", url, err)
	}
	defer r.Close()
	if v, err := r.Get(ctx, format.FormatVersionKey()); err == nil {
		n, _ := format.DecodeFormatVersion(v)
		return nil, fmt.Errorf("%w: %s already holds a catalog (format version %d)", ErrTargetNotEmpty, url, n)
	} else if !errors.Is(err, slatedb.ErrNotFound) {
		return nil, fmt.Errorf("shard: import: target %s: %w", url, err)
	}
	raw, err := r.Get(ctx, progressKey)
	switch {
	case err == nil:
		var p progress
		if err := json.Unmarshal(raw, &p); err != nil || len(p.Done) != p.Shards {
			return nil, fmt.Errorf("%w: %s holds an unreadable import progress record", ErrTargetNotEmpty, url)
		}
		if !p.sameInput(h) {
			return nil, fmt.Errorf("%w: %s holds an unfinished import of other shards (%s@%s, %d shards, format %s)",
				ErrTargetNotEmpty, url, p.Source, p.Checkpoint, p.Shards, p.Format)
		}
		return &p, nil
	case !errors.Is(err, slatedb.ErrNotFound):
		return nil, fmt.Errorf("shard: import: target %s: %w", url, err)
	}
	it, err := r.Scan(ctx, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("shard: import: target %s: %w", url, err)
	}
	defer it.Close()
	if it.Next() {
		return nil, fmt.Errorf("%w: %s holds keys (first %x)", ErrTargetNotEmpty, url, it.Key())
	}
	if err := it.Err(); err != nil {
		return nil, fmt.Errorf("shard: import: target %s: %w", url, err)
	}
	return nil, nil
}

// errNoDatabase: targetState found no SlateDB database at the target.
var errNoDatabase = errors.New("no database")

const (
	batchRecords = 1000
	batchBytes   = 4 << 20
	// pipelineBatches is how many batches the decoding goroutine may be
	// ahead of the writer: enough to keep both busy, bounded in memory
	// (at most this many times batchBytes).
	pipelineBatches = 4
)

// skimShards checks the framing, record count and SHA-256 of every shard
// not yet done (ndjson.SkimFiles, in parallel). A shard whose records do not
// match its trailer is read once more, decoding, so that the error names the
// line that is bad where one is.
func skimShards(ctx context.Context, store *blob.Store, urls []string, done []bool) (records uint64, err error) {
	var todo []string
	for i, u := range urls {
		if !done[i] {
			todo = append(todo, u)
		}
	}
	trailers, err := ndjson.SkimFiles(ctx, store, todo)
	if errors.Is(err, ndjson.ErrTrailerMismatch) {
		for _, u := range todo {
			if _, _, verr := ndjson.VerifyFile(ctx, store, u); verr != nil {
				return 0, fmt.Errorf("shard: import: %w", verr)
			}
		}
	}
	if err != nil {
		return 0, fmt.Errorf("shard: import: %w", err)
	}
	for _, t := range trailers {
		records += t.Records
	}
	return records, nil
}

// part is what the decoding goroutine hands the writer: a batch of shard
// index's data, or, once the shard's trailer has checked out, its totals.
type part struct {
	index int
	batch *slatedb.Batch
	end   *shardTotals
}

// shardTotals is what one shard adds to the progress record (the decoder
// digests the keys it holds back, the writer the rest).
type shardTotals struct {
	records uint64
	digest  ndjson.Digest
	system  []entry
}

// writeShards writes the shards not yet done, in index order, decoding on
// one goroutine and writing on this one, and makes each shard durable before
// its progress record says so. A shard that fails to decode, or whose
// trailer does not match what was decoded, has what was written of it
// removed before the error is returned.
func writeShards(ctx context.Context, store *blob.Store, w *slatedb.Writer, urls []string, prog *progress, opts ImportOptions) error {
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	parts := make(chan part, pipelineBatches)
	free := make(chan *slatedb.Batch, pipelineBatches+1)
	var failed int // the shard the decoder stopped in, when it fails
	var decodeErr error
	decoded := make(chan struct{})
	go func() {
		defer close(decoded)
		defer close(parts)
		failed, decodeErr = decodeShards(dctx, store, urls, prog.Done, parts, free)
	}()
	// The writer digests the data it writes, the decoder only the keys it
	// holds back: decoding is the slower side of the pipeline.
	var digest ndjson.Digest
	stopped, werr := func() (bool, error) {
		for pt := range parts {
			if pt.batch == nil {
				pt.end.digest.Merge(digest)
				digest = ndjson.Digest{}
				if stop, err := shardWritten(ctx, w, urls, prog, pt, opts); err != nil || stop {
					return stop, err
				}
				continue
			}
			if err := w.WriteAsync(ctx, pt.batch); err != nil {
				return false, fmt.Errorf("shard: import %s: %w", urls[pt.index], err)
			}
			pt.batch.Puts(digest.AddRaw)
			opts.Progress.addRecords(uint64(pt.batch.Len()))
			if opts.AfterBatch != nil {
				opts.AfterBatch(pt.index)
			}
			pt.batch.Reset()
			select {
			case free <- pt.batch:
			default:
			}
		}
		return false, nil
	}()
	cancel() // a writer that stopped early stops the decoder too
	for range parts {
	}
	<-decoded
	switch {
	case stopped || werr != nil:
		// Killed or failed while writing a good shard: the rerun writes
		// that shard again, key for key.
		return werr
	case decodeErr == nil:
		return nil
	case ctx.Err() != nil:
		return decodeErr
	}
	// A shard that passed the skim but does not decode, or whose per-table
	// counts are not its trailer's: remove what was written of it, so that
	// nothing of a bad shard survives.
	if err := clearShard(ctx, store, w, urls[failed]); err != nil {
		return errors.Join(decodeErr, err)
	}
	return decodeErr
}

// shardWritten makes shard pt.index durable and records it in the progress
// record; stop reports that ImportOptions.StopAfter has passed.
func shardWritten(ctx context.Context, w *slatedb.Writer, urls []string, prog *progress, pt part, opts ImportOptions) (stop bool, err error) {
	prog.Done[pt.index] = true
	prog.Records += pt.end.records
	prog.Digest.Merge(pt.end.digest)
	prog.System = append(prog.System, pt.end.system...)
	// The progress record goes in after the shard's data and one flush makes
	// both durable: a bulk-load writer's durable state is always a prefix of
	// its writes (slatedb.Options.BulkLoad), so the record never survives
	// without the data it counts.
	if err := writeProgress(ctx, w, prog, false); err != nil {
		return false, err
	}
	if err := w.Flush(ctx); err != nil {
		return false, fmt.Errorf("shard: import %s: flush: %w", urls[pt.index], err)
	}
	// The counter and system keys held back for the end count as done now,
	// so that a finished import's count reaches the trailers' total.
	opts.Progress.addRecords(uint64(len(pt.end.system)))
	opts.Progress.shardDone()
	if opts.AfterShard != nil {
		opts.AfterShard(pt.index)
	}
	if opts.Continue != nil {
		if err := opts.Continue(ctx); err != nil {
			return false, fmt.Errorf("shard: import stopped after shard %d: %w", pt.index, err)
		}
	}
	return !opts.StopAfter.IsZero() && time.Now().After(opts.StopAfter), nil
}

// decodeShards reads the shards not done, in index order, into batches sent
// on out (taking spent batches back from free), each shard followed by its
// totals once its trailer has checked out. On an error it returns the
// index of the shard it was reading.
func decodeShards(ctx context.Context, store *blob.Store, urls []string, done []bool, out chan<- part, free <-chan *slatedb.Batch) (int, error) {
	send := func(pt part) error {
		select {
		case out <- pt:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i, u := range urls {
		if done[i] {
			continue
		}
		if err := decodeShard(ctx, store, i, u, send, free); err != nil {
			return i, err
		}
	}
	return 0, nil
}

func decodeShard(ctx context.Context, store *blob.Store, index int, url string, send func(part) error, free <-chan *slatedb.Batch) error {
	fr, err := ndjson.Open(ctx, store, url)
	if err != nil {
		return fmt.Errorf("shard: import %s: %w", url, err)
	}
	defer fr.Close()
	var t shardTotals
	var b *slatedb.Batch
	for {
		rec, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("shard: import %s: %w", url, err)
		}
		key, value := rec.Raw()
		t.records++
		if tag := rec.Tag(); tag == format.TagCounter || tag == format.TagSystem {
			t.digest.Add(rec)
			if bytes.Equal(key, progressKey) {
				return fmt.Errorf("shard: import %s: a shard holds the importer's own progress key", url)
			}
			t.system = append(t.system, entry{hex.EncodeToString(key), hex.EncodeToString(value)})
			continue
		}
		if b == nil {
			select {
			case b = <-free:
			default:
				b = new(slatedb.Batch)
			}
		}
		b.Put(key, value)
		if b.Len() >= batchRecords || b.Size() >= batchBytes {
			if err := send(part{index: index, batch: b}); err != nil {
				return err
			}
			b = nil
		}
	}
	if b != nil {
		if err := send(part{index: index, batch: b}); err != nil {
			return err
		}
	}
	return send(part{index: index, end: &t})
}

// clearShard deletes from the target the data keys of the shard at url that
// decode, up to its first bad line: what writeShards wrote of a shard that
// then failed. Counter and system keys are not there to delete (they wait in
// the progress record). Keys, not a key range: a shard's range is in its
// source's keys, which a transform re-encodes.
func clearShard(ctx context.Context, store *blob.Store, w *slatedb.Writer, url string) error {
	fr, err := ndjson.Open(ctx, store, url)
	if err != nil {
		return fmt.Errorf("shard: import: clear %s: %w", url, err)
	}
	defer fr.Close()
	var b slatedb.Batch
	for {
		rec, err := fr.Next()
		if err != nil {
			break // io.EOF or the error that failed the shard: nothing after it was written
		}
		if t := rec.Tag(); t == format.TagCounter || t == format.TagSystem {
			continue
		}
		key, _ := rec.Raw()
		b.Delete(key)
		if b.Len() >= batchRecords {
			if err := w.WriteAsync(ctx, &b); err != nil {
				return fmt.Errorf("shard: import: clear %s: %w", url, err)
			}
			b.Reset()
		}
	}
	if b.Len() > 0 {
		if err := w.WriteAsync(ctx, &b); err != nil {
			return fmt.Errorf("shard: import: clear %s: %w", url, err)
		}
	}
	if err := w.Flush(ctx); err != nil {
		return fmt.Errorf("shard: import: clear %s: flush: %w", url, err)
	}
	return nil
}

// writeProgress writes the progress record, durably or not.
func writeProgress(ctx context.Context, w *slatedb.Writer, prog *progress, durable bool) error {
	raw, err := json.Marshal(prog)
	if err != nil {
		return fmt.Errorf("shard: import: progress: %w", err)
	}
	var b slatedb.Batch
	b.Put(progressKey, raw)
	write := w.WriteAsync
	if durable {
		write = w.Write
	}
	if err := write(ctx, &b); err != nil {
		return fmt.Errorf("shard: import: save progress: %w", err)
	}
	return nil
}

// ErrNotImported: Finalize found shards not yet imported, or no import.
var ErrNotImported = errors.New("shard: import not complete")

// Finalize finishes an import made with NoFinalize: once every shard is in,
// it writes the counter and system keys with the format version and removes
// the progress record, in one batch. A target already finalized in format v
// is left as it is, so a retried Finalize succeeds.
func Finalize(ctx context.Context, url string, v format.Version, so slatedb.Options) error {
	so.Passive = true // one batch: no compaction to wait for on close
	w, err := slatedb.OpenWriter(ctx, url, so)
	if err != nil {
		return fmt.Errorf("shard: finalize: open target %s: %w", url, err)
	}
	defer w.Close()
	raw, err := w.Get(ctx, progressKey)
	if errors.Is(err, slatedb.ErrNotFound) {
		if got, verr := w.Get(ctx, format.FormatVersionKey()); verr == nil {
			if n, _ := format.DecodeFormatVersion(got); uint64(n) == uint64(v) {
				return w.Close()
			}
		}
		return fmt.Errorf("%w: %s holds no import progress", ErrNotImported, url)
	}
	if err != nil {
		return fmt.Errorf("shard: finalize %s: %w", url, err)
	}
	var p progress
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("shard: finalize %s: progress record: %w", url, err)
	}
	if n := count(p.Done); n < p.Shards {
		return fmt.Errorf("%w: %d of %d shards imported into %s", ErrNotImported, n, p.Shards, url)
	}
	if err := finalize(ctx, w, &p, v); err != nil {
		return err
	}
	return w.Close()
}

// finalize writes the counter and system keys, the format version among them,
// and removes the progress record, in one atomic batch.
func finalize(ctx context.Context, w *slatedb.Writer, prog *progress, v format.Version) error {
	var b slatedb.Batch
	sawVersion := false
	for _, e := range prog.System {
		k, err1 := hex.DecodeString(e.Key)
		val, err2 := hex.DecodeString(e.Value)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("shard: import: progress record holds bad hex")
		}
		if bytes.Equal(k, format.FormatVersionKey()) {
			n, err := format.DecodeFormatVersion(val)
			if err != nil || uint64(n) != uint64(v) {
				return fmt.Errorf("%w: the shards' version key says %d (%v), the format is %s", ErrNoVersion, n, err, v)
			}
			sawVersion = true
		}
		b.Put(k, val)
	}
	if !sawVersion {
		return fmt.Errorf("%w: no shard holds %x", ErrNoVersion, format.FormatVersionKey())
	}
	b.Delete(progressKey)
	if err := w.Write(ctx, &b); err != nil {
		return fmt.Errorf("shard: import: final batch: %w", err)
	}
	return nil
}
