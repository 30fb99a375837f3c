package ndjson

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
)

// MaxLineBytes bounds a line, newline included, so that a damaged file
// cannot make a reader buffer without end. Writers refuse longer records,
// which no reader would take.
const MaxLineBytes = 64 << 20

const bufferBytes = 256 << 10

// Writer writes one shard file as a stream, by one goroutine.
type Writer struct {
	bw      *bufio.Writer
	header  Header
	line    []byte // reused per record
	sum     hash.Hash
	counts  tagCounts
	records uint64
	trailer Trailer
	err     error // sticky: after a failure no trailer is ever written
	closed  bool
}

var errClosed = errors.New("ndjson: writer closed")

// NewWriter writes h as the header line and returns a Writer for the
// records. Nothing in the file is complete until Close writes the trailer.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	line, err := h.marshal()
	if err != nil {
		return nil, err
	}
	bw := bufio.NewWriterSize(w, bufferBytes)
	if _, err := bw.Write(line); err != nil {
		return nil, err
	}
	return &Writer{bw: bw, header: h, sum: sha256.New()}, nil
}

// Write appends r, which must be in the header's catalog format. Any error
// is final: the Writer refuses everything after it, Close included, so that
// a shard missing a record never gets a trailer.
func (w *Writer) Write(r Record) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosed
	}
	var err error
	if r.version != w.header.CatalogFormat {
		err = fmt.Errorf("ndjson: a %s record in a %s shard", r.version, w.header.CatalogFormat)
	}
	line := r.line
	if err == nil && line == nil {
		w.line, err = appendRecordLine(w.line[:0], r)
		line = w.line
	}
	if err == nil && len(line) > MaxLineBytes {
		err = fmt.Errorf("ndjson: key %x: record line of %d bytes exceeds %d", r.rawKey, len(line), MaxLineBytes)
	}
	if err == nil {
		_, err = w.bw.Write(line)
	}
	if err != nil {
		w.err = err
		return err
	}
	w.sum.Write(line)
	w.counts[r.key.Tag]++
	w.records++
	return nil
}

// Close writes the trailer and flushes. It does not close the underlying
// writer. After a failed Write it writes nothing and returns that error.
func (w *Writer) Close() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosed
	}
	w.closed = true
	t := Trailer{Records: w.records, Counts: w.counts.toMap(), SHA256: hex.EncodeToString(w.sum.Sum(nil))}
	line, err := t.marshal()
	if err == nil {
		_, err = w.bw.Write(line)
	}
	if err == nil {
		err = w.bw.Flush()
	}
	if err != nil {
		w.err = err
		return err
	}
	w.trailer = t
	return nil
}

// Trailer returns the trailer Close wrote (the zero Trailer before).
func (w *Writer) Trailer() Trailer { return w.trailer }
