package shard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// ErrMismatch: the catalog's records differ from the shards'.
var ErrMismatch = errors.New("VerifyMismatch")

// VerifyResult compares a catalog with shard files.
type VerifyResult struct {
	Catalog ndjson.Digest `json:"catalog"`
	Shards  ndjson.Digest `json:"shards"`
	Match   bool          `json:"match"`
	// Diff names the tables whose counts differ, as "table: catalog N, shards M".
	Diff []string `json:"diff,omitempty"`
}

// DigestCatalog reads every key of an open catalog into a Digest, counting
// them in p (nil counts nothing).
func DigestCatalog(ctx context.Context, c *catalog.Catalog, p *Progress) (ndjson.Digest, error) {
	var d ndjson.Digest
	var n uint64
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			return d, err
		}
		rec, err := ndjson.NewRecord(c.Version(), e.Key, e.Value)
		if err != nil {
			return d, fmt.Errorf("shard: digest %s: %w", c.URL(), err)
		}
		d.Add(rec)
		if n++; n%4096 == 0 {
			p.addRecords(4096)
		}
	}
	p.addRecords(n % 4096)
	return d, nil
}

// DigestShards reads every record of the shard set at input into a Digest.
func DigestShards(ctx context.Context, store *blob.Store, input string) (ndjson.Digest, format.Version, error) {
	return digestShards(ctx, store, input, nil)
}

func digestShards(ctx context.Context, store *blob.Store, input string, p *Progress) (ndjson.Digest, format.Version, error) {
	var d ndjson.Digest
	var n uint64
	urls, err := List(ctx, store, input)
	if err != nil {
		return d, 0, err
	}
	hs, urls, err := Headers(ctx, store, urls)
	if err != nil {
		return d, 0, err
	}
	for _, u := range urls {
		fr, err := ndjson.Open(ctx, store, u)
		if err != nil {
			return d, 0, err
		}
		for {
			rec, err := fr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				fr.Close()
				return d, 0, fmt.Errorf("shard: digest %s: %w", u, err)
			}
			d.Add(rec)
			if n++; n%4096 == 0 {
				p.addRecords(4096)
			}
		}
		fr.Close()
	}
	p.addRecords(n % 4096)
	return d, hs[0].CatalogFormat, nil
}

// VerifyOptions tune a verify.
type VerifyOptions struct {
	Store slatedb.Options
	// Progress counts the shards' records, then the catalog's keys: its
	// total, twice the shards' records, is known once they are read.
	Progress *Progress
}

// Verify compares the catalog at url with the shards at input: per-table
// counts and the order-independent digest of every record, system keys
// included. A difference is ErrMismatch, with the result saying where.
func Verify(ctx context.Context, store *blob.Store, url, input string, opts VerifyOptions) (VerifyResult, error) {
	var res VerifyResult
	sd, v, err := digestShards(ctx, store, input, opts.Progress)
	if err != nil {
		return res, err
	}
	// The catalog should hold as many keys as the shards hold records.
	var records uint64
	for _, n := range sd.Counts() {
		records += n
	}
	opts.Progress.SetRecordsTotal(2 * records)
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: v, Store: opts.Store})
	if err != nil {
		return res, err
	}
	defer c.Close()
	cd, err := DigestCatalog(ctx, c, opts.Progress)
	if err != nil {
		return res, err
	}
	res = Compare(cd, sd)
	if !res.Match {
		return res, fmt.Errorf("%w: catalog %s differs from shards %s: %v", ErrMismatch, url, input, res.Diff)
	}
	return res, nil
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
