package ndjson

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// NameShardCorrupt is the name of a shard file that cannot be read as
// written, a class several errors share: the reading errors below, and
// pkg/shard's incomplete set.
const NameShardCorrupt = "ShardCorrupt"

// Reading errors, matched with errors.Is. The error returned says more:
// the line, what was expected, what was found.
// All of them are named NameShardCorrupt.
var (
	// ErrHeader: line 1 is not a shard header, or is one of another export
	// format version, or names an unsupported catalog format.
	ErrHeader = errname.New("ndjson", NameShardCorrupt, "bad shard header")
	// ErrNoTrailer: the file ends without a trailer, so it was cut short.
	ErrNoTrailer = errname.New("ndjson", NameShardCorrupt, "no trailer (truncated shard file)")
	// ErrTrailerMismatch: the trailer's counts or SHA-256 differ from the
	// records read.
	ErrTrailerMismatch = errname.New("ndjson", NameShardCorrupt, "trailer does not match the records")
	// ErrBadLine: a record line does not decode; see *LineError.
	ErrBadLine = errname.New("ndjson", NameShardCorrupt, "bad line")
	// ErrCorrupt: the compressed stream is damaged or cut short.
	ErrCorrupt = errname.New("ndjson", NameShardCorrupt, "corrupt compressed stream")
)

// LineError is a record line that does not decode. It matches ErrBadLine
// and unwraps to the cause.
type LineError struct {
	Line int // 1-based; the header is line 1
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s %d: %v", ErrBadLine, e.Line, e.Err) }

// Is makes every LineError an ErrBadLine.
func (e *LineError) Is(target error) bool { return target == ErrBadLine }

// ErrorName is ErrBadLine's, whatever the cause's.
func (e *LineError) ErrorName() string { return ErrBadLine.ErrorName() }

func (e *LineError) Unwrap() error { return e.Err }

// errLast marks reading past a file's last line, which the reader, peeking
// ahead, only does for a file without records or trailer.
var errLast = errors.New("no more lines")

// Reader reads one shard file as a stream, by one goroutine.
type Reader struct {
	br      *bufio.Reader
	header  Header
	line    []byte // the current line, reused
	lines   lineDecoder
	lineNo  int
	sum     hash.Hash
	counts  tagCounts
	records uint64
	trailer Trailer
	err     error // sticky; io.EOF once the trailer has been verified
}

// NewReader reads and checks the header line of r.
func NewReader(r io.Reader) (*Reader, error) {
	rd := &Reader{br: bufio.NewReaderSize(r, bufferBytes), sum: sha256.New()}
	line, err := rd.readLine()
	switch {
	case errors.Is(err, errLast):
		return nil, fmt.Errorf("%w: empty file", ErrHeader)
	case errors.Is(err, ErrBadLine) || errors.Is(err, ErrNoTrailer):
		return nil, fmt.Errorf("%w: %w", ErrHeader, err)
	case err != nil:
		return nil, err
	}
	if rd.header, err = parseHeader(line); err != nil {
		return nil, err
	}
	rd.lines.v = rd.header.CatalogFormat
	return rd, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.header }

// Next returns the next record. At the end of the file it checks the
// trailer and returns io.EOF only if the trailer matches every record read;
// otherwise, and on any other error, that error, and the same again on
// every later call.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	rec, err := r.next()
	if err != nil {
		r.err = err
	}
	return rec, err
}

func (r *Reader) next() (Record, error) {
	line, err := r.readLine()
	if errors.Is(err, errLast) {
		return Record{}, fmt.Errorf("%w: the file ends after line %d, the header", ErrNoTrailer, r.lineNo)
	}
	if err != nil {
		return Record{}, err
	}
	last, err := r.atEnd()
	if err != nil {
		return Record{}, err
	}
	if last {
		return Record{}, r.checkTrailer(line)
	}
	rec, err := r.lines.decode(line)
	if err != nil {
		return Record{}, &LineError{Line: r.lineNo, Err: err}
	}
	r.sum.Write(line)
	r.counts[rec.key.Tag]++
	r.records++
	return rec, nil
}

func (r *Reader) checkTrailer(line []byte) error {
	t, err := parseTrailer(line)
	if err != nil {
		return fmt.Errorf("%w: the last line, %d, is not a trailer: %v", ErrNoTrailer, r.lineNo, err)
	}
	sum := hex.EncodeToString(r.sum.Sum(nil))
	counts := r.counts.toMap()
	switch {
	case t.Records != r.records:
		return fmt.Errorf("%w: trailer says %d records, the file has %d", ErrTrailerMismatch, t.Records, r.records)
	case !maps.Equal(t.Counts, counts):
		return fmt.Errorf("%w: trailer counts %v, the records %v", ErrTrailerMismatch, t.Counts, counts)
	case t.SHA256 != sum:
		return fmt.Errorf("%w: trailer SHA-256 %s, the records' %s", ErrTrailerMismatch, t.SHA256, sum)
	}
	r.trailer = t
	return io.EOF
}

// Trailer returns the verified trailer once Next has returned io.EOF (the
// zero Trailer before).
func (r *Reader) Trailer() Trailer { return r.trailer }

// readLine returns the next line, newline included, valid until the next
// call. errLast: there is no next line.
func (r *Reader) readLine() ([]byte, error) {
	r.line = r.line[:0]
	r.lineNo++
	for {
		frag, err := r.br.ReadSlice('\n')
		if len(r.line)+len(frag) > MaxLineBytes {
			return nil, &LineError{Line: r.lineNo, Err: fmt.Errorf("longer than %d bytes", MaxLineBytes)}
		}
		r.line = append(r.line, frag...)
		switch {
		case err == nil:
			return r.line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(r.line) == 0:
			r.lineNo--
			return nil, errLast
		case err == io.EOF:
			return nil, fmt.Errorf("%w: the file ends inside line %d", ErrNoTrailer, r.lineNo)
		}
		return nil, fmt.Errorf("ndjson: reading line %d: %w", r.lineNo, err)
	}
}

// atEnd reports whether the current line is the file's last, by peeking.
func (r *Reader) atEnd() (bool, error) {
	_, err := r.br.Peek(1)
	if err == io.EOF {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("ndjson: reading after line %d: %w", r.lineNo, err)
	}
	return false, nil
}

// Verify reads a whole uncompressed shard file from r and checks it,
// keeping no records: nil error means every line decodes and the trailer
// matches.
func Verify(r io.Reader) (Header, Trailer, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	t, err := rd.drain()
	return rd.header, t, err
}

// Skim reads a whole uncompressed shard file from r and checks its framing
// without decoding a record: the header, then the bytes of every record line
// against the trailer's record count and SHA-256. It finds a file that is cut
// short, damaged or not the one its trailer describes at hashing speed, not
// decoding speed; that each line decodes, and the per-table counts, are left
// to the Reader that reads the records (whose io.EOF still means all of it).
func Skim(r io.Reader) (Header, Trailer, error) {
	rd, err := NewReader(r)
	if err != nil {
		return Header{}, Trailer{}, err
	}
	t, err := rd.skim()
	return rd.header, t, err
}

// skim reads the remaining lines, hashing and counting them, and checks the
// trailer's count and SHA-256.
func (r *Reader) skim() (Trailer, error) {
	for {
		line, err := r.readLine()
		if errors.Is(err, errLast) {
			return Trailer{}, fmt.Errorf("%w: the file ends after line %d, the header", ErrNoTrailer, r.lineNo)
		}
		if err != nil {
			return Trailer{}, err
		}
		last, err := r.atEnd()
		if err != nil {
			return Trailer{}, err
		}
		if !last {
			r.sum.Write(line)
			r.records++
			continue
		}
		t, err := parseTrailer(line)
		if err != nil {
			return Trailer{}, fmt.Errorf("%w: the last line, %d, is not a trailer: %v", ErrNoTrailer, r.lineNo, err)
		}
		switch sum := hex.EncodeToString(r.sum.Sum(nil)); {
		case t.Records != r.records:
			return Trailer{}, fmt.Errorf("%w: trailer says %d records, the file has %d", ErrTrailerMismatch, t.Records, r.records)
		case t.SHA256 != sum:
			return Trailer{}, fmt.Errorf("%w: trailer SHA-256 %s, the records' %s", ErrTrailerMismatch, t.SHA256, sum)
		}
		return t, nil
	}
}

// drain reads the remaining records, checking them and the trailer.
func (r *Reader) drain() (Trailer, error) {
	for {
		if _, err := r.Next(); errors.Is(err, io.EOF) {
			return r.trailer, nil
		} else if err != nil {
			return Trailer{}, err
		}
	}
}
