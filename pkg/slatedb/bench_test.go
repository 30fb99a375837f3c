package slatedb_test

import (
	"context"
	"encoding/binary"
	"os"
	"strconv"
	"strings"
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
// durability, per iteration: "-bulkload" with the BulkLoad writer import
// uses (memory bounded whatever it writes), then with the engine's defaults
// (memtables grow up to 1 GiB unflushed). peak-MiB is the process's peak RSS
// during the sub-benchmark (reset before it; Linux); closed-keys/s counts
// the writer's Close as well.
func BenchmarkPut(b *testing.B) {
	for _, be := range backends {
		for _, p := range []struct {
			suffix string
			opts   slatedb.Options
		}{{"-bulkload", slatedb.Options{BulkLoad: true}}, {"", slatedb.Options{}}} {
			b.Run(be.name+p.suffix, func(b *testing.B) {
				ctx := context.Background()
				const n = 200_000
				resetPeakRSS()
				var total, closed time.Duration
				for i := 0; i < b.N; i++ {
					w, err := slatedb.OpenWriter(ctx, be.url(b), p.opts)
					if err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					load(b, ctx, w, n)
					total += time.Since(start)
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					closed += time.Since(start)
				}
				report(b, n*b.N, total)
				// The default writer's puts are durable in its WAL, most of
				// its memtables still to write at Close; a bulk load writes
				// them as it goes. Keys/s with the close counted compares
				// the two on the same work.
				b.ReportMetric(float64(n*b.N)/closed.Seconds(), "closed-keys/s")
				if mib, ok := peakRSSMiB(); ok {
					b.ReportMetric(mib, "peak-MiB")
				}
			})
		}
	}
}

// resetPeakRSS sets the process's peak RSS (VmHWM) to its current RSS, where
// Linux allows it (clear_refs 5).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMiB reads VmHWM from /proc/self/status.
func peakRSSMiB() (float64, bool) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024, err == nil
		}
	}
	return 0, false
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
