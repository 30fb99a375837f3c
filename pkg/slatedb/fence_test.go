package slatedb_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// backlog writes n durable batches through w, each a WAL SST of its own,
// and leaves them in its WAL (w stays open: nothing reaches L0).
func backlog(tb testing.TB, ctx context.Context, w *slatedb.Writer, n int) {
	tb.Helper()
	for i := range n {
		var b slatedb.Batch
		b.Put(key(i), value(i))
		if err := w.Write(ctx, &b); err != nil {
			tb.Fatalf("write %d: %v", i, err)
		}
	}
}

// latencyS3 is the test's versitygw, reached directly (to set a backlog up
// quickly) or through a proxy that delays every request by 15 ms (what is
// measured).
type latencyS3 struct {
	url   string
	proxy *s3server.LatencyProxy
}

func use(b *testing.B, url string) {
	b.Setenv("AWS_ENDPOINT_URL", url)
	b.Setenv("AWS_ENDPOINT", url)
}

func (s latencyS3) direct(b *testing.B) { use(b, s.url) }
func (s latencyS3) slow(b *testing.B)   { use(b, s.proxy.URL) }

// backlogBench is the backlog benchmarks' setup: the backlog sizes
// ($BENCH_BACKLOG, else 256 and 1024 WAL SSTs) and the S3.
func backlogBench(b *testing.B) ([]int, latencyS3) {
	sizes := testenv.EnvInts(b, "BENCH_BACKLOG", []int{256, 1024})
	direct := os.Getenv("AWS_ENDPOINT_URL")
	return sizes, latencyS3{url: direct, proxy: s3server.StartLatencyProxy(b, direct, 15*time.Millisecond)}
}

// A fencing writer that fetches the WAL ahead (WarmWAL) takes over a live
// writer's backlog: it says what it fetched, holds every write the old
// writer acknowledged, and the old writer is fenced.
func TestWarmWALFence(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		old := openWriter(t, ctx, url)
		const n = 20
		backlog(t, ctx, old, n)
		w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true, WarmWAL: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		got := w.Warmed()
		if got.SSTs < n || got.Bytes <= 0 || got.OpenedAt.IsZero() {
			t.Fatalf("warmed %+v: want the %d WAL SSTs of the backlog or more", got, n)
		}
		for i := range n {
			if v, err := w.Get(ctx, key(i)); err != nil || string(v) != string(value(i)) {
				t.Fatalf("key %d after the fence: %q, %v", i, v, err)
			}
		}
		var b slatedb.Batch
		b.Put([]byte("late"), []byte("x"))
		if err := old.Write(ctx, &b); !errors.Is(err, slatedb.ErrFenced) {
			t.Fatalf("the old writer's write after the fence: %v, want ErrFenced", err)
		}
		// Without WarmWAL nothing is fetched ahead.
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		plain := openWriter(t, ctx, url)
		if got := plain.Warmed(); got != (slatedb.Warmed{}) {
			t.Fatalf("a plain writer warmed %+v", got)
		}
	})
}

// BenchmarkFenceBacklog is the online fence on an S3 whose every request
// takes 15 ms more than versitygw's (a LatencyProxy): a live writer leaves
// a backlog of $BENCH_BACKLOG WAL SSTs (256 and 1024 by default), and a
// passive writer opens over it, fencing it, with the WAL fetched ahead
// (warm) or replayed by the open alone (cold). freeze-s is the open after
// the fetch (the fence and the replay: what the write freeze waits for),
// fetch-s the fetch before it (the old writer still writes meanwhile).
func BenchmarkFenceBacklog(b *testing.B) {
	sizes, s3 := backlogBench(b)
	for _, n := range sizes {
		for _, warm := range []bool{false, true} {
			name := fmt.Sprintf("backlog=%d/cold", n)
			if warm {
				name = fmt.Sprintf("backlog=%d/warm", n)
			}
			b.Run(name, func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				var freeze, fetch float64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					url := fmt.Sprintf("s3://%s/fence-%d-%d", bucket, n, seq.Add(1))
					s3.direct(b)
					old, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
					if err != nil {
						b.Fatal(err)
					}
					backlog(b, ctx, old, n)
					s3.slow(b)
					b.StartTimer()
					start := time.Now()
					w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true, WarmWAL: warm})
					end := time.Now()
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					from := start
					if warm {
						got := w.Warmed()
						if got.SSTs < n {
							b.Fatalf("warmed %+v, want %d WAL SSTs or more", got, n)
						}
						from, fetch = got.OpenedAt, fetch+got.Took.Seconds()
					}
					freeze += end.Sub(from).Seconds()
					if err := w.Close(); err != nil {
						b.Fatal(err)
					}
					_ = old.Close() // fenced
				}
				b.ReportMetric(freeze/float64(b.N), "freeze-s")
				b.ReportMetric(fetch/float64(b.N), "fetch-s")
			})
		}
	}
}

// BenchmarkLastRoundBacklog is the online run's last catch-up round on the
// same 15 ms S3: a live writer's backlog of $BENCH_BACKLOG WAL SSTs (256
// and 1024 by default) in both views, the round before the fence's view
// and the fenced source's, with 5 commits between them. The round's
// changes are those 5, found by the SST diff; round-s is the time to find
// them (Verify after the fence reads as much), requests the S3 requests it
// made. "read": the backlog read from its WAL SSTs as both views' overlay;
// "kept": the round before kept its view's overlay in an overlay cache
// (as the rounds before the fence do), so that the last round reads that
// and the 5 commits' WAL SSTs.
func BenchmarkLastRoundBacklog(b *testing.B) {
	sizes, s3 := backlogBench(b)
	for _, n := range sizes {
		for _, kept := range []bool{false, true} {
			name := fmt.Sprintf("backlog=%d/read", n)
			if kept {
				name = fmt.Sprintf("backlog=%d/kept", n)
			}
			b.Run(name, func(b *testing.B) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
				defer cancel()
				var secs float64
				var requests int64
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					url := fmt.Sprintf("s3://%s/round-%d-%d", bucket, n, seq.Add(1))
					opts := slatedb.Options{}
					if kept {
						opts.OverlayCache = url + "-overlays/"
					}
					s3.direct(b)
					old, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
					if err != nil {
						b.Fatal(err)
					}
					first, err := old.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
					if err != nil {
						b.Fatal(err)
					}
					backlog(b, ctx, old, n)
					before := latest(b, ctx, url)
					if kept { // the round before the fence's
						keep := opts
						keep.KeepOverlay = true
						changesWith(b, ctx, url, at(first.ID), before, keep, slatedb.DefaultMaxChangedFraction)
					}
					for j := range 5 {
						var batch slatedb.Batch
						batch.Put(key(n+j), value(n+j))
						if err := old.Write(ctx, &batch); err != nil {
							b.Fatal(err)
						}
					}
					fence, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true, WarmWAL: true})
					if err != nil {
						b.Fatal(err)
					}
					fenced := latest(b, ctx, url)
					s3.slow(b)
					b.StartTimer()
					start, reqs := time.Now(), s3.proxy.Requests()
					got, sum := changesWith(b, ctx, url, before, fenced, opts, slatedb.DefaultMaxChangedFraction)
					secs += time.Since(start).Seconds()
					requests += s3.proxy.Requests() - reqs
					b.StopTimer()
					if len(got) != 5 || sum.Method != slatedb.MethodSSTDiff {
						b.Fatalf("the last round found %d changes by %s, want the 5 commits by the SST diff", len(got), sum.Method)
					}
					_ = fence.Close()
					_ = old.Close() // fenced
				}
				b.ReportMetric(secs/float64(b.N), "round-s")
				b.ReportMetric(float64(requests)/float64(b.N), "requests")
			})
		}
	}
}
