package shard

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"path"
	"runtime"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// VerifyResult compares a catalog with shard files.
type VerifyResult struct {
	Catalog ndjson.Digest `json:"catalog"`
	Shards  ndjson.Digest `json:"shards"`
	Match   bool          `json:"match"`
	// Diff names the tables whose counts differ, as "table: catalog N, shards M".
	Diff []string `json:"diff,omitempty"`
	// First names the first key, in key order, where the catalog and the
	// shards differ, and why (a key one side lacks, another value, a value
	// that does not decode); Verify finds it once the digests differ.
	First string `json:"first_difference,omitempty"`
}

// DigestCatalog reads every key of an open catalog into a Digest, counting
// them in p (nil counts nothing). The digest is of the raw bytes
// (ndjson.Digest.AddRaw), so no record is decoded; the catalog is scanned
// and hashed in parts on every CPU (scanParts), whose digests add up to the
// whole's in any order.
func DigestCatalog(ctx context.Context, c *catalog.Catalog, p *Progress) (ndjson.Digest, error) {
	parts, err := scanParts(ctx, c, func(ctx context.Context, r Range) (ndjson.Digest, error) {
		return digestRange(ctx, c, r, p)
	})
	return merged(parts, err)
}

// merged is the digest of the whole whose parts' digests are parts, or
// err if the parts were not all read.
func merged(parts []ndjson.Digest, err error) (ndjson.Digest, error) {
	var d ndjson.Digest
	if err != nil {
		return d, err
	}
	for _, x := range parts {
		d.Merge(x)
	}
	return d, nil
}

// digestRange digests the keys of one range.
func digestRange(ctx context.Context, c *catalog.Catalog, r Range, p *Progress) (ndjson.Digest, error) {
	var d ndjson.Digest
	n := recordCounter{p: p}
	defer n.flush()
	for e, err := range c.ScanRaw(ctx, r.Start, r.End) {
		if err != nil {
			return d, fmt.Errorf("shard: digest %s: %w", c.URL(), err)
		}
		d.AddRaw(e.Key, e.Value)
		n.add()
	}
	return d, nil
}

// progressStep is how many records a digest counts in its Progress at once.
const progressStep = 4096

// recordCounter counts a digest's records in its Progress (nil counts
// nothing), progressStep at a time; flush counts the rest.
type recordCounter struct {
	p *Progress
	n uint64
}

func (c *recordCounter) add() {
	if c.n++; c.n%progressStep == 0 {
		c.p.addRecords(progressStep)
	}
}

func (c *recordCounter) flush() { c.p.addRecords(c.n % progressStep) }

// DigestShards reads every record of the shard set at input into a Digest,
// decoding the shards on one goroutine per CPU, largest first.
func DigestShards(ctx context.Context, store *blob.Store, input string) (ndjson.Digest, format.Version, error) {
	return digestShards(ctx, store, input, nil)
}

func digestShards(ctx context.Context, store *blob.Store, input string, p *Progress) (ndjson.Digest, format.Version, error) {
	hs, files, err := listShards(ctx, store, input)
	if err != nil {
		return ndjson.Digest{}, 0, err
	}
	d, err := digestFiles(ctx, store, files, p)
	return d, hs[0].CatalogFormat, err
}

// listShards lists the shard set at input and checks that it is one whole
// export (Headers).
func listShards(ctx context.Context, store *blob.Store, input string) ([]ndjson.Header, []blob.Info, error) {
	files, err := ListSized(ctx, store, input)
	if err != nil {
		return nil, nil, err
	}
	urls := make([]string, len(files))
	for i, f := range files {
		urls[i] = f.URL
	}
	hs, _, err := Headers(ctx, store, urls)
	if err != nil {
		return nil, nil, err
	}
	return hs, files, nil
}

// digestFiles digests the shard files, one per CPU at once, largest first.
func digestFiles(ctx context.Context, store *blob.Store, files []blob.Info, p *Progress) (ndjson.Digest, error) {
	order := LargestFirst(files)
	digests := make([]ndjson.Digest, len(files))
	err := ForEach(ctx, len(files), runtime.GOMAXPROCS(0), func(ctx context.Context, i int) error {
		var err error
		digests[i], err = digestShard(ctx, store, files[order[i]].URL, p)
		return err
	})
	return merged(digests, err)
}

func digestShard(ctx context.Context, store *blob.Store, url string, p *Progress) (ndjson.Digest, error) {
	var d ndjson.Digest
	n := recordCounter{p: p}
	defer n.flush()
	fr, err := ndjson.Open(ctx, store, url)
	if err != nil {
		return d, err
	}
	defer fr.Close()
	for {
		rec, err := fr.Next()
		if errors.Is(err, io.EOF) {
			return d, nil
		}
		if err != nil {
			return d, fmt.Errorf("shard: digest %s: %w", url, err)
		}
		d.Add(rec)
		n.add()
	}
}

// VerifyOptions tune a verify.
type VerifyOptions struct {
	Store slatedb.Options
	// Progress counts the shards' records and the catalog's keys, read at
	// the same time: its total, twice the shards' records, is known once
	// the shards are read.
	Progress *Progress
}

// Verify compares the catalog at url with the shards at input: per-table
// counts and the order-independent digest of every record, system keys
// included. A difference is ErrMismatch, with the result saying where. The
// shards and the catalog are read at the same time, each on every CPU.
func Verify(ctx context.Context, store *blob.Store, url, input string, opts VerifyOptions) (VerifyResult, error) {
	var res VerifyResult
	// The headers first: they say which format to open the catalog in.
	hs, files, err := listShards(ctx, store, input)
	if err != nil {
		return res, err
	}
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: hs[0].CatalogFormat, Store: opts.Store})
	if err != nil {
		return res, err
	}
	defer c.Close()
	var sd, cd ndjson.Digest
	err = ForEach(ctx, 2, 2, func(ctx context.Context, i int) error {
		var err error
		if i == 1 {
			cd, err = DigestCatalog(ctx, c, opts.Progress)
			return err
		}
		if sd, err = digestFiles(ctx, store, files, opts.Progress); err != nil {
			return err
		}
		// The catalog should hold as many keys as the shards hold
		// records: known once the shards are read.
		var records uint64
		for _, n := range sd.Counts() {
			records += n
		}
		opts.Progress.SetRecordsTotal(2 * records)
		return nil
	})
	if err != nil {
		return res, err
	}
	res = Compare(cd, sd)
	if !res.Match {
		// The digests say that they differ, not where: one more pass, the
		// catalog and the shards side by side in key order, names it.
		first, err := firstDifference(ctx, store, c, files)
		if err != nil {
			return res, fmt.Errorf("%w: catalog %s differs from shards %s: %v (finding the first record that differs: %w)", ErrMismatch, url, input, res.Diff, err)
		}
		res.First = first
		return res, fmt.Errorf("%w: catalog %s differs from shards %s: %s; %v", ErrMismatch, url, input, first, res.Diff)
	}
	return res, nil
}

// firstDifference walks the catalog's keys and the shard files' records
// (files in key order, each in key order, as export writes them) side by
// side and describes the first key where they differ.
func firstDifference(ctx context.Context, store *blob.Store, c *catalog.Catalog, files []blob.Info) (string, error) {
	next, stop := iter.Pull2(c.ScanRaw(ctx, nil, nil))
	defer stop()
	e, err, more := next()
	if err != nil {
		return "", err
	}
	for _, f := range files {
		fr, err := ndjson.Open(ctx, store, f.URL)
		if err != nil {
			return "", err
		}
		for {
			rec, rerr := fr.Next()
			if errors.Is(rerr, io.EOF) {
				break
			}
			if rerr != nil {
				fr.Close()
				return "", fmt.Errorf("%s: %w", f.URL, rerr)
			}
			key, value := rec.Raw()
			switch {
			case !more || bytes.Compare(e.Key, key) > 0:
				fr.Close()
				return fmt.Sprintf("%s key %x (%s) is in the shards but not in the catalog", rec.Tag(), key, path.Base(f.URL)), nil
			case bytes.Compare(e.Key, key) < 0:
				fr.Close()
				return describeExtra(c, e.Key, e.Value), nil
			case !bytes.Equal(e.Value, value):
				fr.Close()
				why := "its value differs from the shards'"
				if _, derr := ndjson.NewRecord(c.Version(), e.Key, e.Value); derr != nil {
					why = fmt.Sprintf("its value does not decode: %v", derr)
				}
				return fmt.Sprintf("%s key %x: %s (%s)", format.Tag(e.Key[0]), e.Key, why, path.Base(f.URL)), nil
			}
			if e, err, more = next(); err != nil {
				fr.Close()
				return "", err
			}
		}
		fr.Close()
	}
	if more {
		return describeExtra(c, e.Key, e.Value), nil
	}
	return "every key and value is the same in key order (the digests disagree on something else)", nil
}

// describeExtra describes a catalog key no shard holds.
func describeExtra(c *catalog.Catalog, key, value []byte) string {
	s := fmt.Sprintf("%s key %x is in the catalog but in no shard", format.Tag(key[0]), key)
	if _, err := ndjson.NewRecord(c.Version(), key, value); err != nil {
		s += fmt.Sprintf(", and its value does not decode: %v", err)
	}
	return s
}

// Compare reports how two digests differ.
func Compare(catalogDigest, shards ndjson.Digest) VerifyResult {
	res := VerifyResult{Catalog: catalogDigest, Shards: shards, Match: catalogDigest == shards}
	cc, sc := catalogDigest.Counts(), shards.Counts()
	names := map[string]bool{}
	for k := range cc {
		names[k] = true
	}
	for k := range sc {
		names[k] = true
	}
	for k := range names {
		if cc[k] != sc[k] {
			res.Diff = append(res.Diff, fmt.Sprintf("%s: catalog %d, shards %d", k, cc[k], sc[k]))
		}
	}
	sort.Strings(res.Diff)
	if !res.Match && len(res.Diff) == 0 {
		res.Diff = []string{"counts agree but record contents differ (digest " + catalogDigest.Sum() + " vs " + shards.Sum() + ")"}
	}
	return res
}

// DigestTransformed digests the records a migration of catalog c (in format
// from) to format to writes: every record of c's scan transformed along the
// path, as the export and transform steps, or a catch-up round, would. It
// is what an online run's Verify holds the rounds' kept digest against,
// never trusting it blindly; scanned in parts on every CPU.
func DigestTransformed(ctx context.Context, c *catalog.Catalog, to format.Version, unknown migration.UnknownTags) (ndjson.Digest, error) {
	path, err := migration.Path(c.Version(), to)
	if err != nil {
		return ndjson.Digest{}, fmt.Errorf("shard: digest the transform of %s: %w", c.URL(), err)
	}
	opts := migration.Options{UnknownTags: unknown}
	return digestMapped(ctx, c, "the transform of", func(key, value []byte) ([]ndjson.Record, error) {
		return transformed(c.Version(), key, value, path, opts)
	})
}

// digestMapped digests the records f makes of each of c's entries, scanned
// in parts on every CPU; what names the digest in errors.
func digestMapped(ctx context.Context, c *catalog.Catalog, what string, f func(key, value []byte) ([]ndjson.Record, error)) (ndjson.Digest, error) {
	parts, err := scanParts(ctx, c, func(ctx context.Context, r Range) (ndjson.Digest, error) {
		var d ndjson.Digest
		for e, err := range c.ScanRaw(ctx, r.Start, r.End) {
			if err != nil {
				return d, fmt.Errorf("shard: digest %s %s: %w", what, c.URL(), err)
			}
			recs, err := f(e.Key, e.Value)
			if err != nil {
				return d, err
			}
			for _, rec := range recs {
				d.Add(rec)
			}
		}
		return d, nil
	})
	return merged(parts, err)
}
