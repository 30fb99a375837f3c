package shard

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// ExportOptions tune an export.
type ExportOptions struct {
	// Format is the format the caller expects the source in (--format); 0
	// accepts any format this binary supports.
	Format format.Version
	// Shards is the number of shard files (default 1).
	Shards int
	// Checkpoint pins the export to an existing SlateDB checkpoint. Empty:
	// create a detached one for a consistent view, and delete it afterwards.
	Checkpoint string
	// Compression of shard files in a directory output: "", "gz" or "zst".
	Compression string
	// Concurrency is how many shards are exported at once (default 2).
	Concurrency int
	Store       slatedb.Options
	CreatedBy   string
	Progress    *Progress
}

// ShardResult is what exporting, transforming or importing one shard did.
type ShardResult struct {
	Index   int           `json:"index"`
	URL     string        `json:"url"`
	Records uint64        `json:"records"`
	Digest  ndjson.Digest `json:"digest"`
}

// ExportResult describes a finished export.
type ExportResult struct {
	Source     string         `json:"source"`
	Format     format.Version `json:"format"`
	Checkpoint string         `json:"checkpoint"`
	Shards     []ShardResult  `json:"shards"`
	Records    uint64         `json:"records"`
	Digest     ndjson.Digest  `json:"digest"`
}

// ErrOutput: the output cannot hold the export asked for.
var ErrOutput = errors.New("shard: bad export output")

// checkpointLifetime bounds how long a checkpoint made for an export outlives
// a crashed export: garbage collection may then reclaim what it pins.
const checkpointLifetime = 6 * time.Hour

// FixedView is the poll interval of a reader that must not move: longer than
// any export.
const FixedView = 30 * 24 * time.Hour

// Export writes the catalog at url into shard files at output: one file, or
// Shards files in a directory or under an S3 prefix. With opts.Checkpoint the
// source is read as that checkpoint holds it; without, as it is when the
// export starts, its WAL included. The source is never written to, except
// for the checkpoint entry an export without --checkpoint adds and removes.
func Export(ctx context.Context, store *blob.Store, url, output string, opts ExportOptions) (_ ExportResult, err error) {
	n := max(opts.Shards, 1)
	if layout.IsShardFile(output) && n > 1 {
		return ExportResult{}, fmt.Errorf("%w: %d shards need a directory or S3 prefix, not the file %s", ErrOutput, n, output)
	}
	if opts.Compression != "" && opts.Compression != "gz" && opts.Compression != "zst" {
		return ExportResult{}, fmt.Errorf("%w: compression %q: want gz or zst", ErrOutput, opts.Compression)
	}
	// The startup check comes first, on the live catalog, before anything,
	// a checkpoint included, is written.
	live, err := catalog.Open(ctx, url, catalog.Options{Expect: opts.Format, Store: opts.Store})
	if err != nil {
		return ExportResult{}, err
	}
	live.Close()

	cp := opts.Checkpoint
	if cp == "" {
		made, cerr := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: checkpointLifetime, Name: layout.ExportCheckpoint}, opts.Store)
		if cerr != nil {
			err = cerr
			return ExportResult{}, fmt.Errorf("shard: export %s: checkpoint: %w", url, err)
		}
		cp = made.ID
		defer func() {
			// Cleanup runs even when ctx was canceled.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if derr := slatedb.DeleteCheckpoint(cctx, url, cp, opts.Store); derr != nil && err == nil {
				err = fmt.Errorf("shard: export %s: delete checkpoint %s: %w", url, cp, derr)
			}
		}()
	}
	view := catalog.Options{Expect: opts.Format, Checkpoint: cp, Store: opts.Store}
	if opts.Checkpoint == "" {
		// A reader pinned to a detached checkpoint stops at the WAL its
		// manifest records, and RockLake's writer leaves its newest commits
		// (all of them, in a small catalog) in WAL files the manifest does not
		// name yet. So read the latest state, WAL replayed, as it is when the
		// reader opens, and never poll for more: one fixed view, everything
		// durable by then. The checkpoint made above keeps the files of that
		// state from the source's garbage collector meanwhile.
		view.Checkpoint = ""
		view.Store.PollInterval = FixedView
	}
	c, err := catalog.Open(ctx, url, view)
	if err != nil {
		return ExportResult{}, err
	}
	defer c.Close()
	ranges, err := Plan(ctx, c, n)
	if err != nil {
		return ExportResult{}, err
	}
	opts.Progress.total(n)
	if opts.Progress != nil {
		est, err := EstimateKeys(ctx, c)
		if err != nil {
			return ExportResult{}, err
		}
		opts.Progress.estimate(est, n)
	}
	res := ExportResult{Source: url, Format: c.Version(), Checkpoint: cp, Shards: make([]ShardResult, n)}
	err = ForEach(ctx, n, opts.Concurrency, func(ctx context.Context, i int) error {
		out := output
		if !layout.IsShardFile(output) {
			out = layout.Join(output, layout.ShardFile(i, n, opts.Compression))
		}
		h := ndjson.Header{
			CatalogFormat: c.Version(), ShardIndex: i, ShardCount: n,
			KeyStart: ranges[i].Start, KeyEnd: ranges[i].End,
			CheckpointID: cp, Source: url, CreatedBy: opts.CreatedBy,
		}
		r, err := ExportShard(ctx, store, c, h, out, opts.Progress)
		res.Shards[i] = r
		return err
	})
	if err != nil {
		return ExportResult{}, err
	}
	for _, s := range res.Shards {
		res.Records += s.Records
		res.Digest.Merge(s.Digest)
	}
	return res, nil
}

// ExportShard writes the keys in [h.KeyStart, h.KeyEnd) of an open catalog
// into one shard file. The file appears only if every record made it.
func ExportShard(ctx context.Context, store *blob.Store, c *catalog.Catalog, h ndjson.Header, out string, p *Progress) (ShardResult, error) {
	res, _, err := exportShard(ctx, store, c, h, out, p, nil)
	return res, err
}

// Transformed is the second shard ExportTransformShard writes: the exported
// records transformed along Path (migration.Stream, the loop
// migration.TransformFile runs), into Out.
type Transformed struct {
	Out       string
	To        format.Version
	Path      []migration.Conversion
	Options   migration.Options
	CreatedBy string
	// Progress counts the records transformed.
	Progress *Progress
}

// ExportTransformShard is ExportShard and migration.TransformFile of its
// output in one read of the source: the shard at out is byte for byte what
// ExportShard writes, the one at t.Out what TransformFile makes of it. The
// transform runs on its own goroutine, one batch of records behind the
// export, and each file compresses on its own encoders. Neither file
// appears unless both got every record (on any error, the fail policy's
// unknown tags included, neither is published), and the transformed one
// appears after the exported one.
func ExportTransformShard(ctx context.Context, store *blob.Store, c *catalog.Catalog, h ndjson.Header, out string, t Transformed, p *Progress) (ShardResult, migration.Stats, error) {
	return exportShard(ctx, store, c, h, out, p, &t)
}

// fuseBatch is how many records the export hands the transform at a time:
// enough to keep channel operations off the profile, few enough to bound
// the records in flight (fuseBatch x fuseDepth).
const (
	fuseBatch = 512
	fuseDepth = 4
)

func exportShard(ctx context.Context, store *blob.Store, c *catalog.Catalog, h ndjson.Header, out string, p *Progress, t *Transformed) (res ShardResult, stats migration.Stats, err error) {
	res = ShardResult{Index: h.ShardIndex, URL: out}
	fw, err := ndjson.Create(ctx, store, out, h)
	if err != nil {
		return res, stats, fmt.Errorf("shard: export shard %d: %w", h.ShardIndex, err)
	}
	defer fw.Abort() // no-op after a successful Close
	var tw *transformWriter
	if t != nil {
		ctx, tw, err = startTransform(ctx, store, h, t)
		if err != nil {
			return res, stats, fmt.Errorf("shard: export shard %d: %w", h.ShardIndex, err)
		}
		defer tw.abort() // no-op after a successful close
	}
	if len(h.KeyEnd) == 0 || string(h.KeyStart) < string(h.KeyEnd) {
		var pending uint64
		for e, err := range c.ScanRaw(ctx, h.KeyStart, h.KeyEnd) {
			if err != nil {
				if cause := context.Cause(ctx); cause != nil {
					err = cause // the transform's failure, which stopped the scan
				}
				return res, stats, fmt.Errorf("shard: export shard %d: %w", h.ShardIndex, err)
			}
			rec, err := ndjson.NewRecord(c.Version(), e.Key, e.Value)
			if err == nil && tw != nil {
				// Most records' transformed lines are this line
				// (ndjson.Record.Move): built once, written twice.
				rec, err = rec.WithLine()
			}
			if err != nil {
				return res, stats, fmt.Errorf("shard: export shard %d: %w", h.ShardIndex, err)
			}
			if err := fw.Write(rec); err != nil {
				return res, stats, fmt.Errorf("shard: export shard %d: %w", h.ShardIndex, err)
			}
			res.Digest.Add(rec)
			res.Records++
			// After the export's last use of rec: the transform owns it now.
			if err := tw.add(rec); err != nil {
				return res, stats, fmt.Errorf("shard: export shard %d: %w", h.ShardIndex, err)
			}
			if pending++; pending == 4096 {
				p.addRecords(pending)
				pending = 0
			}
		}
		p.addRecords(pending)
	}
	if tw != nil {
		// The transform's last records and its trailer first: a transform
		// error (the fail policy's unknown tags) publishes neither file.
		if stats, err = tw.finish(); err != nil {
			return res, stats, fmt.Errorf("shard: export shard %d: transform: %w", h.ShardIndex, err)
		}
	}
	if err := fw.Close(); err != nil {
		return res, stats, fmt.Errorf("shard: export shard %d: publish %s: %w", h.ShardIndex, out, err)
	}
	if tw != nil {
		if err := tw.publish(); err != nil {
			return res, stats, fmt.Errorf("shard: export shard %d: publish %s: %w", h.ShardIndex, t.Out, err)
		}
	}
	p.shardExported(res.Records)
	return res, stats, nil
}

// transformWriter transforms and writes batches of exported records on its
// own goroutine.
type transformWriter struct {
	fw     *ndjson.FileWriter
	t      *Transformed
	stream *migration.Stream
	batch  []ndjson.Record
	ch     chan []ndjson.Record
	free   chan []ndjson.Record // batches the goroutine is done with, for reuse
	done   chan struct{}
	err    error // the goroutine's, read after done
	cancel context.CancelCauseFunc
	closed bool
}

func startTransform(ctx context.Context, store *blob.Store, h ndjson.Header, t *Transformed) (context.Context, *transformWriter, error) {
	fw, err := ndjson.Create(ctx, store, t.Out, migration.TargetHeader(h, t.To, t.CreatedBy))
	if err != nil {
		return ctx, nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	tw := &transformWriter{
		fw: fw, t: t, stream: migration.NewStream(t.Path, t.Options),
		batch: make([]ndjson.Record, 0, fuseBatch), ch: make(chan []ndjson.Record, fuseDepth),
		free: make(chan []ndjson.Record, fuseDepth+1),
		done: make(chan struct{}), cancel: cancel,
	}
	go tw.run()
	return ctx, tw, nil
}

func (tw *transformWriter) run() {
	defer close(tw.done)
	for batch := range tw.ch {
		if tw.err != nil {
			continue // drain: the export stops at the canceled context
		}
		for _, rec := range batch {
			out, err := tw.stream.Next(rec)
			for _, o := range out {
				if err == nil {
					err = tw.fw.Write(o)
				}
			}
			if err != nil {
				tw.err = err
				tw.cancel(err)
				break
			}
		}
		tw.t.Progress.addRecords(uint64(len(batch)))
		clear(batch) // lets the records' rows go
		select {
		case tw.free <- batch[:0]:
		default:
		}
	}
}

// add queues rec; nil tw (a plain export) does nothing.
func (tw *transformWriter) add(rec ndjson.Record) error {
	if tw == nil {
		return nil
	}
	tw.batch = append(tw.batch, rec)
	if len(tw.batch) < fuseBatch {
		return nil
	}
	return tw.flush()
}

func (tw *transformWriter) flush() error {
	if len(tw.batch) == 0 {
		return nil
	}
	select {
	case tw.ch <- tw.batch:
	case <-tw.done:
		return tw.err
	}
	select {
	case tw.batch = <-tw.free:
	default:
		tw.batch = make([]ndjson.Record, 0, fuseBatch)
	}
	return nil
}

// stop ends the goroutine and waits for it.
func (tw *transformWriter) stop() {
	if !tw.closed {
		tw.closed = true
		close(tw.ch)
		<-tw.done
	}
}

// finish transforms the last batch, publishing nothing yet.
func (tw *transformWriter) finish() (migration.Stats, error) {
	err := tw.flush()
	tw.stop()
	tw.cancel(nil)
	if err == nil {
		err = tw.err
	}
	if err == nil {
		err = tw.stream.Err()
	}
	return tw.stream.Stats, err
}

// publish writes the trailer, finishes the compressed stream and makes the
// file appear.
func (tw *transformWriter) publish() error { return tw.fw.Close() }

// abort stops the goroutine and leaves nothing at the output.
func (tw *transformWriter) abort() {
	tw.stop()
	tw.cancel(nil)
	tw.fw.Abort()
}

// ForEach runs f for 0..n-1 with at most k at once (default 2), stopping at
// the first error.
func ForEach(ctx context.Context, n, k int, f func(ctx context.Context, i int) error) error {
	if k < 1 {
		k = 2
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(k, n); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := f(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		select {
		case next <- i:
			continue
		case <-ctx.Done():
		}
		break
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && ctx.Err() != nil {
		return err
	}
	return nil
}
