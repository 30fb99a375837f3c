package shard

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Range is one shard's key range [Start, End); empty Start is the first key,
// empty End is past the last.
type Range struct {
	Index      int
	Start, End []byte
}

// MarshalJSON writes the keys as hex, for plans kept in S3 and for humans.
func (r Range) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Index int    `json:"index"`
		Start string `json:"start"`
		End   string `json:"end"`
	}{r.Index, hex.EncodeToString(r.Start), hex.EncodeToString(r.End)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (r *Range) UnmarshalJSON(b []byte) error {
	var raw struct {
		Index int    `json:"index"`
		Start string `json:"start"`
		End   string `json:"end"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	s, err := hex.DecodeString(raw.Start)
	if err != nil {
		return fmt.Errorf("shard: range %d start: %w", raw.Index, err)
	}
	e, err := hex.DecodeString(raw.End)
	if err != nil {
		return fmt.Errorf("shard: range %d end: %w", raw.Index, err)
	}
	*r = Range{Index: raw.Index, Start: s, End: e}
	return nil
}

// ErrBadPlan: ranges that do not partition the key space.
var ErrBadPlan = errors.New("shard: ranges do not partition the key space")

// CheckRanges verifies that ranges are indexed 0..n-1, none empty, and cover
// the key space without gap or overlap.
func CheckRanges(rs []Range) error {
	if len(rs) == 0 {
		return fmt.Errorf("%w: no ranges", ErrBadPlan)
	}
	if len(rs[0].Start) != 0 || len(rs[len(rs)-1].End) != 0 {
		return fmt.Errorf("%w: first must start at the first key and last end past the last", ErrBadPlan)
	}
	for i, r := range rs {
		if r.Index != i {
			return fmt.Errorf("%w: range %d has index %d", ErrBadPlan, i, r.Index)
		}
		if i > 0 && !bytes.Equal(rs[i-1].End, r.Start) {
			return fmt.Errorf("%w: range %d starts at %x, range %d ends at %x", ErrBadPlan, i, r.Start, i-1, rs[i-1].End)
		}
		if len(r.End) > 0 && bytes.Compare(r.Start, r.End) >= 0 {
			return fmt.Errorf("%w: range %d is empty or ends before it starts", ErrBadPlan, i)
		}
	}
	return nil
}

// volume is what bounds a tag's keys: the counters that bound their first
// two components, and how many keys the tag holds relative to that counter.
type volume struct {
	bound  string  // counter bounding the first component
	perID  float64 // keys per id (per file when byFile), relative
	byFile bool    // the tag's size follows the number of files, not ids
	// second bounds the second component ("" for none; perTableColumns
	// for the table's next_column_id counter), so that a tag whose keys
	// start with the table id can be cut inside one table: a catalog with
	// one big table still spreads over every shard.
	second string
}

// perTableColumns: the second component is a column id of the table in the
// first, bounded by that table's next_column_id counter.
const perTableColumns = "per-table next_column_id"

// volumes weighs the tags that hold the bulk of a RockLake catalog; other
// tags are small and never cut inside. In a real catalog most keys are per
// data file: its column stats (one per column), the file and its
// by-snapshot index entry, partition values.
var volumes = map[format.Tag]volume{
	format.TagFileColumnStats:    {format.NameNextCatalogID, 6, true, perTableColumns},
	format.TagDataFile:           {format.NameNextCatalogID, 1, true, format.NameNextFileID},
	format.TagDataFileBySnapshot: {format.NameNextCatalogID, 1, true, format.NameNextSnapshotID},
	format.TagFilePartitionValue: {format.NameNextCatalogID, 0.3, true, ""},
	format.TagDeleteFile:         {format.NameNextFileID, 0.1, true, ""},
	format.TagSnapshot:           {format.NameNextSnapshotID, 1, false, ""},
	format.TagSnapshotChanges:    {format.NameNextSnapshotID, 1, false, ""},
}

// segment is one weighed tag of a plan.
type segment struct {
	tag    format.Tag
	vol    volume
	bound  uint64
	weight float64
}

func planCounter(ctx context.Context, c *catalog.Catalog, name string, tableID ...uint64) (uint64, error) {
	x, err := c.Counter(ctx, name, tableID...)
	if errors.Is(err, catalog.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("shard: plan: counter %s%v: %w", name, tableID, err)
	}
	return x, nil
}

// weigh estimates, from the catalog's counters, how many keys each bulk tag
// holds.
func weigh(ctx context.Context, c *catalog.Catalog) ([]segment, float64, error) {
	var segs []segment
	total := 0.0
	files, err := planCounter(ctx, c, format.NameNextFileID)
	if err != nil {
		return nil, 0, err
	}
	for _, t := range format.KnownTags() {
		vol, ok := volumes[t]
		if !ok {
			continue
		}
		bound, err := planCounter(ctx, c, vol.bound)
		if err != nil {
			return nil, 0, err
		}
		w := vol.perID * float64(bound)
		if vol.byFile {
			w = vol.perID * float64(files)
		}
		segs = append(segs, segment{t, vol, bound, w})
		total += w
	}
	return segs, total, nil
}

// EstimateKeys is how many keys the catalog holds, as estimated from its
// counters without a scan (what Plan balances shards by): a progress
// display's total, never a count to check anything against.
func EstimateKeys(ctx context.Context, c *catalog.Catalog) (uint64, error) {
	_, total, err := weigh(ctx, c)
	return uint64(total), err
}

// Plan cuts the key space into n ranges of roughly equal size, estimated from
// the catalog's counters (no scan): within a tag, keys are taken to spread
// evenly over their first component's id range, and within one first
// component over the second's. Estimates only balance the work; the ranges
// always partition the whole key space, so every key is in exactly one shard
// whatever the estimate, and no range is empty (a shard file's header
// refuses an empty range), so a small catalog makes shards holding no
// records rather than bad ones.
func Plan(ctx context.Context, c *catalog.Catalog, n int) ([]Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard: plan: %d shards: need at least 1", n)
	}
	segs, total, err := weigh(ctx, c)
	if err != nil {
		return nil, err
	}
	v := c.Version()
	counter := func(name string, tableID ...uint64) (uint64, error) { return planCounter(ctx, c, name, tableID...) }
	// cutIn returns the key prefix at fraction f of segment s: the first
	// component at f of its range, the second (if bounded) at what is left.
	cutIn := func(s segment, f float64) ([]byte, error) {
		x := float64(s.bound) * f
		id := uint64(x)
		parts := []uint64{id}
		var second uint64
		var err error
		switch s.vol.second {
		case "":
		case perTableColumns:
			second, err = counter(format.NameNextColumnID, id)
		default:
			second, err = counter(s.vol.second)
		}
		if err != nil {
			return nil, err
		}
		if second > 1 {
			if id2 := uint64(float64(second) * (x - float64(id))); id2 > 0 {
				parts = append(parts, id2)
			}
		}
		p, err := format.KeyPrefix(v, format.Key{Tag: s.tag, Parts: parts})
		if err != nil {
			return nil, fmt.Errorf("shard: plan: %w", err)
		}
		return p, nil
	}
	cuts := make([][]byte, 0, n-1)
	for k := 1; k < n; k++ {
		target := total * float64(k) / float64(n)
		acc := 0.0
		var cut []byte
		for _, s := range segs {
			if s.weight > 0 && acc+s.weight >= target {
				p, err := cutIn(s, (target-acc)/s.weight)
				if err != nil {
					return nil, err
				}
				cut = p
				break
			}
			acc += s.weight
		}
		if cut == nil { // nothing to weigh: cut before the counters
			cut = []byte{byte(format.TagCounter)}
		}
		if len(cuts) > 0 && bytes.Compare(cut, cuts[len(cuts)-1]) <= 0 {
			// Not past the previous cut (a small catalog, or estimates
			// that collide): the previous cut's immediate successor, so
			// that the range between them is not empty.
			cut = append(bytes.Clone(cuts[len(cuts)-1]), 0)
		}
		cuts = append(cuts, cut)
	}
	rs := rangesAt(cuts)
	return rs, CheckRanges(rs)
}
