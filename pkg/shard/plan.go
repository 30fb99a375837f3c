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

// CheckRanges verifies that ranges are indexed 0..n-1 and cover the key space
// without gap or overlap.
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
		if len(r.End) > 0 && bytes.Compare(r.Start, r.End) > 0 {
			return fmt.Errorf("%w: range %d ends before it starts", ErrBadPlan, i)
		}
	}
	return nil
}

// idBound says which counter bounds the first key component of a tag's keys,
// per format: the planner spreads each tag's keys uniformly over [0, bound).
func idBound(v format.Version, t format.Tag) string {
	switch t {
	case format.TagMetadata:
		return format.CounterNextMetadataID
	case format.TagSnapshot, format.TagSnapshotChanges, format.TagCommitLog:
		return format.CounterNextSnapshotID
	case format.TagSchema:
		return format.CounterNextSchemaID
	case format.TagDataFile, format.TagDeleteFile:
		if v == format.V1 {
			return format.CounterNextFileID
		}
		return format.CounterNextTableID
	case format.TagFileDeletion:
		return format.CounterNextFileID
	case format.TagTag:
		return format.CounterNextTagID
	default: // tables, views, columns, stats, name index: keyed by a catalog id
		return format.CounterNextTableID
	}
}

// weight estimates how many keys a tag holds, relative to the others: the data
// and delete files are the bulk of a catalog.
func weight(t format.Tag, bound uint64) float64 {
	switch t {
	case format.TagDataFile, format.TagDeleteFile:
		return float64(bound)
	case format.TagCounter, format.TagSystem:
		return 0
	}
	return float64(bound) / 8
}

// Plan cuts the key space into n ranges of roughly equal size, estimated from
// the catalog's counters (no scan): within a tag, keys are taken to spread
// evenly over their first component's id range. Estimates only balance the
// work; the ranges always partition the whole key space, so every key is in
// exactly one shard whatever the estimate.
func Plan(ctx context.Context, c *catalog.Catalog, n int) ([]Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard: plan: %d shards: need at least 1", n)
	}
	type segment struct {
		tag    format.Tag
		bound  uint64
		weight float64
	}
	var segs []segment
	total := 0.0
	v := c.Version()
	for _, t := range format.KnownTags() {
		name := idBound(v, t)
		bound, err := c.Counter(ctx, name)
		if errors.Is(err, catalog.ErrNotFound) {
			bound = 0
		} else if err != nil {
			return nil, fmt.Errorf("shard: plan: counter %s: %w", name, err)
		}
		w := weight(t, bound)
		segs = append(segs, segment{t, bound, w})
		total += w
	}
	cuts := make([][]byte, 0, n-1)
	for k := 1; k < n; k++ {
		target := total * float64(k) / float64(n)
		acc := 0.0
		var cut []byte
		for _, s := range segs {
			if s.weight > 0 && acc+s.weight >= target {
				id := uint64(float64(s.bound) * (target - acc) / s.weight)
				p, err := format.KeyPrefix(v, s.tag, id)
				if err != nil {
					return nil, fmt.Errorf("shard: plan: %w", err)
				}
				cut = p
				break
			}
			acc += s.weight
		}
		if cut == nil { // nothing to weigh: cut before the system keys
			cut = []byte{byte(format.TagCounter)}
		}
		if len(cuts) > 0 && bytes.Compare(cut, cuts[len(cuts)-1]) < 0 {
			cut = cuts[len(cuts)-1]
		}
		cuts = append(cuts, cut)
	}
	rs := make([]Range, n)
	for i := range rs {
		rs[i].Index = i
		if i > 0 {
			rs[i].Start = cuts[i-1]
		}
		if i < n-1 {
			rs[i].End = cuts[i]
		}
	}
	return rs, CheckRanges(rs)
}
