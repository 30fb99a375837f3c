package slatedb_test

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Benchmark shapes from the foundation issue: 24-byte keys, 200-byte values.
const (
	benchKeyLen   = 24
	benchValueLen = 200
	benchBatch    = 1000
)

func benchKey(buf []byte, i int) []byte {
	buf = append(buf[:0], "bench-key-"...)
	buf = binary.BigEndian.AppendUint64(buf, uint64(i))
	for len(buf) < benchKeyLen {
		buf = append(buf, '.')
	}
	return buf
}

var benchValue = make([]byte, benchValueLen)

func load(b *testing.B, ctx context.Context, w *slatedb.Writer, n int) {
	var batch slatedb.Batch
	var kb []byte
	for i := 0; i < n; i++ {
		kb = benchKey(kb, i)
		batch.Put(kb, benchValue)
		if batch.Len() == benchBatch || i == n-1 {
			if err := w.WriteAsync(ctx, &batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := w.Flush(ctx); err != nil {
		b.Fatal(err)
	}
}

func report(b *testing.B, keys int, d time.Duration) {
	b.ReportMetric(float64(keys)/d.Seconds(), "keys/s")
	b.ReportMetric(float64(keys*(benchKeyLen+benchValueLen))/d.Seconds()/1e6, "MB/s")
}

// BenchmarkPut writes 200 000 keys in batches of 1 000 and flushes them to
// durability, per iteration.
func BenchmarkPut(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			const n = 200_000
			var total time.Duration
			for i := 0; i < b.N; i++ {
				w, err := slatedb.OpenWriter(ctx, be.url(b), slatedb.Options{})
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				load(b, ctx, w, n)
				total += time.Since(start)
				w.Close()
			}
			report(b, n*b.N, total)
		})
	}
}

// BenchmarkScan loads 1 000 000 keys once and times full scans through a
// reader.
func BenchmarkScan(b *testing.B) {
	for _, be := range backends {
		b.Run(be.name, func(b *testing.B) {
			ctx := context.Background()
			const n = 1_000_000
			url := be.url(b)
			w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
			if err != nil {
				b.Fatal(err)
			}
			load(b, ctx, w, n)
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			b.ResetTimer()
			var total time.Duration
			for i := 0; i < b.N; i++ {
				start := time.Now()
				it, err := r.Scan(ctx, nil, nil)
				if err != nil {
					b.Fatal(err)
				}
				got := 0
				for it.Next() {
					got++
				}
				if it.Err() != nil {
					b.Fatal(it.Err())
				}
				it.Close()
				total += time.Since(start)
				if got != n {
					b.Fatalf("scanned %d keys, want %d", got, n)
				}
			}
			report(b, n*b.N, total)
		})
	}
}
