package integration

import (
	"context"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// faultProxy sits between the Lambdas and versitygw on loopback: it answers
// a share of requests with 503 SlowDown or 500 InternalError before they
// reach the gateway (so nothing happens behind a failure), and delays
// others. The Host header is kept, so SigV4 signatures still verify.
type faultProxy struct {
	srv            *httptest.Server
	mu             sync.Mutex
	rnd            *rand.Rand
	failed, slowed atomic.Int64
	total          atomic.Int64
}

func newFaultProxy(t *testing.T, target string, failShare, slowShare float64, delay time.Duration) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{rnd: rand.New(rand.NewPCG(1, 2))}
	// Rewrite keeps the client's Host header (SetURL would replace it), so
	// that S3 signatures made for the proxy's address still verify.
	rp := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		host := r.In.Host
		r.SetURL(u)
		r.Out.Host = host
	}}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.total.Add(1)
		p.mu.Lock()
		x := p.rnd.Float64()
		p.mu.Unlock()
		switch {
		case x < failShare/2:
			p.failed.Add(1)
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>injected</Message></Error>`))
			return
		case x < failShare:
			p.failed.Add(1)
			w.WriteHeader(http.StatusInternalServerError)
			w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`))
			return
		case x < failShare+slowShare:
			p.slowed.Add(1)
			time.Sleep(delay)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

// S3 answering 500/503 and slowly for a share of the Lambdas' requests: the
// retries of the clients and of the definition carry the migration through.
func TestS3FaultsMigrationCompletes(t *testing.T) {
	var proxy *faultProxy
	h := startHarnessWith(t, func(endpoint string) string {
		proxy = newFaultProxy(t, endpoint, 0.04, 0.05, 150*time.Millisecond)
		return proxy.srv.URL
	})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	f := h.seed(t, ctx, "faulty", caseRows*4, seedN)
	src := catalogState(t, ctx, f.Source, format.V1)
	o := h.runASL(t, ctx, statemachine.Migration, workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 4, FreezeGrace: noGrace()})
	t.Logf("%d S3 requests through the proxy: %d failed, %d slowed", proxy.total.Load(), proxy.failed.Load(), proxy.slowed.Load())
	if o.Status != "SUCCEEDED" {
		t.Fatalf("run through a faulty S3: %s", o)
	}
	if proxy.failed.Load() == 0 {
		t.Fatal("no fault was injected: the test proves nothing")
	}
	requireMigrated(t, ctx, h, f.Pointer, src, "faulty")
}

// S3 whose responses stop half-way: the first read of every SST and of the
// first shard's files sends half its body and then nothing. The engine reads the rest
// again, a stalled shard read fails its step as Transient and the
// definition's Retry runs it again; the migration completes, each stall
// costing the sandboxes' stall limit, not their 15 minutes.
func TestS3StallsMigrationCompletes(t *testing.T) {
	var proxy *s3server.StallProxy
	var mu sync.Mutex
	seen := map[string]bool{}
	h := startHarnessWith(t, func(endpoint string) string {
		proxy = s3server.StartStallProxy(t, endpoint, func(r *http.Request) bool {
			p := r.URL.Path
			if r.Method != http.MethodGet || !strings.HasSuffix(p, ".sst") && !strings.Contains(p, "/shard-00000-of-") {
				return false
			}
			mu.Lock()
			defer mu.Unlock()
			first := !seen[p]
			seen[p] = true
			return first
		})
		return proxy.URL
	}, awsconfig.EnvStallTimeout+"=1s", awsconfig.EnvFirstByteTimeout+"=2s")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	f := h.seed(t, ctx, "stalling", caseRows, seedN)
	src := catalogState(t, ctx, f.Source, format.V1)
	o := h.runASL(t, ctx, statemachine.Migration, workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 4})
	t.Logf("%d responses stalled half-way", proxy.Stalled())
	if o.Status != "SUCCEEDED" {
		t.Fatalf("run through a stalling S3: %s", o)
	}
	if proxy.Stalled() == 0 {
		t.Fatal("no response stalled: the test proves nothing")
	}
	requireMigrated(t, ctx, h, f.Pointer, src, "stalling")
}

// requireMigrated fails the test unless the pointer names a catalog in
// format 2 with as many rows in each table as the source had (src), after
// a run through a faulty S3 (how: "faulty", "stalling").
func requireMigrated(t *testing.T, ctx context.Context, h *Harness, pointerURL string, src CatalogState, how string) {
	t.Helper()
	p, _, err := pointer.Read(ctx, h.Store, pointerURL)
	if err != nil || p.FormatVersion != format.V2 {
		t.Fatalf("pointer = %+v, %v", p, err)
	}
	got := catalogState(t, ctx, p.Catalog, format.V2)
	for table, n := range src.Counts {
		if got.Counts[table] != n {
			t.Fatalf("%s: %d rows after the %s run, %d in the source", table, got.Counts[table], how, n)
		}
	}
}
