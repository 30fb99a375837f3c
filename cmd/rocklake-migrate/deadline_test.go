package main

import (
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
)

// An endpoint that accepts connections and never answers, one that refuses
// them, and no credentials at all: each is one clear error naming the cause
// and the endpoint, within the command's --timeout, not a hang.
func TestUnreachableStoresFailClearly(t *testing.T) {
	hung, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	accepting := make(chan struct{})
	go func() {
		defer close(accepting)
		for {
			c, err := hung.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	defer func() {
		hung.Close()
		<-accepting
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	refusing, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + refusing.Addr().String()
	refusing.Close()

	creds := func() {
		t.Setenv("AWS_ACCESS_KEY_ID", "test")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
		t.Setenv("AWS_REGION", "us-east-1")
	}
	creds()
	t.Setenv("AWS_ENDPOINT_URL", "http://"+hung.Addr().String())
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "2s").want(t, exitError, "timed out", hung.Addr().String())
	cli(t, "init-pointer", "--pointer", "s3://b/CURRENT", "--catalog", "s3://b/c", "--timeout", "2s").want(t, exitError, "timed out")

	t.Setenv("AWS_ENDPOINT_URL", refused)
	cli(t, "status", "--pointer", "s3://b/CURRENT").want(t, exitError, "connection refused by "+refused)

	// No credentials from any source.
	t.Setenv("AWS_ENDPOINT_URL", refused)
	for _, v := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(v, "")
	}
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "20s").want(t, exitError, "no AWS credentials")
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "x").want(t, exitUsage, "--timeout")
}

// A store that accepts connections and never answers is named, with the
// limit it ran into, long before the command's own deadline (5 minutes by
// default, kept here): by pkg/blob (status reads the pointer first) and by
// the engine (init-pointer opens the catalog first).
func TestSilentStoreNamedBeforeTheDeadline(t *testing.T) {
	hole := s3server.StartBlackHole(t)
	hole.SetEnv(t)
	t.Setenv(awsconfig.EnvFirstByteTimeout, "1s")
	t.Setenv(awsconfig.EnvStallTimeout, "1s")
	t.Setenv(awsconfig.EnvAttempts, "2")
	// One request's bound: two attempts of a second and the backoff; a
	// command names the endpoint after its first request, not after a
	// request per check.
	const firstRequest = 2500 * time.Millisecond
	for _, args := range silentCommands(t) {
		start := time.Now()
		r := cli(t, args...) // under a 2-minute context: the command's own 5 minutes never run out
		took := time.Since(start)
		t.Logf("%s: %s in %s", args[0], strings.TrimSpace(r.stderr), took.Round(time.Millisecond))
		if r.code == exitOK {
			t.Fatalf("%s succeeded against a silent store", args[0])
		}
		out := r.stderr + r.stdout
		if !strings.Contains(out, hole.URL) || !strings.Contains(out, "no response within 1s ("+awsconfig.EnvFirstByteTimeout) &&
			!strings.Contains(out, "stalled: it took no data for 1s ("+awsconfig.EnvStallTimeout) {
			t.Fatalf("%s: does not name the endpoint and the limit it ran into:\n%s\n%s", args[0], r.stdout, r.stderr)
		}
		if strings.Contains(r.stderr, "--timeout") {
			t.Fatalf("%s waited for its own deadline: %s", args[0], r.stderr)
		}
		if took > firstRequest+1500*time.Millisecond {
			t.Errorf("%s took %s: more than its first request's bound (%s)", args[0], took.Round(time.Millisecond), firstRequest)
		}
	}
}

// silentCommands are the commands that meet S3 first thing, each as run
// against the bucket b of a silent endpoint: every one must name it after
// its first request. A local catalog of 20 000 rows is export's source.
func silentCommands(tb testing.TB) [][]string {
	tb.Helper()
	local := "file://" + filepath.Join(tb.TempDir(), "prod")
	cli(tb, "seed", "--catalog", local, "--rows", "20000").want(tb, exitOK)
	return [][]string{
		{"status", "--pointer", "s3://b/CURRENT"},
		{"init-pointer", "--pointer", "s3://b/CURRENT", "--catalog", "s3://b/catalogs/prod"},
		{"check", "--catalog", "s3://b/catalogs/prod", "--expect", "v1"},
		{"export", "--catalog", local, "--format", "v1", "--output", "s3://b/out", "--compression", "none"},
		{"import", "--input", "s3://b/out", "--format", "v1", "--catalog", local + "-new"},
		{"migrate", "--pointer", "s3://b/CURRENT", "--to", "v2"},
		{"plan", "--pointer", "s3://b/CURRENT", "--to", "v2"},
		{"rollback", "--pointer", "s3://b/CURRENT"},
		{"cleanup", "--pointer", "s3://b/CURRENT"},
		{"drift", "--pointer", "s3://b/CURRENT", "--expect", "v2"},
		{"resolve", "--pointer", "s3://b/CURRENT"},
	}
}

// BenchmarkSilentEndpoint: how long each command takes to name an S3
// endpoint that accepts connections and never answers or reads, at the
// default limits (awsconfig.DefaultLimits; make bench-silent). Reported
// per command: named-s.
func BenchmarkSilentEndpoint(b *testing.B) {
	hole := s3server.StartBlackHole(b)
	hole.SetEnv(b)
	for _, args := range silentCommands(b) {
		b.Run(args[0], func(b *testing.B) {
			for b.Loop() {
				start := time.Now()
				r := cli(b, args...)
				if r.code == exitOK || !strings.Contains(r.stderr+r.stdout, hole.URL) {
					b.Fatalf("%s did not name the silent endpoint:\n%s\n%s", args[0], r.stdout, r.stderr)
				}
				b.ReportMetric(time.Since(start).Seconds(), "named-s")
			}
		})
	}
}

// An export whose reads stall part-way (every SST response stops half-way)
// fails naming the store and the limit, instead of running on to its
// 4-hour deadline.
func TestStalledExportFails(t *testing.T) {
	s := s3server.StartWith(t, map[string]bool{"catalogs": true})
	url := "s3://catalogs/stalls"
	cli(t, "seed", "--catalog", url, "--rows", "2000").want(t, exitOK)
	proxy := s3server.StartStallProxy(t, s.Endpoint(), func(r *http.Request) bool {
		return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ".sst")
	})
	t.Setenv("AWS_ENDPOINT_URL", proxy.URL)
	t.Setenv("AWS_ENDPOINT", proxy.URL)
	t.Setenv(awsconfig.EnvStallTimeout, "1s")
	t.Setenv(awsconfig.EnvFirstByteTimeout, "2s")
	t.Setenv(awsconfig.EnvAttempts, "2")
	start := time.Now()
	r := cli(t, "export", "--catalog", url, "--format", "v1", "--output", t.TempDir(), "--shards", "2")
	t.Logf("export in %s, %d responses stalled:\n%s", time.Since(start).Round(time.Millisecond), proxy.Stalled(), r.stderr)
	r.want(t, exitError, proxy.URL, "stalled", awsconfig.EnvStallTimeout)
	if proxy.Stalled() == 0 {
		t.Fatal("no response stalled: the test proves nothing")
	}
}
