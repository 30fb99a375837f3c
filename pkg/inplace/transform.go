package inplace

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// tally is what a pass over a catalog found.
type tally struct {
	keys    uint64 // old-format keys read
	records uint64 // new-format records made
	bytes   int64  // their keys and values
	digest  ndjson.Digest
	carried map[format.Tag]uint64
	dropped map[format.Tag]uint64
}

// transformAll transforms every entry of c along path, as Strategy B's
// transform does record by record, and hands each old key with the records
// that replace it to emit (nil: only measure). Under the fail policy it
// reads on past the first unknown tag, to list every unknown tag and its
// count, and emits nothing more. Past opts.MaxBytes it stops: ErrTooLarge.
func transformAll(ctx context.Context, c *catalog.Catalog, path []migration.Migration, opts Options, emit func(old []byte, recs []ndjson.Record)) (tally, error) {
	var t tally
	var unknown *migration.UnknownTagsError
	mopts := migration.Options{UnknownTags: opts.UnknownTags}
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return t, fmt.Errorf("inplace: read %s: %w", c.URL(), err)
		}
		if t.keys%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return t, fmt.Errorf("inplace: read %s: %w", c.URL(), err)
			}
		}
		t.keys++
		rec, err := ndjson.NewRecord(c.Version(), e.Key, e.Value)
		if err != nil {
			return t, fmt.Errorf("inplace: read %s: %w", c.URL(), err)
		}
		if tag := rec.Tag(); !tag.Known() {
			switch opts.UnknownTags {
			case migration.UnknownFail:
				if unknown == nil {
					unknown = &migration.UnknownTagsError{Counts: map[format.Tag]uint64{}}
				}
				unknown.Counts[tag]++
				continue
			case migration.UnknownDrop:
				t.dropped = count(t.dropped, tag)
			case migration.UnknownCarry:
				t.carried = count(t.carried, tag)
			}
		}
		if unknown != nil {
			continue // only counting now
		}
		out, err := migration.Records(rec, path, mopts)
		if err != nil {
			return t, fmt.Errorf("inplace: transform %s: %w", c.URL(), err)
		}
		for _, o := range out {
			k, v := o.Raw()
			t.bytes += int64(len(k) + len(v))
			t.digest.Add(o)
			t.records++
		}
		if t.bytes > opts.MaxBytes {
			return t, fmt.Errorf("%w: %s: its transformed keys and values pass %d bytes (the in-place limit, --in-place-max-bytes) after %d of its keys; nothing was written: migrate it with Strategy B (migrate without --in-place), which streams the catalog in shards",
				ErrTooLarge, c.URL(), opts.MaxBytes, t.keys)
		}
		if emit != nil {
			emit(e.Key, out)
		}
	}
	if unknown != nil {
		return t, unknown
	}
	return t, nil
}

func count(m map[format.Tag]uint64, t format.Tag) map[format.Tag]uint64 {
	if m == nil {
		m = map[format.Tag]uint64{}
	}
	m[t]++
	return m
}
