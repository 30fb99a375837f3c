package s3server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BlackHole is an endpoint on 127.0.0.1 that accepts connections and never
// answers: what a hung S3 front or a firewall that swallows packets looks
// like to a client. It is closed, with every connection it took, when the
// test ends.
type BlackHole struct {
	URL      string // http://127.0.0.1:port
	accepted atomic.Int64
}

// Accepted is how many connections the endpoint took: one per attempt of a
// client that retries on fresh connections.
func (b *BlackHole) Accepted() int64 { return b.accepted.Load() }

// SetEnv points the process's AWS clients (S3, SNS, the engine's) at the
// black hole for the rest of the test, with test credentials and nothing
// from the host, as SetEnv does for a gateway.
func (b *BlackHole) SetEnv(tb testing.TB) {
	tb.Helper()
	for _, kv := range []string{"AWS_ENDPOINT_URL=" + b.URL, "AWS_ENDPOINT_URL_S3=", "AWS_ENDPOINT=", "AWS_PROFILE=", "AWS_SESSION_TOKEN=",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test", "AWS_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull} {
		k, v, _ := strings.Cut(kv, "=")
		tb.Setenv(k, v)
		if v == "" {
			os.Unsetenv(k)
		}
	}
}

// StartBlackHole starts a BlackHole for the rest of the test.
func StartBlackHole(t testing.TB) *BlackHole {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &BlackHole{URL: "http://" + l.Addr().String()}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			b.accepted.Add(1)
			mu.Lock()
			conns = append(conns, c) // held open, never read or answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return b
}

// StallProxy passes requests on to an S3 endpoint (keeping the Host
// header, so signatures still verify) and makes the responses that its
// stall function picks stop half-way: it sends their status, headers and the first half of
// their body, and then nothing until the client gives up or the test ends.
type StallProxy struct {
	URL     string
	mu      sync.Mutex
	stall   func(*http.Request) bool // nil: nothing stalls
	stalled atomic.Int64
}

// Stalled is how many responses the proxy stalled so far.
func (p *StallProxy) Stalled() int64 { return p.stalled.Load() }

// SetStall changes which requests stall from now on.
func (p *StallProxy) SetStall(f func(*http.Request) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stall = f
}

// StartStallProxy starts a StallProxy in front of target (an http:// S3
// endpoint) for the rest of the test; stall may be nil (nothing stalls).
func StartStallProxy(t testing.TB, target string, stall func(*http.Request) bool) *StallProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &StallProxy{stall: stall}
	rp := hostKeepingProxy(u)
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		f := p.stall
		p.mu.Unlock()
		if f == nil || !f(r) {
			rp.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if rec.Code/100 != 2 || len(body) < 2 {
			copyResponse(w, rec.Code, rec.Header(), body)
			return
		}
		p.stalled.Add(1)
		h := w.Header()
		for k, vs := range rec.Header() {
			h[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body[:len(body)/2])
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		select { // the rest never comes
		case <-r.Context().Done():
		case <-gone:
		}
	}))
	t.Cleanup(func() {
		close(gone)
		srv.CloseClientConnections()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// UnreadProxy passes requests on to an S3 endpoint (keeping the Host
// header) but for those its pick function chooses: it takes their headers
// and never reads their body nor answers, holding the connection: an
// endpoint that stopped reading an upload (a body larger than the sockets'
// buffers then blocks its sender).
type UnreadProxy struct {
	URL  string
	held atomic.Int64
}

// Held is how many requests the proxy left unread so far.
func (p *UnreadProxy) Held() int64 { return p.held.Load() }

// StartUnreadProxy starts an UnreadProxy in front of target (an http:// S3
// endpoint) for the rest of the test.
func StartUnreadProxy(t testing.TB, target string, pick func(*http.Request) bool) *UnreadProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &UnreadProxy{}
	rp := hostKeepingProxy(u)
	var mu sync.Mutex
	var conns []net.Conn
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !pick(r) {
			rp.ServeHTTP(w, r)
			return
		}
		c, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		p.held.Add(1)
		mu.Lock()
		conns = append(conns, c) // never read, never answered
		mu.Unlock()
	}))
	t.Cleanup(func() {
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		srv.CloseClientConnections()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

// hostKeepingProxy passes requests on to u with their Host header, so that
// their signatures still verify.
func hostKeepingProxy(u *url.URL) *httputil.ReverseProxy {
	return &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		host := r.In.Host
		r.SetURL(u)
		r.Out.Host = host
	}}
}

// LatencyProxy passes requests on to an S3 endpoint (keeping the Host
// header) each after a delay: an S3 whose every request takes that much
// longer than the local one, as AWS S3's first byte does (10-20 ms).
type LatencyProxy struct {
	URL      string
	requests atomic.Int64
}

// Requests is how many requests the proxy passed on so far.
func (p *LatencyProxy) Requests() int64 { return p.requests.Load() }

// StartLatencyProxy starts a LatencyProxy in front of target (an http://
// S3 endpoint) for the rest of the test.
func StartLatencyProxy(t testing.TB, target string, delay time.Duration) *LatencyProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &LatencyProxy{}
	rp := hostKeepingProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	p.URL = srv.URL
	return p
}

func copyResponse(w http.ResponseWriter, code int, header http.Header, body []byte) {
	h := w.Header()
	for k, vs := range header {
		h[k] = vs
	}
	w.WriteHeader(code)
	_, _ = w.Write(body)
}
