package catalog

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Entry is a key and its value as SlateDB stores them.
type Entry struct {
	Key, Value []byte
}

// Row is a decoded catalog entry: its key, its value as format.NewRow's
// message (a *wrapperspb.UInt64Value for a counter, ...) and the raw bytes.
type Row struct {
	Key     format.Key
	Msg     proto.Message
	Raw     Entry
	Version format.Version // the format Key and Msg were decoded in
}

// GetRaw reads one key's raw value; a missing key is ErrNotFound.
func (c *Catalog) GetRaw(ctx context.Context, key []byte) ([]byte, error) {
	v, err := c.kv.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("catalog: get %x: %w", key, err)
	}
	return v, nil
}

// Get reads and decodes the row at k; a missing key is ErrNotFound. Like
// Scan, it refuses a tag this binary does not know (format.ErrNoRowType):
// GetRaw reads those. Counter and system keys of no known shape (Raw) read
// as their stored bytes.
func (c *Catalog) Get(ctx context.Context, k format.Key) (proto.Message, error) {
	if !k.Tag.Known() {
		return nil, fmt.Errorf("catalog: get %s: %w", k.Tag, format.ErrNoRowType)
	}
	key, err := format.EncodeKey(c.version, k)
	if err != nil {
		return nil, fmt.Errorf("catalog: get: %w", err)
	}
	value, err := c.GetRaw(ctx, key)
	if err != nil {
		return nil, err
	}
	m, err := format.DecodeValue(c.version, k, value)
	if err != nil {
		return nil, fmt.Errorf("catalog: key %x: %w", key, err)
	}
	return m, nil
}

// SystemValue reads an integer system key (format.SystemWriterEpoch,
// format.SystemRetainFrom).
func (c *Catalog) SystemValue(ctx context.Context, name string) (uint64, error) {
	return c.uint64(ctx, format.SystemKey(name))
}

// Marks reads RockLake's writer-epoch and next_snapshot_id, which every
// RockLake writer moves (the epoch when it opens, the counter when it
// commits a snapshot); 0 for one absent (a catalog no RockLake writer
// opened yet). Freeze, Flip, rollback and the in-place undo compare them.
func (c *Catalog) Marks(ctx context.Context) (writerEpoch, nextSnapshotID uint64, err error) {
	writerEpoch, err = c.SystemValue(ctx, format.SystemWriterEpoch)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, 0, fmt.Errorf("catalog: read writer-epoch: %w", err)
	}
	nextSnapshotID, err = c.Counter(ctx, format.NameNextSnapshotID)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return 0, 0, fmt.Errorf("catalog: read next_snapshot_id: %w", err)
	}
	return writerEpoch, nextSnapshotID, nil
}

// Counter reads a counter (format.NameNextSnapshotID, ...; a per-table
// counter takes the table id).
func (c *Catalog) Counter(ctx context.Context, name string, tableID ...uint64) (uint64, error) {
	return c.uint64(ctx, format.CounterKey(c.version, name, tableID...))
}

func (c *Catalog) uint64(ctx context.Context, key []byte) (uint64, error) {
	value, err := c.GetRaw(ctx, key)
	if err != nil {
		return 0, err
	}
	n, err := format.DecodeCounter(c.version, value)
	if err != nil {
		return 0, fmt.Errorf("catalog: key %x: %w", key, err)
	}
	return n, nil
}

// Scan yields every row of tag t in key order. A tag this binary does not
// know has no row type, so asking for one is an error (ScanRaw reads it).
func (c *Catalog) Scan(ctx context.Context, t format.Tag) iter.Seq2[Row, error] {
	if !t.Known() {
		return func(yield func(Row, error) bool) {
			yield(Row{}, fmt.Errorf("catalog: scan %s: %w", t, format.ErrNoRowType))
		}
	}
	start, end := TagRange(t)
	return c.ScanRange(ctx, start, end)
}

// TagRange is the key range [start, end) holding every key of tag t (end is
// nil for 0xFF: to the end of the key space).
func TagRange(t format.Tag) (start, end []byte) {
	if t == 0xFF {
		return []byte{0xFF}, nil
	}
	return []byte{byte(t)}, []byte{byte(t) + 1}
}

// ScanRange yields the rows in [start, end) (nil end: to the end) in key
// order, decoded. Keys of unknown tags are skipped, as readers skip them;
// the first key or value that does not decode ends the scan with an error
// naming it. The iteration stops at the first error.
func (c *Catalog) ScanRange(ctx context.Context, start, end []byte) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		for e, err := range c.ScanRaw(ctx, start, end) {
			if err != nil {
				yield(Row{}, err)
				return
			}
			if len(e.Key) > 0 && !format.Tag(e.Key[0]).Known() {
				continue
			}
			row, err := c.decode(e)
			if !yield(row, err) || err != nil {
				return
			}
		}
	}
}

func (c *Catalog) decode(e Entry) (Row, error) {
	k, err := format.DecodeKey(c.version, e.Key)
	if err != nil {
		return Row{}, fmt.Errorf("catalog: key %x: %w", e.Key, err)
	}
	m, err := format.DecodeValue(c.version, k, e.Value)
	if err != nil {
		return Row{}, fmt.Errorf("catalog: value of key %x: %w", e.Key, err)
	}
	return Row{Key: k, Msg: m, Raw: e, Version: c.version}, nil
}

// ScanPrefix is ScanRaw of every key starting with prefix (all keys for an
// empty one).
func (c *Catalog) ScanPrefix(ctx context.Context, prefix []byte) iter.Seq2[Entry, error] {
	return c.ScanRaw(ctx, prefix, prefixEnd(prefix))
}

// prefixEnd is the first key after every key starting with prefix, nil for
// the end of the key space.
func prefixEnd(prefix []byte) []byte {
	end := append([]byte(nil), prefix...)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xFF {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}

// ScanRaw yields every entry in [start, end) (nil end: to the end) in key
// order, unknown tags included, without decoding anything. The slices stay
// valid after the iteration moves on. The iteration stops at the first error.
func (c *Catalog) ScanRaw(ctx context.Context, start, end []byte) iter.Seq2[Entry, error] {
	return func(yield func(Entry, error) bool) {
		it, err := c.kv.Scan(ctx, start, end)
		if err != nil {
			yield(Entry{}, fmt.Errorf("catalog: scan %s: %w", c.url, err))
			return
		}
		defer it.Close()
		for it.Next() {
			if !yield(Entry{Key: it.Key(), Value: it.Value()}, nil) {
				return
			}
		}
		if err := it.Err(); err != nil {
			yield(Entry{}, fmt.Errorf("catalog: scan %s: %w", c.url, err))
		}
	}
}

// Counts returns the number of keys per tag, by tag name, for every known
// tag (tags with no keys count 0).
// Keys of unknown tags are not counted (see UnknownTags). Keys are counted,
// not decoded.
func (c *Catalog) Counts(ctx context.Context) (map[string]uint64, error) {
	var n [256]uint64
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return nil, err
		}
		if len(e.Key) > 0 {
			n[e.Key[0]]++
		}
	}
	counts := map[string]uint64{}
	for _, t := range format.KnownTags() {
		counts[t.Name()] = n[t]
	}
	return counts, nil
}

// UnknownTags returns the number of keys per tag this binary does not know
// (only tags that have keys). It scans only the gaps between known tags.
func (c *Catalog) UnknownTags(ctx context.Context) (map[format.Tag]uint64, error) {
	counts := map[format.Tag]uint64{}
	for _, g := range unknownRanges {
		for e, err := range c.ScanRaw(ctx, g[0], g[1]) {
			if err != nil {
				return nil, err
			}
			counts[format.Tag(e.Key[0])]++
		}
	}
	return counts, nil
}

// unknownRanges are the key ranges of runs of unknown tags.
var unknownRanges = func() [][2][]byte {
	var rs [][2][]byte
	for t := 0; t < 256; {
		if format.Tag(t).Known() {
			t++
			continue
		}
		u := t
		for u < 256 && !format.Tag(u).Known() {
			u++
		}
		end := []byte{byte(u)}
		if u == 256 {
			end = nil
		}
		rs = append(rs, [2][]byte{{byte(t)}, end})
		t = u
	}
	return rs
}()
