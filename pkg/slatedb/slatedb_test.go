package slatedb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

func key(i int) []byte   { return []byte(fmt.Sprintf("key-%08d", i)) }
func value(i int) []byte { return []byte(fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50))) }

func openWriter(t *testing.T, ctx context.Context, url string) *slatedb.Writer {
	t.Helper()
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatalf("open writer %s: %v", url, err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func put(t *testing.T, ctx context.Context, w *slatedb.Writer, kv ...string) {
	t.Helper()
	var b slatedb.Batch
	for i := 0; i+1 < len(kv); i += 2 {
		b.Put([]byte(kv[i]), []byte(kv[i+1]))
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

// scanAll returns every key and value in [start, end).
func scanAll(t *testing.T, ctx context.Context, kv slatedb.KV, start, end []byte) (keys, values [][]byte) {
	t.Helper()
	it, err := kv.Scan(ctx, start, end)
	if err != nil {
		t.Fatalf("scan: %v", err)
	}
	defer it.Close()
	for it.Next() {
		keys = append(keys, it.Key())
		values = append(values, it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatalf("scan next: %v", err)
	}
	return keys, values
}

func TestWriteAndScan100000Keys(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		const n = 100_000
		var b slatedb.Batch
		for i := 0; i < n; i++ {
			b.Put(key(i), value(i))
			if b.Len() == 1000 {
				if err := w.WriteAsync(ctx, &b); err != nil {
					t.Fatalf("write: %v", err)
				}
				b.Reset()
			}
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatalf("flush: %v", err)
		}
		check := func(kv slatedb.KV) {
			keys, values := scanAll(t, ctx, kv, nil, nil)
			if len(keys) != n {
				t.Fatalf("scan returned %d keys, want %d", len(keys), n)
			}
			for i := range keys {
				if !bytes.Equal(keys[i], key(i)) || !bytes.Equal(values[i], value(i)) {
					t.Fatalf("entry %d = %q=%q, want %q=%q", i, keys[i], values[i], key(i), value(i))
				}
			}
		}
		check(w)
		if err := w.Close(); err != nil {
			t.Fatalf("close: %v", err)
		}
		r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
		if err != nil {
			t.Fatalf("open reader: %v", err)
		}
		defer r.Close()
		check(r)
		// A bounded range holds exactly its keys.
		keys, _ := scanAll(t, ctx, r, key(500), key(1500))
		if len(keys) != 1000 || !bytes.Equal(keys[0], key(500)) || !bytes.Equal(keys[999], key(1499)) {
			t.Fatalf("range scan [500,1500) gave %d keys, first %q", len(keys), keys[0])
		}
		got, err := r.Get(ctx, key(4242))
		if err != nil || !bytes.Equal(got, value(4242)) {
			t.Fatalf("get = %q, %v", got, err)
		}
	})
}

func TestDeletesAndMissingKeys(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		put(t, ctx, w, "a", "1", "b", "2", "c", "3")
		var b slatedb.Batch
		b.Delete([]byte("b"))
		b.Put([]byte("d"), []byte{})
		if err := w.Write(ctx, &b); err != nil {
			t.Fatalf("write: %v", err)
		}
		if _, err := w.Get(ctx, []byte("b")); !errors.Is(err, slatedb.ErrNotFound) {
			t.Fatalf("get deleted key: err = %v, want ErrNotFound", err)
		}
		if v, err := w.Get(ctx, []byte("d")); err != nil || len(v) != 0 {
			t.Fatalf("get empty value = %q, %v", v, err)
		}
		keys, _ := scanAll(t, ctx, w, nil, nil)
		if got := fmt.Sprintf("%s", keys); got != "[a c d]" {
			t.Fatalf("keys after delete = %s", got)
		}
		if err := w.Write(ctx, &slatedb.Batch{}); !errors.Is(err, slatedb.ErrInvalid) {
			t.Fatalf("empty batch: err = %v, want ErrInvalid", err)
		}
	})
}

func TestSecondWriterFencesFirst(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		first := openWriter(t, ctx, url)
		put(t, ctx, first, "k", "first")
		second := openWriter(t, ctx, url)
		var b slatedb.Batch
		b.Put([]byte("k"), []byte("stale"))
		err := first.Write(ctx, &b)
		if !errors.Is(err, slatedb.ErrFenced) {
			t.Fatalf("write through fenced writer: err = %v, want ErrFenced", err)
		}
		put(t, ctx, second, "k2", "second")
		if v, err := second.Get(ctx, []byte("k")); err != nil || string(v) != "first" {
			t.Fatalf("second writer reads k = %q, %v; the fenced write must not land", v, err)
		}
	})
}

func TestCheckpointPinsReader(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		put(t, ctx, w, "before", "1")
		cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour, Name: "test"})
		if err != nil {
			t.Fatalf("checkpoint: %v", err)
		}
		follower, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: slatedb.Options{PollInterval: 100 * time.Millisecond}})
		if err != nil {
			t.Fatalf("open latest reader: %v", err)
		}
		defer follower.Close()
		put(t, ctx, w, "after", "2")

		pinned, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID})
		if err != nil {
			t.Fatalf("open pinned reader: %v", err)
		}
		defer pinned.Close()
		if _, err := pinned.Get(ctx, []byte("after")); !errors.Is(err, slatedb.ErrNotFound) {
			t.Fatalf("pinned reader sees a write made after its checkpoint: err = %v", err)
		}
		if v, err := pinned.Get(ctx, []byte("before")); err != nil || string(v) != "1" {
			t.Fatalf("pinned reader: before = %q, %v", v, err)
		}
		// The follower, opened before the write, picks it up within a few polls.
		deadline := time.Now().Add(30 * time.Second)
		for {
			v, err := follower.Get(ctx, []byte("after"))
			if err == nil && string(v) == "2" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("latest-following reader never saw the write: %q, %v", v, err)
			}
			time.Sleep(100 * time.Millisecond)
		}

		cps, err := slatedb.ListCheckpoints(ctx, url, slatedb.Options{})
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		found := false
		for _, c := range cps {
			if c.ID == cp.ID {
				found = c.Name == "test" && c.ExpireTime != nil && c.ExpireTime.After(time.Now())
			}
		}
		if !found {
			t.Fatalf("checkpoint %s (named, expiring) not in list %+v", cp.ID, cps)
		}
	})
}

func TestDetachedCheckpointLifecycle(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		first := openWriter(t, ctx, url)
		put(t, ctx, first, "a", "1")
		if err := first.Close(); err != nil {
			t.Fatal(err)
		}
		cp, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
		if err != nil {
			t.Fatalf("create detached checkpoint: %v", err)
		}
		w := openWriter(t, ctx, url)
		put(t, ctx, w, "b", "2")
		// A detached checkpoint taken next to a live writer does not fence it.
		if _, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{}); err != nil {
			t.Fatalf("second detached checkpoint: %v", err)
		}
		put(t, ctx, w, "c", "3")
		r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID})
		if err != nil {
			t.Fatalf("open pinned reader: %v", err)
		}
		keys, _ := scanAll(t, ctx, r, nil, nil)
		r.Close()
		if len(keys) != 1 || string(keys[0]) != "a" {
			t.Fatalf("pinned to detached checkpoint, keys = %s, want [a]", keys)
		}

		if err := slatedb.DeleteCheckpoint(ctx, url, cp.ID, slatedb.Options{}); err != nil {
			t.Fatalf("delete: %v", err)
		}
		if _, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID}); !errors.Is(err, slatedb.ErrCheckpointMissing) {
			t.Fatalf("open reader on deleted checkpoint: err = %v, want ErrCheckpointMissing", err)
		}
		if err := slatedb.DeleteCheckpoint(ctx, url, cp.ID, slatedb.Options{}); !errors.Is(err, slatedb.ErrCheckpointMissing) {
			t.Fatalf("delete twice: err = %v, want ErrCheckpointMissing", err)
		}
		if _, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: "not-a-uuid"}); !errors.Is(err, slatedb.ErrInvalid) {
			t.Fatalf("malformed checkpoint id: err = %v, want ErrInvalid", err)
		}
	})
}

func TestReaderNeedsADatabase(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		if _, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{}); !errors.Is(err, slatedb.ErrNoDatabase) {
			t.Fatalf("reader on an empty location: err = %v, want ErrNoDatabase", err)
		}
		if _, err := slatedb.ListCheckpoints(ctx, url, slatedb.Options{}); !errors.Is(err, slatedb.ErrNoDatabase) {
			t.Fatalf("checkpoints of an empty location: err = %v, want ErrNoDatabase", err)
		}
	})
}

func TestClosedHandles(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir()
	w := openWriter(t, ctx, url)
	put(t, ctx, w, "a", "1")
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := w.Get(ctx, []byte("a")); !errors.Is(err, slatedb.ErrClosed) {
		t.Fatalf("get on closed writer: err = %v, want ErrClosed", err)
	}
}

func TestContextIsRespected(t *testing.T) {
	url := "file://" + t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := slatedb.OpenWriter(ctx, url, slatedb.Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("open with canceled ctx: err = %v", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), -time.Second)
	defer cancel()
	if _, err := slatedb.OpenWriter(ctx, url, slatedb.Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("open past deadline: err = %v", err)
	}
}

// Bad locations fail by themselves with a named error, well inside the
// context's limit: never a hang, never a crash.
func TestBadLocationsFailClearly(t *testing.T) {
	cases := []struct {
		name, url, endpoint string
		want                error
	}{
		{"malformed", "s3//no-scheme", "", slatedb.ErrInvalid},
		{"unknown scheme", "gopher://x/y", "", slatedb.ErrInvalid},
		{"relative file", "file://relative/path", "", slatedb.ErrInvalid},
		{"no bucket name", "s3:///prefix", "", slatedb.ErrInvalid},
		{"missing bucket", "s3://no-such-bucket-here/db", "", slatedb.ErrNoSuchBucket},
		// Port 1 on loopback: nothing listens, connections are refused.
		{"unreachable endpoint", "s3://" + bucket + "/db", "http://127.0.0.1:1", slatedb.ErrUnavailable},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.endpoint != "" {
				t.Setenv("AWS_ENDPOINT", c.endpoint)
				t.Setenv("AWS_ENDPOINT_URL", c.endpoint)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			before := slatedb.LiveHandles()
			w, err := slatedb.OpenWriter(ctx, c.url, slatedb.Options{S3RetryTimeout: 2 * time.Second, S3MaxRetries: 1})
			if err == nil {
				w.Close()
				t.Fatalf("open writer %s succeeded", c.url)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("open writer %s: err = %v, want %v", c.url, err, c.want)
			}
			if ctx.Err() != nil {
				t.Fatalf("open writer %s ran into the test's own deadline: %v", c.url, err)
			}
			if _, err := slatedb.OpenReader(ctx, c.url, slatedb.ReaderOptions{Options: slatedb.Options{S3RetryTimeout: 2 * time.Second, S3MaxRetries: 1}}); !errors.Is(err, c.want) {
				t.Fatalf("open reader %s: err = %v, want %v", c.url, err, c.want)
			}
			if after := slatedb.LiveHandles(); after != before {
				t.Fatalf("failed opens leaked handles: %d → %d", before, after)
			}
		})
	}
}

func TestNoHandleLeaks(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir()
	w := openWriter(t, ctx, url)
	for i := 0; i < 100; i++ {
		put(t, ctx, w, string(key(i)), "v")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	base := slatedb.LiveHandles()
	for i := 0; i < 200; i++ {
		r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
		if err != nil {
			t.Fatalf("cycle %d: open: %v", i, err)
		}
		keys, _ := scanAll(t, ctx, r, nil, nil)
		if len(keys) != 100 {
			t.Fatalf("cycle %d: %d keys", i, len(keys))
		}
		// An iterator abandoned half-way is freed by Close as well.
		it, err := r.Scan(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		it.Next()
		if during := slatedb.LiveHandles(); during != base+2 {
			t.Fatalf("cycle %d: %d live handles with a reader and an iterator open, want %d", i, during, base+2)
		}
		it.Close()
		if err := r.Close(); err != nil {
			t.Fatalf("cycle %d: close: %v", i, err)
		}
	}
	if got := slatedb.LiveHandles(); got != base {
		t.Fatalf("live handles after 200 cycles = %d, want %d", got, base)
	}
}

// The library reports the slatedb version it was built with; it must be the one
// Cargo.toml pins (a stale native/lib would not be).
func TestEngineVersionIsThePinnedOne(t *testing.T) {
	manifest, err := os.ReadFile("../../native/Cargo.toml")
	if err != nil {
		t.Fatal(err)
	}
	want := `slatedb = { version = "=` + slatedb.EngineVersion() + `"`
	if !strings.Contains(string(manifest), want) {
		t.Fatalf("linked slatedb %s is not the version native/Cargo.toml pins", slatedb.EngineVersion())
	}
}

// Contexts canceled while calls end: the cancel token must outlive the
// goroutine that may be firing it (a use-after-free here corrupted the heap).
func TestCancelRacingCallCompletion(t *testing.T) {
	ctx := testenv.Context(t)
	w := openWriter(t, ctx, "file://"+t.TempDir())
	put(t, ctx, w, "k", "v")
	base := slatedb.LiveHandles()
	for i := 0; i < 3000; i++ {
		cctx, cancel := context.WithCancel(ctx)
		go cancel()
		v, err := w.Get(cctx, []byte("k"))
		if err == nil && string(v) != "v" {
			t.Fatalf("get = %q", v)
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatalf("get: %v", err)
		}
		cancel()
	}
	if got := slatedb.LiveHandles(); got != base {
		t.Fatalf("cancel tokens leaked: %d → %d", base, got)
	}
}

// checkpointCount counts the keys that a detached checkpoint of url holds:
// what the manifest records, not the WAL.
func checkpointCount(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	cp, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
	if err != nil {
		t.Fatalf("detached checkpoint: %v", err)
	}
	defer func() { _ = slatedb.DeleteCheckpoint(ctx, url, cp.ID, slatedb.Options{}) }()
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID})
	if err != nil {
		t.Fatalf("pinned reader: %v", err)
	}
	defer r.Close()
	keys, _ := scanAll(t, ctx, r, nil, nil)
	return len(keys)
}

// FlushMemtable moves what the writer holds into L0, so that a detached
// checkpoint (which covers what the manifest records, not the WAL) sees it.
func TestFlushMemtableReachesTheManifest(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{MaxUnflushedBytes: 8 << 20})
		if err != nil {
			t.Fatalf("open writer: %v", err)
		}
		defer w.Close()
		const n = 5000
		var b slatedb.Batch
		for i := 0; i < n; i++ {
			b.Put(key(i), value(i))
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if got := checkpointCount(t, ctx, url); got != 0 {
			t.Fatalf("before FlushMemtable a detached checkpoint holds %d keys; the test assumes the writes are still WAL-only", got)
		}
		if err := w.FlushMemtable(ctx); err != nil {
			t.Fatalf("flush memtable: %v", err)
		}
		if got := checkpointCount(t, ctx, url); got != n {
			t.Fatalf("after FlushMemtable a detached checkpoint holds %d keys, want %d", got, n)
		}
		keys, values := scanAll(t, ctx, w, nil, nil)
		for i := range keys {
			if !bytes.Equal(keys[i], key(i)) || !bytes.Equal(values[i], value(i)) {
				t.Fatalf("entry %d = %q=%q, want %q=%q", i, keys[i], values[i], key(i), value(i))
			}
		}
	})
}

// A BulkLoad writer has no WAL: a durable Write is in L0 when it returns
// (the manifest records it), a WriteAsync is not until Flush, and a reader
// opened after Close reads every write.
func TestBulkLoadWritesAreDurableInL0(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{BulkLoad: true})
		if err != nil {
			t.Fatalf("open bulk-load writer: %v", err)
		}
		defer w.Close()
		const n = 5000
		put := func(from int) *slatedb.Batch {
			var b slatedb.Batch
			for i := from; i < from+n; i++ {
				b.Put(key(i), value(i))
			}
			return &b
		}
		if err := w.Write(ctx, put(0)); err != nil {
			t.Fatal(err)
		}
		if got := checkpointCount(t, ctx, url); got != n {
			t.Fatalf("after a durable write a detached checkpoint holds %d keys, want %d", got, n)
		}
		if err := w.WriteAsync(ctx, put(n)); err != nil {
			t.Fatal(err)
		}
		if got := checkpointCount(t, ctx, url); got != n {
			t.Fatalf("after a write not yet durable a detached checkpoint holds %d keys, want %d", got, n)
		}
		if err := w.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if got := checkpointCount(t, ctx, url); got != 2*n {
			t.Fatalf("after Flush a detached checkpoint holds %d keys, want %d", got, 2*n)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		keys, values := scanAll(t, ctx, r, nil, nil)
		if len(keys) != 2*n {
			t.Fatalf("a reader after Close reads %d keys, want %d", len(keys), 2*n)
		}
		for i := range keys {
			if !bytes.Equal(keys[i], key(i)) || !bytes.Equal(values[i], value(i)) {
				t.Fatalf("entry %d = %q=%q, want %q=%q", i, keys[i], values[i], key(i), value(i))
			}
		}
	})
}

// A Passive writer leaves the database's SSTs as they are: no compaction
// rewrites them and no garbage collection removes them, however many L0 SSTs
// wait to be compacted.
func TestPassiveWriterReorganisesNothing(t *testing.T) {
	ctx := testenv.Context(t)
	dir := t.TempDir()
	url := "file://" + dir
	ssts := func() map[string]bool {
		t.Helper()
		got := map[string]bool{}
		err := filepath.WalkDir(filepath.Join(dir, "compacted"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".sst") {
				got[filepath.Base(p)] = true
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	writeL0s := func(w *slatedb.Writer, n, from int) {
		t.Helper()
		for i := 0; i < n; i++ {
			var b slatedb.Batch
			for j := 0; j < 500; j++ {
				b.Put(key(from+i*500+j), value(j))
			}
			if err := w.Write(ctx, &b); err != nil {
				t.Fatal(err)
			}
			if err := w.FlushMemtable(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	writeL0s(w, 12, 0) // more L0 SSTs than SlateDB lets wait before it compacts
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	before := ssts()
	if len(before) < 12 {
		t.Fatalf("setup: %d SSTs, want at least 12", len(before))
	}
	w, err = slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	writeL0s(w, 1, 100000)
	time.Sleep(200 * time.Millisecond) // room for background work, were there any
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	after := ssts()
	for name := range before {
		if !after[name] {
			t.Errorf("SST %s was removed by a passive writer", name)
		}
	}
	if len(after) != len(before)+1 {
		t.Errorf("a passive writer that flushed once left %d SSTs, want %d (the %d before and its own)", len(after), len(before)+1, len(before))
	}
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if keys, _ := scanAll(t, ctx, r, nil, nil); len(keys) != 13*500 {
		t.Fatalf("reader sees %d keys, want %d", len(keys), 13*500)
	}
}

// Opening readers never modifies the database: a reader that follows the
// latest state (SlateDB 0.13.1's keeps a checkpoint of its own, which the
// binding holds in process memory) and one pinned to a checkpoint leave every
// file as it was, while the follower still sees writes that are only in the
// live writer's WAL, and new ones as it polls.
func TestReadersWriteNothing(t *testing.T) {
	ctx := testenv.Context(t)
	dir := t.TempDir()
	url := "file://" + dir
	// Passive: no compactor or collector of the writer's touches files meanwhile.
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	put(t, ctx, w, "a", "1")
	if err := w.FlushMemtable(ctx); err != nil {
		t.Fatal(err)
	}
	cp, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	put(t, ctx, w, "b", "2") // durable in the WAL, not in any manifest
	files := func() string {
		t.Helper()
		var b strings.Builder
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%s %d %d\n", p, fi.Size(), fi.ModTime().UnixNano())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	before := files()
	follower, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: slatedb.Options{PollInterval: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	pinned, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: cp.ID})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := follower.Get(ctx, []byte("b")); err != nil || string(v) != "2" {
		t.Fatalf("the follower does not see the WAL-only write: %q, %v", v, err)
	}
	if _, err := pinned.Get(ctx, []byte("b")); !errors.Is(err, slatedb.ErrNotFound) {
		t.Fatalf("the pinned reader sees a write made after its checkpoint: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // several polls
	if err := follower.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pinned.Close(); err != nil {
		t.Fatal(err)
	}
	if after := files(); after != before {
		t.Fatalf("opening, polling and closing readers changed the database:\nbefore:\n%safter:\n%s", before, after)
	}
}

// Close from another goroutine while a scan fetches: the native iterator is
// never used after it is freed (mu), the scan ends, and its error, if any,
// says the iterator was closed. Run with -race.
func TestIteratorCloseRacesNext(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/db"
	w := openWriter(t, ctx, url)
	var b slatedb.Batch
	for i := range 50000 {
		b.Put(key(i), value(i))
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		it, err := w.Scan(ctx, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			it.Close()
		}()
		n := 0
		for it.Next() {
			n++
		}
		<-done
		if err := it.Err(); err != nil && !errors.Is(err, slatedb.ErrClosed) {
			t.Fatalf("scan ended with %v after %d entries", err, n)
		}
		if n > 50000 {
			t.Fatalf("%d entries", n)
		}
	}
}

// A reader's Close honours the caller's deadline: with one that has passed
// it returns at once, and its handle is freed all the same. (Writers have
// had CloseContext all along; a writer abandoned mid-flush would go on
// writing into the test's directory after the test.)
func TestCloseHonoursTheDeadline(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir()
	w := openWriter(t, ctx, url)
	put(t, ctx, w, "k", "v")
	base := slatedb.LiveHandles()
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	past, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
	defer cancel()
	_ = r.CloseContext(past) // may time out; the handle goes regardless
	if n := slatedb.LiveHandles(); n != base {
		t.Fatalf("%d live handles after the reader closed, %d before it opened", n, base)
	}
}
