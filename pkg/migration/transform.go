package migration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// Options tune a transform.
type Options struct {
	UnknownTags UnknownTags
	// Read, when set, counts the records read as they go (for a progress
	// display).
	Read *atomic.Uint64
}

// Stats report what a transform read and wrote.
type Stats struct {
	RecordsIn, RecordsOut uint64
	// Carried and Dropped count records of unknown tags by tag.
	Carried map[format.Tag]uint64 `json:",omitempty"`
	Dropped map[format.Tag]uint64 `json:",omitempty"`
	// Digest is the order-independent digest of the records written.
	Digest ndjson.Digest
}

// Records transforms one record along path. Records of unknown tags follow
// the policy: carry returns them unchanged, drop returns none, fail returns
// *UnknownTagsError.
func Records(rec ndjson.Record, path []Conversion, opts Options) ([]ndjson.Record, error) {
	if !rec.Tag().Known() {
		switch opts.UnknownTags {
		case UnknownCarry:
			return carry(rec, path)
		case UnknownDrop:
			return nil, nil
		default:
			return nil, &UnknownTagsError{Counts: map[format.Tag]uint64{rec.Tag(): 1}}
		}
	}
	switch len(path) {
	case 0:
		return []ndjson.Record{rec}, nil
	case 1:
		// One step (v1→v2, every migration so far): its records as it
		// makes them, without a slice per step to copy them through.
		return path[0].Apply(rec)
	}
	recs := []ndjson.Record{rec}
	for _, m := range path {
		var next []ndjson.Record
		for _, r := range recs {
			out, err := m.Apply(r)
			if err != nil {
				return nil, err
			}
			next = append(next, out...)
		}
		recs = next
	}
	return recs, nil
}

// carry moves an unknown-tag record into the target format byte for byte.
func carry(rec ndjson.Record, path []Conversion) ([]ndjson.Record, error) {
	if len(path) == 0 {
		return []ndjson.Record{rec}, nil
	}
	key, value := rec.Raw()
	out, err := ndjson.NewRecord(path[len(path)-1].To, key, value)
	if err != nil {
		return nil, fmt.Errorf("migration: carry unknown tag at key %x: %w", key, err)
	}
	return []ndjson.Record{out}, nil
}

// A Stream transforms records one at a time along path under the
// unknown-tag policy, keeping Stats: the one loop behind Transform (shard
// files) and in-place migration (a whole catalog). With the fail policy it
// reads on past the first unknown tag, to list every unknown tag and its
// count, and makes no more records; Err then says so.
type Stream struct {
	Stats   Stats
	path    []Conversion
	opts    Options
	unknown *UnknownTagsError
}

// NewStream starts a stream along path.
func NewStream(path []Conversion, opts Options) *Stream {
	return &Stream{path: path, opts: opts}
}

// Next returns the records that replace rec: none for a dropped one, and
// none once the fail policy met an unknown tag.
func (s *Stream) Next(rec ndjson.Record) ([]ndjson.Record, error) {
	s.Stats.RecordsIn++
	if tag := rec.Tag(); !tag.Known() {
		switch s.opts.UnknownTags {
		case UnknownFail:
			if s.unknown == nil {
				s.unknown = &UnknownTagsError{Counts: map[format.Tag]uint64{}}
			}
			s.unknown.Counts[tag]++
			return nil, nil
		case UnknownDrop:
			s.Stats.Dropped = countTag(s.Stats.Dropped, tag)
			return nil, nil
		case UnknownCarry:
			s.Stats.Carried = countTag(s.Stats.Carried, tag)
		}
	}
	if s.unknown != nil {
		return nil, nil // only counting now
	}
	out, err := Records(rec, s.path, s.opts)
	if err != nil {
		return nil, err
	}
	for _, o := range out {
		s.Stats.Digest.Add(o)
		s.Stats.RecordsOut++
	}
	return out, nil
}

// Err is the fail policy's *UnknownTagsError, with every unknown tag seen
// and its count, or nil.
func (s *Stream) Err() error {
	if s.unknown != nil {
		return s.unknown
	}
	return nil
}

func countTag(m map[format.Tag]uint64, t format.Tag) map[format.Tag]uint64 {
	if m == nil {
		m = map[format.Tag]uint64{}
	}
	m[t]++
	return m
}

// Transform streams every record of r through path into w (whose header the
// caller made for the target format). With the fail policy it reads on past
// the first unknown tag, to list every unknown tag and its count, and writes
// nothing more; the caller then aborts w, so nothing is published.
func Transform(ctx context.Context, r *ndjson.Reader, w *ndjson.Writer, path []Conversion, opts Options) (Stats, error) {
	s := NewStream(path, opts)
	for {
		if n := s.Stats.RecordsIn; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return s.Stats, err
			}
			if opts.Read != nil && n > 0 {
				opts.Read.Add(4096)
			}
		}
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			if opts.Read != nil {
				opts.Read.Add(s.Stats.RecordsIn % 4096)
			}
			break
		}
		if err != nil {
			return s.Stats, err
		}
		out, err := s.Next(rec)
		if err != nil {
			return s.Stats, err
		}
		for _, o := range out {
			if err := w.Write(o); err != nil {
				return s.Stats, err
			}
		}
	}
	return s.Stats, s.Err()
}

// TargetHeader is the header of a shard transformed into format to: the same
// shard of the same source, in the new format.
func TargetHeader(h ndjson.Header, to format.Version, createdBy string) ndjson.Header {
	h.CatalogFormat = to
	h.CreatedBy = createdBy
	return h
}

// TransformFile transforms the shard at in into a new shard at out (file path
// or s3:// URL; compression by suffix). The output is published only when
// every record made it: on any error nothing appears at out.
func TransformFile(ctx context.Context, store *blob.Store, in, out string, to format.Version, createdBy string, opts Options) (Stats, error) {
	fr, err := ndjson.Open(ctx, store, in)
	if err != nil {
		return Stats{}, err
	}
	defer fr.Close()
	h := fr.Header()
	path, err := Path(h.CatalogFormat, to)
	if err != nil {
		return Stats{}, fmt.Errorf("transform %s: %w", in, err)
	}
	fw, err := ndjson.Create(ctx, store, out, TargetHeader(h, to, createdBy))
	if err != nil {
		return Stats{}, err
	}
	st, err := Transform(ctx, fr.Reader, fw.Writer, path, opts)
	if err != nil {
		fw.Abort()
		return st, fmt.Errorf("transform %s: %w", in, err)
	}
	if err := fw.Close(); err != nil {
		return st, fmt.Errorf("transform %s: publish %s: %w", in, out, err)
	}
	return st, nil
}
