package inplace

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// tally is what a pass over a catalog found.
type tally struct {
	keys  uint64 // old-format keys read
	bytes int64  // the new records' keys and values
	// stats: the new-format records made, their digest, and the records
	// of unknown tags carried and dropped.
	stats migration.Stats
}

// transformAll transforms every entry of c along path with a
// migration.Stream, as Strategy B's transform does record by record, and
// hands each old key and value with the records that replace it to emit (nil: only
// measure). Under the fail policy it reads on past the first unknown tag,
// to list every unknown tag and its count, and emits nothing more. Past
// opts.MaxBytes it stops: ErrTooLarge.
func transformAll(ctx context.Context, c *catalog.Catalog, path []migration.Conversion, opts Options, emit func(oldKey, oldValue []byte, recs []ndjson.Record)) (t tally, err error) {
	st := migration.NewStream(path, migration.Options{UnknownTags: opts.UnknownTags})
	defer func() { t.stats = st.Stats }()
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
		out, err := st.Next(rec)
		if err != nil {
			return t, fmt.Errorf("inplace: transform %s: %w", c.URL(), err)
		}
		for _, o := range out {
			k, v := o.Raw()
			t.bytes += int64(len(k) + len(v))
		}
		if t.bytes > opts.MaxBytes {
			return t, fmt.Errorf("%w: %s: its transformed keys and values pass %d bytes (the in-place limit, --in-place-max-bytes) after %d of its keys; nothing was written: migrate it with Strategy B (migrate without --in-place), which streams the catalog in shards",
				ErrTooLarge, c.URL(), opts.MaxBytes, t.keys)
		}
		if emit != nil && st.Err() == nil {
			emit(e.Key, e.Value, out)
		}
	}
	return t, st.Err()
}
