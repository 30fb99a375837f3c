package ndjson_test

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// Benchmarks on data-file rows (most of a catalog), one record per op.
// Encode is what an export does per row: NewRecord from the raw entry, then
// Write; Decode is what an import does: Next, then Raw. MB/s counts NDJSON
// bytes before compression.
// Run: go test ./pkg/ndjson -run '^$' -bench . -benchmem

const benchPool = 4096

func benchEntries(b *testing.B, v format.Version) ([]entry, int64) {
	es := make([]entry, benchPool)
	for i := range es {
		es[i] = sampleDataFile(v, uint64(i)*7919)
	}
	return es, int64(len(encode(b, header(v), records(b, v, es)))) / benchPool
}

func perSecond(b *testing.B) {
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// benchShards runs f as a sub-benchmark for each format and shard suffix,
// with the entries it codes (their bytes per line set), the place of a
// shard file of that suffix, and a context and store for it; it reports
// records per second.
func benchShards(b *testing.B, f func(b *testing.B, ctx context.Context, store *blob.Store, v format.Version, url string, es []entry)) {
	ctx := context.Background()
	store := testenv.Store(b)
	for _, v := range versions {
		for _, sfx := range suffixes {
			b.Run(v.String()+"/"+sfx.name, func(b *testing.B) {
				es, lineBytes := benchEntries(b, v)
				b.SetBytes(lineBytes)
				b.ReportAllocs()
				f(b, ctx, store, v, filepath.Join(b.TempDir(), "shard"+sfx.name), es)
				perSecond(b)
			})
		}
	}
}

func BenchmarkEncode(b *testing.B) {
	benchShards(b, func(b *testing.B, ctx context.Context, store *blob.Store, v format.Version, url string, es []entry) {
		fw, err := ndjson.Create(ctx, store, url, header(v))
		if err != nil {
			b.Fatal(err)
		}
		defer fw.Abort()
		i := 0
		for b.Loop() {
			e := es[i%benchPool]
			i++
			r, err := ndjson.NewRecord(v, e.key, e.value)
			if err != nil {
				b.Fatal(err)
			}
			if err := fw.Write(r); err != nil {
				b.Fatal(err)
			}
		}
		if err := fw.Close(); err != nil {
			b.Fatal(err)
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	benchShards(b, func(b *testing.B, ctx context.Context, store *blob.Store, v format.Version, url string, es []entry) {
		writeFile(b, store, url, header(v), records(b, v, es))
		open := func() *ndjson.FileReader {
			fr, err := ndjson.Open(ctx, store, url)
			if err != nil {
				b.Fatal(err)
			}
			return fr
		}
		fr := open()
		defer func() { fr.Close() }()
		for b.Loop() {
			r, err := fr.Next()
			if errors.Is(err, io.EOF) {
				fr.Close()
				fr = open()
				r, err = fr.Next()
			}
			if err != nil {
				b.Fatal(err)
			}
			if k, _ := r.Raw(); len(k) == 0 {
				b.Fatal("empty key")
			}
		}
	})
}

// shardRecords is the size of the shard the memory check streams.
const shardRecords = 200_000

// liveHeap returns the heap in use after a full GC.
func liveHeap() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// streamShard writes n data-file records to a zstd shard file with Create,
// then reads and checks them with Open, and returns the largest growth of
// the live heap over its size before, sampled at every tenth of the
// records both ways.
func streamShard(t testing.TB, n int) (growth uint64) {
	t.Helper()
	v := format.V2
	ctx := context.Background()
	store := testenv.Store(t)
	url := filepath.Join(t.TempDir(), "shard.ndjson.zst")
	base := liveHeap()
	sample := func(i int) {
		if i%(n/10) == 0 {
			if h := liveHeap(); h > base && h-base > growth {
				growth = h - base
			}
		}
	}

	fw, err := ndjson.Create(ctx, store, url, header(v))
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Abort()
	for i := range n {
		e := sampleDataFile(v, uint64(i))
		r, err := ndjson.NewRecord(v, e.key, e.value)
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.Write(r); err != nil {
			t.Fatal(err)
		}
		sample(i)
	}
	if err := fw.Close(); err != nil {
		t.Fatal(err)
	}

	fr, err := ndjson.Open(ctx, store, url)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var d ndjson.Digest
	for i := 0; ; i++ {
		r, err := fr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		d.Add(r)
		sample(i)
	}
	if got := fr.Trailer().Records; got != uint64(n) || d.Counts()["ducklake_data_file"] != uint64(n) {
		t.Fatalf("read %d records, digest counts %v; wrote %d", got, d.Counts(), n)
	}
	return growth
}

// Memory stays flat as a shard grows: streaming 200 000 records keeps no
// more live heap than streaming 20 000 does, within a margin. Under the race
// detector the counts are a tenth, to keep the run short.
func TestMemoryBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 220 000 records")
	}
	large := shardRecords
	if raceEnabled {
		large /= 10
	}
	small := large / 10
	smallGrowth, largeGrowth := streamShard(t, small), streamShard(t, large)
	t.Logf("live heap growth: %d records %.1f MiB, %d records %.1f MiB", small, mib(smallGrowth), large, mib(largeGrowth))
	const margin = 2 << 20
	if largeGrowth > smallGrowth+margin || largeGrowth > 16<<20 {
		t.Errorf("live heap grew %.1f MiB for %d records, %.1f MiB for %d", mib(largeGrowth), large, mib(smallGrowth), small)
	}
}

func mib(n uint64) float64 { return float64(n) / (1 << 20) }

// BenchmarkShard200k writes and reads a whole 200 000-record zstd shard
// file per op and reports the live heap growth.
func BenchmarkShard200k(b *testing.B) {
	b.ReportAllocs()
	var growth uint64
	for b.Loop() {
		growth = max(growth, streamShard(b, shardRecords))
	}
	b.ReportMetric(float64(b.N*shardRecords)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(mib(growth), "heap-growth-MiB")
}
