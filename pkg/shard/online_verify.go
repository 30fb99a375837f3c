package shard

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// An online run verifies in two parts, so that the part inside the write
// freeze costs in proportion to the change, not the catalog
// (docs/online.md): before the fence, the whole target against the rounds'
// digest and that digest against the source view's transform (DigestImport,
// DigestView); after it, only the keys changed since (VerifyChanges).

// DigestImport digests the records of the catalog an unfinished import is
// writing at url as Finalize would leave them: every key but the progress
// record, and the counter and system keys that record holds.
func DigestImport(ctx context.Context, url string, so slatedb.Options) (ndjson.Digest, error) {
	var d ndjson.Digest
	c, err := catalog.Open(ctx, url, catalog.Options{SkipVersionCheck: true, Store: so})
	if err != nil {
		return d, fmt.Errorf("shard: digest the import %s: %w", url, err)
	}
	defer c.Close()
	var prog []byte
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return d, fmt.Errorf("shard: digest the import %s: %w", url, err)
		}
		if bytes.Equal(e.Key, progressKey) {
			prog = bytes.Clone(e.Value)
			continue
		}
		d.AddRaw(e.Key, e.Value)
	}
	if prog == nil {
		return d, fmt.Errorf("%w: %s holds no import progress", ErrNotImported, url)
	}
	var p progress
	if err := json.Unmarshal(prog, &p); err != nil {
		return d, fmt.Errorf("shard: digest the import %s: progress record: %w", url, err)
	}
	for _, e := range p.System {
		k, err1 := hex.DecodeString(e.Key)
		v, err2 := hex.DecodeString(e.Value)
		if err := errors.Join(err1, err2); err != nil {
			return d, fmt.Errorf("shard: digest the import %s: progress record: %w", url, err)
		}
		d.AddRaw(k, v)
	}
	return d, nil
}

// DigestView digests the records a migration of view v of the source at
// source (in format from) to format to writes: the entries of the WAL
// SSTs the view lays over its checkpoint, then the checkpoint's scan
// transformed (DigestTransformed).
func DigestView(ctx context.Context, source string, v slatedb.View, opts CatchUpOptions) (ndjson.Digest, error) {
	// The WAL overlay first, seconds after the view was taken: its WAL
	// SSTs are not the checkpoint's, and SlateDB may collect them once the
	// writer moved them to L0; the checkpoint's scan, minutes at scale,
	// after. The digest is a sum: the order is free.
	var delta, d ndjson.Digest
	_, err := eachChange(ctx, source, slatedb.View{Checkpoint: v.Checkpoint}, v, opts, func(_ slatedb.Change, olds, news []ndjson.Record) error {
		for _, r := range olds {
			delta.Remove(r)
		}
		for _, r := range news {
			delta.Add(r)
		}
		return nil
	})
	if err != nil {
		return d, err
	}
	c, err := catalog.Open(ctx, source, catalog.Options{Expect: opts.From, Checkpoint: v.Checkpoint, Store: opts.Store})
	if err != nil {
		return d, fmt.Errorf("shard: digest view %+v of %s: %w", v, source, err)
	}
	defer c.Close()
	if d, err = DigestTransformed(ctx, c, opts.To, opts.UnknownTags); err != nil {
		return d, err
	}
	d.Merge(delta)
	return d, nil
}

// VerifyChanges checks the target catalog at url against the source's
// changes between views from (where the target was verified whole, with
// digest) and to: for each changed key, the target holds every record of
// its new value's transform and none of its old value's that the new one
// does not rewrite. It returns digest updated by those changes, computed
// here, not taken from the rounds that wrote them, and the unknown tags'
// records those changes carried or dropped, counted here too. A key that
// differs is ErrMismatch.
func VerifyChanges(ctx context.Context, source string, from, to slatedb.View, url string, digest ndjson.Digest, opts CatchUpOptions) (ndjson.Digest, int, Unknown, error) {
	var unknown Unknown
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: opts.Store})
	if err != nil {
		return digest, 0, unknown, fmt.Errorf("shard: verify the changes in %s: %w", url, err)
	}
	defer r.Close()
	keys := 0
	_, err = eachChange(ctx, source, from, to, opts, func(c slatedb.Change, olds, news []ndjson.Record) error {
		keys++
		unknown.count(c, olds, news)
		for _, o := range olds {
			digest.Remove(o)
			k, _ := o.Raw()
			if slices.ContainsFunc(news, func(n ndjson.Record) bool { k2, _ := n.Raw(); return bytes.Equal(k, k2) }) {
				continue
			}
			if _, err := r.Get(ctx, k); !errors.Is(err, slatedb.ErrNotFound) {
				return fmt.Errorf("%w: %s holds key %x, which source key %x's change deleted (%v)", ErrMismatch, url, k, c.Key, err)
			}
		}
		for _, n := range news {
			digest.Add(n)
			k, v := n.Raw()
			got, err := r.Get(ctx, k)
			if err != nil || !bytes.Equal(got, v) {
				return fmt.Errorf("%w: %s: key %x is not what source key %x's change wrote (%v)", ErrMismatch, url, k, c.Key, err)
			}
		}
		return nil
	})
	return digest, keys, unknown, err
}

// eachChange calls f with each change between views from and to of the
// source, and its old and new values' transforms; it returns how the
// changes were found.
func eachChange(ctx context.Context, source string, from, to slatedb.View, opts CatchUpOptions, f func(c slatedb.Change, olds, news []ndjson.Record) error) (slatedb.ChangeSummary, error) {
	var sum slatedb.ChangeSummary
	path, err := migration.Path(opts.From, opts.To)
	if err != nil {
		return sum, fmt.Errorf("%w: %w", ErrCatchUp, err)
	}
	frac := opts.MaxChangedFraction
	if frac == 0 {
		frac = slatedb.DefaultMaxChangedFraction
	}
	ch, err := slatedb.OpenChanges(ctx, source, from, to, opts.Store, frac)
	if err != nil {
		return sum, fmt.Errorf("shard: changes of %s: %w", source, err)
	}
	defer ch.Close()
	sum = ch.Summary()
	tx := migration.Options{UnknownTags: opts.UnknownTags}
	for ch.Next() {
		c := ch.Change()
		olds, err := transformed(opts.From, c.Key, c.Old, path, tx)
		if err != nil {
			return sum, err
		}
		news, err := transformed(opts.From, c.Key, c.New, path, tx)
		if err != nil {
			return sum, err
		}
		if err := f(c, olds, news); err != nil {
			return sum, err
		}
	}
	if err := ch.Err(); err != nil {
		return sum, fmt.Errorf("shard: changes of %s: %w", source, err)
	}
	return sum, nil
}

// DigestCanonical digests a finished catalog at url, in format opts.To,
// as records that a migration from opts.From would write: when that
// migration goes down (a rollback of v1→v2 carries v2 keys back into v1),
// each record is taken up to opts.From and back, so that what the way up
// does not keep (a format-1 snapshot_time's digits below a microsecond)
// reads as the way down writes it. A rollback's rounds keep their digest
// in this form; the keys they never wrote stay as they were in the catalog.
func DigestCanonical(ctx context.Context, url string, opts CatchUpOptions) (ndjson.Digest, error) {
	var d ndjson.Digest
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: opts.To, Store: opts.Store})
	if err != nil {
		return d, fmt.Errorf("shard: digest %s: %w", url, err)
	}
	defer c.Close()
	if opts.From <= opts.To {
		return DigestCatalog(ctx, c, nil)
	}
	up, err := migration.Path(opts.To, opts.From)
	if err != nil {
		return d, fmt.Errorf("shard: digest %s: %w", url, err)
	}
	down, err := migration.Path(opts.From, opts.To)
	if err != nil {
		return d, fmt.Errorf("shard: digest %s: %w", url, err)
	}
	tx := migration.Options{UnknownTags: migration.UnknownCarry}
	return digestMapped(ctx, c, "canonically", func(key, value []byte) ([]ndjson.Record, error) {
		rec, err := ndjson.NewRecord(opts.To, key, value)
		if err != nil {
			return nil, fmt.Errorf("shard: digest %s: key %x: %w", url, key, err)
		}
		ups, err := migration.Records(rec, up, tx)
		if err != nil {
			return nil, fmt.Errorf("shard: digest %s: key %x: %w", url, key, err)
		}
		var out []ndjson.Record
		for _, u := range ups {
			downs, err := migration.Records(u, down, tx)
			if err != nil {
				return nil, fmt.Errorf("shard: digest %s: key %x: %w", url, key, err)
			}
			out = append(out, downs...)
		}
		return out, nil
	})
}
