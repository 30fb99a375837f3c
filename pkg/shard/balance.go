package shard

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Profile is where a catalog's bytes (key and value lengths) lie in key
// order, measured by one scan in bounded memory: a sample every Step bytes
// or so, at most maxSamples of them. It balances shards by bytes, which is
// what their work follows, where Plan's counter estimates can be off by a
// large factor (a tag's keys are not spread evenly over its ids).
type Profile struct {
	Keys  uint64
	Bytes int64
	// PerTag counts keys and bytes by tag (the first key byte).
	PerTag  map[format.Tag]TagBytes
	samples []sample
	step    int64
}

// TagBytes is one tag's share of a catalog.
type TagBytes struct {
	Keys  uint64 `json:"keys"`
	Bytes int64  `json:"bytes"`
}

// sample: the bytes of every entry before key.
type sample struct {
	key    []byte
	before int64
}

// maxSamples bounds a profile's memory: about this many keys, whatever the
// catalog's size; each cut is then within 2/maxSamples of the total of
// where it should be.
const maxSamples = 8192

// Measure scans the whole catalog (a read; nothing is written) and returns
// its profile. It scans in parts on every CPU (scanParts): the scan, not
// the profile, is the work. prog, if not nil, counts the keys scanned as
// they go.
func Measure(ctx context.Context, c *catalog.Catalog, prog *Progress) (*Profile, error) {
	profs, err := scanParts(ctx, c, func(ctx context.Context, r Range) (*Profile, error) {
		return measure(ctx, c, r, prog)
	})
	if err != nil {
		return nil, err
	}
	return merge(profs), nil
}

// measure profiles the keys of one range.
func measure(ctx context.Context, c *catalog.Catalog, r Range, prog *Progress) (*Profile, error) {
	p := &Profile{PerTag: map[format.Tag]TagBytes{}, step: 1024}
	next := int64(0)
	defer func() { prog.addRecords(p.Keys % 4096) }()
	for e, err := range c.ScanRaw(ctx, r.Start, r.End) {
		if err != nil {
			return nil, fmt.Errorf("shard: measure %s: %w", c.URL(), err)
		}
		size := int64(len(e.Key) + len(e.Value))
		if p.Bytes >= next {
			p.samples = append(p.samples, sample{bytes.Clone(e.Key), p.Bytes})
			p.bound()
			next = p.Bytes + p.step
		}
		if p.Keys++; p.Keys%4096 == 0 {
			prog.addRecords(4096)
		}
		p.Bytes += size
		if len(e.Key) > 0 {
			t := p.PerTag[format.Tag(e.Key[0])]
			t.Keys++
			t.Bytes += size
			p.PerTag[format.Tag(e.Key[0])] = t
		}
	}
	return p, nil
}

// bound halves the samples while there are more than maxSamples: every
// other one kept, and the step doubled.
func (p *Profile) bound() {
	for len(p.samples) > maxSamples {
		kept := p.samples[:0]
		for i := 0; i < len(p.samples); i += 2 {
			kept = append(kept, p.samples[i])
		}
		p.samples, p.step = kept, p.step*2
	}
}

// merge joins the profiles of consecutive ranges, in key order, into the
// profile of the whole.
func merge(profs []*Profile) *Profile {
	out := &Profile{PerTag: map[format.Tag]TagBytes{}}
	for _, p := range profs {
		for _, s := range p.samples {
			out.samples = append(out.samples, sample{s.key, out.Bytes + s.before})
		}
		out.Keys += p.Keys
		out.Bytes += p.Bytes
		out.step = max(out.step, p.step)
		for t, b := range p.PerTag {
			o := out.PerTag[t]
			o.Keys += b.Keys
			o.Bytes += b.Bytes
			out.PerTag[t] = o
		}
	}
	out.bound()
	return out
}

// Ranges cuts the key space into n ranges of about equal bytes (within
// 2/maxSamples of the total each, more for a catalog whose single entries
// are larger than that). Like Plan's, the ranges partition the whole key
// space and none is empty.
func (p *Profile) Ranges(n int) ([]Range, error) {
	if n < 1 {
		return nil, fmt.Errorf("shard: plan: %d shards: need at least 1", n)
	}
	cuts := make([][]byte, 0, n-1)
	for k := 1; k < n; k++ {
		target := p.Bytes * int64(k) / int64(n)
		i := sort.Search(len(p.samples), func(i int) bool { return p.samples[i].before >= target })
		var cut []byte
		if i < len(p.samples) && i > 0 {
			cut = p.samples[i].key
		}
		switch {
		case cut == nil && len(cuts) == 0:
			cut = []byte{0} // an empty or tiny catalog: cut anywhere valid
		case cut == nil || len(cuts) > 0 && bytes.Compare(cut, cuts[len(cuts)-1]) <= 0:
			// Not past the previous cut: its immediate successor, so that
			// the range between them is not empty.
			cut = append(bytes.Clone(cuts[len(cuts)-1]), 0)
		}
		cuts = append(cuts, cut)
	}
	return rangesAt(cuts), nil
}

// rangesAt makes the n = len(cuts)+1 ranges between cuts, checked.
func rangesAt(cuts [][]byte) []Range {
	rs := make([]Range, len(cuts)+1)
	for i := range rs {
		rs[i].Index = i
		if i > 0 {
			rs[i].Start = cuts[i-1]
		}
		if i < len(cuts) {
			rs[i].End = cuts[i]
		}
	}
	return rs
}

// before estimates the bytes of the entries before key: exact at a sample,
// at most Step short elsewhere.
func (p *Profile) before(key []byte) int64 {
	if len(key) == 0 {
		return 0
	}
	i := sort.Search(len(p.samples), func(i int) bool { return bytes.Compare(p.samples[i].key, key) >= 0 })
	if i < len(p.samples) {
		return p.samples[i].before
	}
	return p.Bytes
}

// RangeBytes estimates the bytes in each range (within the profile's step).
func (p *Profile) RangeBytes(rs []Range) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		end := p.Bytes
		if len(r.End) > 0 {
			end = p.before(r.End)
		}
		out[i] = end - p.before(r.Start)
	}
	return out
}

// Imbalance is the largest range's bytes over the mean (1 is perfect): how
// much longer than an even split the slowest shard takes.
func Imbalance(sizes []int64) float64 {
	var total, largest int64
	for _, s := range sizes {
		total += s
		largest = max(largest, s)
	}
	if total == 0 {
		return 1
	}
	return float64(largest) * float64(len(sizes)) / float64(total)
}

// PlanByBytes plans n ranges of about equal bytes, from a scan of c (prog,
// if not nil, counts the keys scanned).
func PlanByBytes(ctx context.Context, c *catalog.Catalog, n int, prog *Progress) ([]Range, error) {
	p, err := Measure(ctx, c, prog)
	return planOf(p, err, n)
}

// planOf is n ranges of profile p, checked (CheckRanges), or err if there
// is no profile.
func planOf(p *Profile, err error, n int) ([]Range, error) {
	if err != nil {
		return nil, err
	}
	rs, err := p.Ranges(n)
	if err != nil {
		return nil, err
	}
	return rs, CheckRanges(rs)
}
