package ndjson

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

// compression is a shard file's compression, chosen by its name.
type compression int

const (
	plain compression = iota
	zstdCompressed
	gzipCompressed
)

func compressionOf(url string) compression {
	switch {
	case strings.HasSuffix(url, ".zst"):
		return zstdCompressed
	case strings.HasSuffix(url, ".gz"):
		return gzipCompressed
	}
	return plain
}

// zstd settings. A 1 MiB window compresses shards as well as the default
// 8 MiB one (their redundancy is between nearby rows) in a quarter of the
// memory. The fastest level: the shard step is bound by CPU, and the
// default level cost about 10 % more of the fused step's CPU for shard
// files 2.6 % smaller (docs/performance-history.md, 2026-12-02); any level
// reads back the same.
// Two encoders let compression overlap record encoding (30% more
// records/s on two cores); decoding is cheap next to record decoding, so
// it stays on the reading goroutine. The decoder's window limit bounds its
// memory whatever a damaged or foreign frame asks for.
const (
	zstdWindow    = 1 << 20
	zstdEncoders  = 2
	zstdMaxWindow = 64 << 20
	zstdLevel     = zstd.SpeedFastest
)

// FileWriter writes a shard file by URL (see blob.Store.Create). The file
// appears only when Close succeeds: a failed or abandoned export leaves no
// shard behind, not even a partial one.
type FileWriter struct {
	*Writer
	obj  *blob.Writer
	cw   io.WriteCloser // the compressor, or nil
	done bool
}

// Create starts writing a shard file at url with header h: zstd-compressed
// if url ends in ".zst", gzip-compressed if it ends in ".gz", plain
// otherwise. The caller must Close or Abort it; `defer fw.Abort()` is safe.
func Create(ctx context.Context, store *blob.Store, url string, h Header) (*FileWriter, error) {
	obj, err := store.Create(ctx, url)
	if err != nil {
		return nil, err
	}
	fw := &FileWriter{obj: obj}
	var w io.Writer = obj
	switch compressionOf(url) {
	case zstdCompressed:
		zw, err := zstd.NewWriter(obj, zstd.WithWindowSize(zstdWindow), zstd.WithEncoderConcurrency(zstdEncoders), zstd.WithEncoderLevel(zstdLevel))
		if err != nil {
			obj.Abort()
			return nil, fmt.Errorf("ndjson: %s: %w", url, err)
		}
		fw.cw, w = zw, zw
	case gzipCompressed:
		gw := gzip.NewWriter(obj)
		fw.cw, w = gw, gw
	}
	if fw.Writer, err = NewWriter(w, h); err != nil {
		fw.Abort()
		return nil, fmt.Errorf("ndjson: %s: %w", url, err)
	}
	return fw, nil
}

// Close writes the trailer, finishes the compressed stream and publishes
// the file. On any error, an earlier failed Write included, it publishes
// nothing.
func (fw *FileWriter) Close() error {
	if fw.done {
		return errClosed
	}
	err := fw.Writer.Close()
	if err == nil && fw.cw != nil {
		err = fw.cw.Close()
	}
	if err != nil {
		fw.Abort()
		return err
	}
	fw.done = true
	return fw.obj.Close()
}

// Abort abandons the file, leaving nothing at its URL. It does nothing after
// Close or Abort.
func (fw *FileWriter) Abort() {
	if fw.done {
		return
	}
	fw.done = true
	if fw.cw != nil {
		// First, as the zstd encoder writes from its own goroutine: Close
		// waits for it. What it flushes is never published.
		_ = fw.cw.Close()
	}
	fw.obj.Abort()
}

// FileReader reads a shard file by URL; see Reader.
type FileReader struct {
	*Reader
	closers []func() error // in order: decompressor, object
}

// Open opens the shard file at url and reads its header, decompressing by
// name as Create compresses. The caller must Close it.
func Open(ctx context.Context, store *blob.Store, url string) (*FileReader, error) {
	obj, _, err := store.Open(ctx, url)
	if err != nil {
		return nil, err
	}
	fr := &FileReader{closers: []func() error{obj.Close}}
	src := &sourceReader{r: obj}
	var r io.Reader = obj
	switch compressionOf(url) {
	case zstdCompressed:
		zr, err := zstd.NewReader(src, zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderConcurrency(1))
		if err != nil {
			obj.Close()
			return nil, fmt.Errorf("ndjson: %s: %w", url, err)
		}
		fr.closers = append([]func() error{func() error { zr.Close(); return nil }}, fr.closers...)
		r = &decompressReader{r: zr, src: src}
	case gzipCompressed:
		gr, err := gzip.NewReader(src)
		if err != nil {
			obj.Close()
			return nil, fmt.Errorf("ndjson: %s: %w", url, corrupt(err, src))
		}
		fr.closers = append([]func() error{gr.Close}, fr.closers...)
		r = &decompressReader{r: gr, src: src}
	}
	if fr.Reader, err = NewReader(r); err != nil {
		fr.Close()
		return nil, fmt.Errorf("ndjson: %s: %w", url, err)
	}
	return fr, nil
}

// Close releases the decompressor and the object.
func (fr *FileReader) Close() error {
	var errs []error
	for _, c := range fr.closers {
		errs = append(errs, c())
	}
	return errors.Join(errs...)
}

// VerifyFile reads the whole shard file at url and checks it, as Verify.
func VerifyFile(ctx context.Context, store *blob.Store, url string) (Header, Trailer, error) {
	fr, err := Open(ctx, store, url)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	defer fr.Close()
	t, err := fr.drain()
	if err != nil {
		return Header{}, Trailer{}, fmt.Errorf("ndjson: %s: %w", url, err)
	}
	return fr.header, t, nil
}

// SkimFile checks the shard file at url as Skim does: its framing, record
// count and SHA-256, without decoding records.
func SkimFile(ctx context.Context, store *blob.Store, url string) (Header, Trailer, error) {
	fr, err := Open(ctx, store, url)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	defer fr.Close()
	t, err := fr.skim()
	if err != nil {
		return Header{}, Trailer{}, fmt.Errorf("ndjson: %s: %w", url, err)
	}
	return fr.header, t, nil
}

// SkimFiles skims the files at urls (SkimFile) on one goroutine per CPU
// and returns their trailers in the same order, or the error of the first
// bad file in that order.
func SkimFiles(ctx context.Context, store *blob.Store, urls []string) ([]Trailer, error) {
	trailers := make([]Trailer, len(urls))
	errs := make([]error, len(urls))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(urls)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				_, trailers[i], errs[i] = SkimFile(ctx, store, urls[i])
			}
		}()
	}
	for i := range urls {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return trailers, nil
}

// sourceReader remembers the read errors of the stored object, so that a
// decompressor's error can be told apart: the object's (a network or disk
// failure, passed on as it is) or the data's (ErrCorrupt).
type sourceReader struct {
	r   io.Reader
	err error
}

func (s *sourceReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		s.err = err
	}
	return n, err
}

// decompressReader marks the decompressor's own errors ErrCorrupt.
type decompressReader struct {
	r   io.Reader
	src *sourceReader
}

func (d *decompressReader) Read(p []byte) (int, error) {
	n, err := d.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = corrupt(err, d.src)
	}
	return n, err
}

func corrupt(err error, src *sourceReader) error {
	if src.err != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrCorrupt, err)
}
