package blob_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// storeWith sets the environment's settings (name, value, name, value, …)
// for the test and returns a context for its I/O and a store configured
// from the environment, as production configures it.
func storeWith(t *testing.T, env ...string) (context.Context, *blob.Store) {
	t.Helper()
	for i := 0; i+1 < len(env); i += 2 {
		t.Setenv(env[i], env[i+1])
	}
	return testenv.Context(t), testenv.Store(t)
}

// An endpoint that accepts connections and never answers is named, with
// the limit it ran into, after Attempts attempts (not the 5 an answered
// retryable error gets, nor the caller's deadline).
func TestSilentEndpointIsNamed(t *testing.T) {
	hole := s3server.StartBlackHole(t)
	hole.SetEnv(t)
	ctx, store := storeWith(t, awsconfig.EnvFirstByteTimeout, "1s", awsconfig.EnvAttempts, "2")
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"get", func() error { _, _, err := store.Get(ctx, "s3://b/CURRENT"); return err }},
		{"put-if-absent", func() error { _, err := store.PutIfAbsent(ctx, "s3://b/CURRENT", []byte("x")); return err }},
		{"list", func() error { _, err := store.List(ctx, "s3://b/p/"); return err }},
	} {
		before := hole.Accepted()
		err := op.call()
		t.Logf("%s: %v", op.name, err)
		if ctx.Err() != nil {
			t.Fatalf("%s ran into the test's deadline: %v", op.name, err)
		}
		if !errors.Is(err, blob.ErrUnreachable) || errname.Of(err) != errname.Unreachable {
			t.Fatalf("%s: err = %v (%s), want ErrUnreachable named %s (its attempts spent: not retried again)", op.name, err, errname.Of(err), errname.Unreachable)
		}
		for _, s := range []string{hole.URL, "no response within 1s", awsconfig.EnvFirstByteTimeout} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not name %q", op.name, err, s)
			}
		}
		if n := hole.Accepted() - before; n != 2 {
			t.Errorf("%s: %d attempts, want %s=2", op.name, n, awsconfig.EnvAttempts)
		}
	}
}

// An endpoint that takes the connection and never reads the request (a
// body larger than the sockets' buffers: its upload blocks) is named as a
// stalled upload after Attempts attempts, instead of waiting forever
// (issue 40; a multipart upload's parts: TestStalledPartIsNamed).
func TestStalledUploadIsNamed(t *testing.T) {
	hole := s3server.StartBlackHole(t)
	hole.SetEnv(t)
	ctx, store := storeWith(t, awsconfig.EnvFirstByteTimeout, "1s", awsconfig.EnvStallTimeout, "1s", awsconfig.EnvAttempts, "2")
	body := bytes.Repeat([]byte("0123456789abcdef"), 4<<20) // 64 MiB: more than loopback's buffers
	start := time.Now()
	_, err := store.Put(ctx, "s3://b/big", body)
	took := time.Since(start)
	t.Logf("put: %s: %v", took.Round(time.Millisecond), err)
	if ctx.Err() != nil || took > 30*time.Second {
		t.Fatalf("put took %s: the stalled upload was not bounded (%v)", took, err)
	}
	if !errors.Is(err, blob.ErrUnreachable) {
		t.Fatalf("put: err = %v, want ErrUnreachable", err)
	}
	for _, want := range []string{hole.URL, "upload stalled", awsconfig.EnvStallTimeout} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("put: %q does not name %q", err, want)
		}
	}
}

// A multipart upload whose parts the endpoint stops reading (it answered
// the upload's creation) is named the same way, the upload aborted.
func TestStalledPartIsNamed(t *testing.T) {
	startS3(t)
	proxy := s3server.StartUnreadProxy(t, os.Getenv("AWS_ENDPOINT_URL"), func(r *http.Request) bool {
		return r.Method == http.MethodPut && r.URL.Query().Has("partNumber")
	})
	ctx, store := storeWith(t, "AWS_ENDPOINT_URL", proxy.URL, awsconfig.EnvStallTimeout, "1s", awsconfig.EnvAttempts, "2")
	start := time.Now()
	w, err := store.Create(ctx, "s3://"+plainBucket+"/streamed")
	if err == nil {
		if _, err = w.Write(bytes.Repeat([]byte("0123456789abcdef"), 4<<20)); err == nil {
			err = w.Close()
		} else {
			w.Abort()
		}
	}
	took := time.Since(start)
	t.Logf("multipart: %s: %v", took.Round(time.Millisecond), err)
	if ctx.Err() != nil || took > 40*time.Second || !errors.Is(err, blob.ErrUnreachable) || !strings.Contains(err.Error(), "upload stalled") {
		t.Fatalf("a multipart upload whose parts are never read: %v after %s, want ErrUnreachable naming the stalled upload", err, took)
	}
	if proxy.Held() == 0 {
		t.Fatal("no part reached the proxy")
	}
	if _, _, err := store.Get(ctx, "s3://"+plainBucket+"/streamed"); !errors.Is(err, blob.ErrNotFound) {
		t.Fatalf("the failed upload left an object: %v", err)
	}
}

// A response whose body stops half-way fails the read with the limit it ran
// into and the endpoint, instead of waiting for the caller's deadline; a
// whole-object Get reads it again, Attempts reads in all.
func TestStalledBodyIsNamed(t *testing.T) {
	startS3(t)
	ctx := testenv.Context(t)
	url := "s3://" + plainBucket + "/stalls"
	body := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	direct, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := direct.Put(ctx, url, body); err != nil {
		t.Fatal(err)
	}
	proxy := s3server.StartStallProxy(t, os.Getenv("AWS_ENDPOINT_URL"), func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/stalls")
	})
	_, store := storeWith(t, "AWS_ENDPOINT_URL", proxy.URL, awsconfig.EnvStallTimeout, "1s", awsconfig.EnvAttempts, "2")
	check := func(what string, err error) {
		t.Helper()
		if ctx.Err() != nil {
			t.Fatalf("%s ran into the test's deadline: %v", what, err)
		}
		if !errors.Is(err, blob.ErrUnreachable) {
			t.Fatalf("%s: err = %v, want ErrUnreachable", what, err)
		}
		for _, s := range []string{proxy.URL, "stalled", awsconfig.EnvStallTimeout} {
			if !strings.Contains(err.Error(), s) {
				t.Errorf("%s: %q does not name %q", what, err, s)
			}
		}
	}
	_, _, err = store.Get(ctx, url)
	check("get", err)
	if proxy.Stalled() != 2 {
		t.Errorf("get: %d reads stalled, want %s=2", proxy.Stalled(), awsconfig.EnvAttempts)
	}

	r, _, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	r.Close()
	check("open and read", err)
	if n == 0 || n >= int64(len(body)) {
		t.Errorf("read %d bytes of %d before the stall, want the first half", n, len(body))
	}
	if proxy.Stalled() != 3 {
		t.Errorf("open: %d responses stalled in all, want 3 (a streamed body is not read again)", proxy.Stalled())
	}

	// One stall: Get reads the object again, whole.
	stalled := false
	proxy.SetStall(func(r *http.Request) bool {
		first := !stalled && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/stalls")
		stalled = stalled || first
		return first
	})
	if got, _, err := store.Get(ctx, url); err != nil || !bytes.Equal(got, body) {
		t.Fatalf("get after one stall: %d bytes, %v", len(got), err)
	}
	if proxy.Stalled() != 4 {
		t.Errorf("%d responses stalled in all, want 4", proxy.Stalled())
	}

	// A reader slower than the limit is not a stall: only a silent server is.
	proxy.SetStall(nil)
	r, _, err = store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	buf := make([]byte, 64<<10)
	if _, err := io.ReadFull(r, buf); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	rest, err := io.ReadAll(r)
	if err != nil || len(buf)+len(rest) != len(body) {
		t.Fatalf("slow reader: %d bytes, %v", len(buf)+len(rest), err)
	}
}
