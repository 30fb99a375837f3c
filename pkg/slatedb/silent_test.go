package slatedb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A store that accepts connections and never answers is ErrUnavailable
// naming it and the limit it ran into, after the handed attempts: not a
// wait for the total request timeout, nor for the caller's deadline.
func TestSilentStoreIsNamed(t *testing.T) {
	hole := s3server.StartBlackHole(t)
	t.Setenv("AWS_ENDPOINT_URL", hole.URL)
	t.Setenv("AWS_ENDPOINT", hole.URL)
	t.Setenv(awsconfig.EnvFirstByteTimeout, "1s")
	t.Setenv(awsconfig.EnvAttempts, "2")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := fmt.Sprintf("s3://%s/silent-%d", bucket, seq.Add(1))
	_, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	t.Logf("open reader: %v", err)
	if ctx.Err() != nil {
		t.Fatalf("open reader ran into the test's deadline: %v", err)
	}
	if !errors.Is(err, slatedb.ErrUnavailable) {
		t.Fatalf("open reader: err = %v, want ErrUnavailable", err)
	}
	for _, s := range []string{hole.URL, "no response within 1s", awsconfig.EnvFirstByteTimeout} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not name %q", err, s)
		}
	}
	if n := hole.Accepted(); n != 2 {
		t.Errorf("%d attempts, want %s=2", n, awsconfig.EnvAttempts)
	}
}

// Reads whose responses stop half-way: one stall per object is retried
// (the rest read again) and the scan is whole; stalls that go on fail the
// read with ErrUnavailable naming the store, instead of a wait for the
// caller's deadline (export's is 4 hours).
func TestStalledReadsRetryOrFail(t *testing.T) {
	direct := os.Getenv("AWS_ENDPOINT_URL")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := fmt.Sprintf("s3://%s/stalls-%d", bucket, seq.Add(1))
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20_000
	var b slatedb.Batch
	for i := 0; i < n; i++ {
		b.Put(key(i), value(i))
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.FlushMemtable(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	seen := map[string]bool{}
	once := func(r *http.Request) bool { // the first read of each SST stalls
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ".sst") {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		first := !seen[r.URL.Path]
		seen[r.URL.Path] = true
		return first
	}
	proxy := s3server.StartStallProxy(t, direct, once)
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv("AWS_ENDPOINT", proxy.URL)
	t.Setenv(awsconfig.EnvStallTimeout, "1s")
	t.Setenv(awsconfig.EnvFirstByteTimeout, "2s")
	t.Setenv(awsconfig.EnvAttempts, "2")

	read := func() (int, error) {
		r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
		if err != nil {
			return 0, err
		}
		defer r.Close()
		it, err := r.Scan(ctx, nil, nil)
		if err != nil {
			return 0, err
		}
		defer it.Close()
		i := 0
		for ; it.Next(); i++ {
			if !bytes.Equal(it.Key(), key(i)) || !bytes.Equal(it.Value(), value(i)) {
				return i, fmt.Errorf("entry %d = %q, want %q", i, it.Key(), key(i))
			}
		}
		return i, it.Err()
	}

	got, err := read()
	t.Logf("stalling once per object: %d entries, %d responses stalled, %v", got, proxy.Stalled(), err)
	if err != nil || got != n {
		t.Fatalf("stalling once per object: %d entries of %d, %v", got, n, err)
	}
	if proxy.Stalled() == 0 {
		t.Fatal("no response stalled: the test proves nothing")
	}

	proxy.SetStall(func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".sst")
	})
	got, err = read()
	t.Logf("stalling always: %d entries, %v", got, err)
	if ctx.Err() != nil {
		t.Fatalf("the stalled read ran into the test's deadline: %v", err)
	}
	if !errors.Is(err, slatedb.ErrUnavailable) {
		t.Fatalf("stalling always: %d entries, err = %v, want ErrUnavailable", got, err)
	}
	for _, s := range []string{proxy.URL, "stalled", awsconfig.EnvStallTimeout} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not name %q", err, s)
		}
	}
}

// A store that takes the engine's uploads and never reads or answers them
// (its SST and WAL PUTs) fails the writer with ErrUnavailable naming the
// stalled upload, within the upload's bound and the handed attempts, not
// the total request timeout of each (issue 40).
func TestStalledUploadIsNamed(t *testing.T) {
	direct := os.Getenv("AWS_ENDPOINT_URL")
	proxy := s3server.StartUnreadProxy(t, direct, func(r *http.Request) bool {
		return r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, ".sst")
	})
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv("AWS_ENDPOINT", proxy.URL)
	t.Setenv(awsconfig.EnvFirstByteTimeout, "1s")
	t.Setenv(awsconfig.EnvStallTimeout, "1s")
	t.Setenv(awsconfig.EnvAttempts, "2")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := fmt.Sprintf("s3://%s/unread-%d", bucket, seq.Add(1))
	start := time.Now()
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err == nil {
		var b slatedb.Batch
		b.Put(key(1), value(1))
		err = w.Write(ctx, &b)
		_ = w.Close()
	}
	took := time.Since(start)
	t.Logf("a writer whose uploads are never read: %s: %v", took.Round(time.Millisecond), err)
	if ctx.Err() != nil || took > 60*time.Second {
		t.Fatalf("the stalled uploads were not bounded: %s (%v)", took, err)
	}
	if !errors.Is(err, slatedb.ErrUnavailable) || !strings.Contains(err.Error(), "upload stalled") {
		t.Fatalf("err = %v, want ErrUnavailable naming the stalled upload", err)
	}
	if proxy.Held() == 0 {
		t.Fatal("no upload reached the proxy")
	}
}
