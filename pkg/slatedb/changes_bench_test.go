package slatedb_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// BenchmarkChanges finds a small change (200 keys overwritten, 20 deleted
// and 20 added after the earlier checkpoint, spread over the whole key
// space) in a seeded catalog of 100 000 and 1 000 000 rows, by the SST diff
// and by the merge scan, on file:// and on S3 (versitygw): "-wal" to the
// latest state, the change only in the writer's WAL, "-l0" to a checkpoint
// that moved it to an L0 SST. Seeding is
// not timed. changes is what each run found (the same for both methods),
// candidates the keys the SST diff read in both views, open-s the part of a
// run spent opening (manifests, readers, the differing sources' keys).
func BenchmarkChanges(b *testing.B) {
	for _, rows := range []int{100_000, 1_000_000} {
		for _, be := range backends {
			b.Run(fmt.Sprintf("rows=%d/%s", rows, be.name), func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
				defer cancel()
				url := be.url(b)
				if _, err := seed.Seed(ctx, url, seed.Options{Rows: rows, Seed: 1}); err != nil {
					b.Fatal(err)
				}
				a, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
				if err != nil {
					b.Fatal(err)
				}
				// Passive: no compaction between the views, which would make
				// the change as large as the catalog (the merge scan's case).
				w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				smallChange(b, ctx, w)
				run := func(view string, to slatedb.View) {
					for _, m := range []struct {
						name string
						frac float64
					}{{slatedb.MethodSSTDiff, never}, {slatedb.MethodMergeScan, 0}} {
						b.Run(m.name+"-"+view, func(b *testing.B) {
							var sum slatedb.ChangeSummary
							var open time.Duration
							n := 0
							for b.Loop() {
								var o time.Duration
								sum, n, o = drainChanges(b, ctx, url, slatedb.View{Checkpoint: a.ID}, to, m.frac)
								open += o
							}
							b.ReportMetric(open.Seconds()/float64(b.N), "open-s/op")
							b.ReportMetric(float64(n), "changes")
							b.ReportMetric(float64(sum.Candidates), "candidates")
							b.ReportMetric(float64(sum.ChangedBytes), "changed-bytes")
							b.ReportMetric(float64(sum.TotalBytes), "total-bytes")
						})
					}
				}
				// The change is in the writer's WAL only: a detached checkpoint
				// and that WAL.
				wal, err := slatedb.TakeView(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
				if err != nil {
					b.Fatal(err)
				}
				run("wal", wal)
				// A writer's checkpoint moves its memtable to an L0 SST.
				l0, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
				if err != nil {
					b.Fatal(err)
				}
				run("l0", slatedb.View{Checkpoint: l0.ID})
			})
		}
	}
}

// smallChange overwrites 200 keys, deletes 20 and adds 20, spread over the
// catalog's key space, in the WAL.
func smallChange(b *testing.B, ctx context.Context, w *slatedb.Writer) {
	it, err := w.Scan(ctx, nil, nil)
	if err != nil {
		b.Fatal(err)
	}
	var keys [][]byte
	for it.Next() {
		keys = append(keys, bytes.Clone(it.Key()))
	}
	it.Close()
	if err := it.Err(); err != nil {
		b.Fatal(err)
	}
	step := len(keys) / 220
	var batch slatedb.Batch
	for i := range 220 {
		k := keys[i*step]
		switch {
		case i < 200:
			batch.Put(k, []byte(fmt.Sprintf("changed-%d", i)))
		default:
			batch.Delete(k)
			batch.Put(append(bytes.Clone(k), 0), []byte("new"))
		}
	}
	if err := w.Write(ctx, &batch); err != nil {
		b.Fatal(err)
	}
}

// drainChanges reads every change, and reports how long OpenChanges took
// (the manifests, the readers, the differing sources' keys).
func drainChanges(b *testing.B, ctx context.Context, url string, from, to slatedb.View, frac float64) (slatedb.ChangeSummary, int, time.Duration) {
	start := time.Now()
	ch, err := slatedb.OpenChanges(ctx, url, from, to, slatedb.Options{}, frac)
	if err != nil {
		b.Fatal(err)
	}
	open := time.Since(start)
	defer ch.Close()
	n := 0
	for ch.Next() {
		n++
	}
	if err := ch.Err(); err != nil {
		b.Fatal(err)
	}
	if n != 240 {
		b.Fatalf("%d changes, want 240", n)
	}
	return ch.Summary(), n, open
}
