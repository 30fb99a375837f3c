package shard

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

func seededCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	url := "file://" + filepath.Join(t.TempDir(), "src")
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 2000, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Open(ctx, url, catalog.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// The parts partition the key space and come back in key order, so that a
// caller merging them in order (Measure) sees one scan of the whole.
func TestScanPartsCoverEveryKeyInOrder(t *testing.T) {
	c := seededCatalog(t)
	ctx := context.Background()
	var all [][]byte
	for e, err := range c.ScanRaw(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, bytes.Clone(e.Key))
	}
	parts, err := scanParts(ctx, c, func(ctx context.Context, r Range) ([][]byte, error) {
		var keys [][]byte
		for e, err := range c.ScanRaw(ctx, r.Start, r.End) {
			if err != nil {
				return nil, err
			}
			keys = append(keys, bytes.Clone(e.Key))
		}
		return keys, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOMAXPROCS(0) > 1 && len(parts) != partsPerCPU*runtime.GOMAXPROCS(0) {
		t.Errorf("%d parts on %d CPUs, want %d per CPU", len(parts), runtime.GOMAXPROCS(0), partsPerCPU)
	}
	var got [][]byte
	for _, p := range parts {
		got = append(got, p...)
	}
	if len(got) != len(all) {
		t.Fatalf("the parts hold %d keys, the catalog %d", len(got), len(all))
	}
	for i := range all {
		if !bytes.Equal(got[i], all[i]) {
			t.Fatalf("key %d: parts %x, scan %x", i, got[i], all[i])
		}
	}
}

// The first part to fail cancels the others (which here would otherwise
// wait forever) and its error is the result.
func TestScanPartsFirstFailureCancelsTheOthers(t *testing.T) {
	c := seededCatalog(t)
	boom := errors.New("boom")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := scanParts(ctx, c, func(ctx context.Context, r Range) (int, error) {
		if r.Index == 0 {
			return 0, boom
		}
		<-ctx.Done()
		return 0, ctx.Err()
	})
	if !errors.Is(err, boom) {
		t.Fatalf("scanParts: %v, want %v", err, boom)
	}
	if ctx.Err() != nil {
		t.Fatal("the parts waited for the test's deadline, not the failure")
	}
}
