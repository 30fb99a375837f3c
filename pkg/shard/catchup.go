package shard

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// CatchUpOptions say what a catch-up round reads and how it transforms.
type CatchUpOptions struct {
	// From and To are the source's and the target's formats.
	From, To    format.Version
	UnknownTags migration.UnknownTags
	// MaxChangedFraction is slatedb.OpenChanges' threshold for the merge
	// scan (0: slatedb.DefaultMaxChangedFraction).
	MaxChangedFraction float64
	Store              slatedb.Options
}

// CatchUpResult is what a round found and wrote.
type CatchUpResult struct {
	// Changes is how the source's changes were found (the method, and the
	// merge scan's reason).
	Changes slatedb.ChangeSummary `json:"changes"`
	// Keys is how many source keys changed (puts and deletes); Puts and
	// Deletes the target keys written and deleted for them.
	Keys    int `json:"keys"`
	Puts    int `json:"puts"`
	Deletes int `json:"deletes"`
	// Digest is the target's records' digest after the round: the one the
	// round started from, each replaced or deleted record taken out and
	// each new one added.
	Digest ndjson.Digest `json:"digest"`
	// Carried and Dropped count the source records of unknown tags the
	// round carried or dropped (their new values), by tag, as the shards'
	// transforms count theirs: a drop is never silent.
	Carried map[string]uint64 `json:"carried_unknown,omitempty"`
	Dropped map[string]uint64 `json:"dropped_unknown,omitempty"`
	// DroppedNet is how many more source records of each unknown tag the
	// later view holds dropped than the earlier: over several rounds it
	// adds up to the change between their first and last views, which
	// VerifyChanges counts again.
	DroppedNet map[string]int64 `json:"dropped_net,omitempty"`
}

// Unknown counts the source records of unknown tags that changes carried
// or dropped, by tag (their new values), and the dropped ones' net change.
type Unknown struct {
	Carried, Dropped map[string]uint64
	DroppedNet       map[string]int64
}

// count counts change c when its key is of an unknown tag: its new value
// carried when its transform wrote records, dropped when it wrote none; a
// dropped old value leaves the net.
func (u *Unknown) count(c slatedb.Change, olds, news []ndjson.Record) {
	if len(c.Key) == 0 || format.Tag(c.Key[0]).Known() {
		return
	}
	tag := format.Tag(c.Key[0]).String()
	add := func(m *map[string]uint64) {
		if *m == nil {
			*m = map[string]uint64{}
		}
		(*m)[tag]++
	}
	net := func(d int64) {
		if u.DroppedNet == nil {
			u.DroppedNet = map[string]int64{}
		}
		if u.DroppedNet[tag] += d; u.DroppedNet[tag] == 0 {
			delete(u.DroppedNet, tag)
		}
	}
	switch {
	case c.New == nil:
	case len(news) == 0:
		add(&u.Dropped)
		net(+1)
	default:
		add(&u.Carried)
	}
	if c.Old != nil && len(olds) == 0 {
		net(-1)
	}
}

// catchUpBatch bounds a round's batches, in keys.
const catchUpBatch = 4096

// CatchUp carries into the target catalog at url the source's changes
// between views from and to of the source at source (slatedb.View): each changed key's old and new records transformed
// along the migration path, the target keys only the old records had
// deleted, the new records put. digest is the target's records' digest
// before the round; the result's is after it.
//
// The target is an import (Import with NoFinalize, or a finished one):
// while its progress record is there, the counter and system keys go into
// that record for Finalize to write last, as Import holds them; in a
// finalized target they are written in place. A round is idempotent: run
// again over the same views from the same digest, it writes the same keys
// and returns the same digest, so a round cut short is simply rerun.
func CatchUp(ctx context.Context, source string, from, to slatedb.View, url string, digest ndjson.Digest, opts CatchUpOptions) (CatchUpResult, error) {
	res := CatchUpResult{Digest: digest}
	so := opts.Store
	so.Passive = true // short-lived: the catalog's own writer compacts it later
	w, err := slatedb.OpenWriter(ctx, url, so)
	if err != nil {
		return res, fmt.Errorf("shard: catch-up: open target %s: %w", url, err)
	}
	defer w.CloseContext(ctx)
	prog, err := importProgress(ctx, w)
	if err != nil {
		return res, err
	}

	var b slatedb.Batch
	flush := func() error {
		if b.Len() == 0 {
			return nil
		}
		if err := w.WriteAsync(ctx, &b); err != nil {
			return fmt.Errorf("shard: catch-up %s: write: %w", url, err)
		}
		b.Reset()
		return nil
	}
	var unknown Unknown
	res.Changes, err = eachChange(ctx, source, from, to, opts, func(c slatedb.Change, olds, news []ndjson.Record) error {
		res.Keys++
		unknown.count(c, olds, news)
		for _, r := range olds {
			res.Digest.Remove(r)
			k, _ := r.Raw()
			if slices.ContainsFunc(news, func(n ndjson.Record) bool { k2, _ := n.Raw(); return bytes.Equal(k, k2) }) {
				continue
			}
			res.Deletes++
			if prog != nil && held(r) {
				prog.setSystem(k, nil)
				continue
			}
			b.Delete(k)
		}
		for _, r := range news {
			res.Digest.Add(r)
			k, v := r.Raw()
			res.Puts++
			if prog != nil && held(r) {
				prog.setSystem(k, v)
				continue
			}
			b.Put(k, v)
		}
		if b.Len() >= catchUpBatch {
			return flush()
		}
		return nil
	})
	if err != nil {
		return res, err
	}
	if err := flush(); err != nil {
		return res, err
	}
	res.Carried, res.Dropped, res.DroppedNet = unknown.Carried, unknown.Dropped, unknown.DroppedNet
	if prog != nil {
		// The progress record goes last: the round's data is in before the
		// counter and system keys it holds for Finalize move on.
		if err := writeProgress(ctx, w, prog, false); err != nil {
			return res, err
		}
	}
	if err := w.Flush(ctx); err != nil {
		return res, fmt.Errorf("shard: catch-up %s: flush: %w", url, err)
	}
	return res, w.CloseContext(ctx)
}

// transformed is the target records of one source entry (none when value
// is nil: the key is absent from that view).
func transformed(v format.Version, key, value []byte, path []migration.Conversion, opts migration.Options) ([]ndjson.Record, error) {
	if value == nil {
		return nil, nil
	}
	rec, err := ndjson.NewRecord(v, key, value)
	if err != nil {
		return nil, fmt.Errorf("%w: key %x: %w", ErrCatchUp, key, err)
	}
	out, err := migration.Records(rec, path, opts)
	if err != nil {
		return nil, fmt.Errorf("%w: key %x: %w", ErrCatchUp, key, err)
	}
	return out, nil
}

// held: a counter or system record, which an unfinished import holds in
// its progress record until Finalize.
func held(r ndjson.Record) bool {
	t := r.Tag()
	return t == format.TagCounter || t == format.TagSystem
}

// importProgress reads an unfinished import's progress record (nil for a
// finalized target).
func importProgress(ctx context.Context, w *slatedb.Writer) (*progress, error) {
	raw, err := w.Get(ctx, progressKey)
	if errors.Is(err, slatedb.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shard: catch-up %s: progress record: %w", w.URL(), err)
	}
	var p progress
	if err := json.Unmarshal(raw, &p); err != nil {
		return nil, fmt.Errorf("shard: catch-up %s: progress record: %w", w.URL(), err)
	}
	return &p, nil
}

// setSystem sets a held counter or system key's value (nil: removes it).
func (p *progress) setSystem(key, value []byte) {
	k := hex.EncodeToString(key)
	i := slices.IndexFunc(p.System, func(e entry) bool { return e.Key == k })
	switch {
	case value == nil && i >= 0:
		p.System = slices.Delete(p.System, i, i+1)
	case value == nil:
	case i >= 0:
		p.System[i].Value = hex.EncodeToString(value)
	default:
		p.System = append(p.System, entry{Key: k, Value: hex.EncodeToString(value)})
	}
}

// Changed is what carrying the source's changes between views from and to
// into a catalog of format opts.To writes, as CatchUp would write it, for a
// caller that builds its own batch (an in-place restore): per target key,
// its new value, or nil where it is deleted. keys is how many source keys
// changed.
func Changed(ctx context.Context, source string, from, to slatedb.View, opts CatchUpOptions) (map[string][]byte, int, error) {
	out := map[string][]byte{}
	keys := 0
	_, err := eachChange(ctx, source, from, to, opts, func(_ slatedb.Change, olds, news []ndjson.Record) error {
		keys++
		for _, r := range olds {
			k, _ := r.Raw()
			out[string(k)] = nil
		}
		for _, r := range news {
			k, v := r.Raw()
			out[string(k)] = bytes.Clone(v)
		}
		return nil
	})
	return out, keys, err
}
