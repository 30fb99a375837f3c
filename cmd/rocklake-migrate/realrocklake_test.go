package main

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

// A catalog from our seed generator passes `rocklake verify catalog`, with
// the rows we seeded.
func TestSeededCatalogPassesRockLakeVerify(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "seeded")
	res, err := seed.Seed(ctx, "file://"+dir, seed.Options{Rows: 20000, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	out, err := rocklake.Verify(ctx, dir)
	if err != nil {
		t.Fatalf("rocklake verify catalog: %v\n%s", err, out)
	}
	f := rocklake.Fields(out)
	if got := f["Rows checked"]; got != itoa(res.VerifiedRows()) {
		t.Fatalf("rocklake verify checked %q rows, we seeded %d counters+schemas+tables+columns+snapshots\n%s", got, res.VerifiedRows(), out)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
