package awsconfig

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
)

// Limits bound every S3 request of the process, the Go SDK's and the
// engine's (handed over with the credentials), so that an endpoint that
// accepts connections and never answers, or a response that stops half-way,
// is an error in seconds instead of a wait for the command's deadline.
type Limits struct {
	// Connect bounds setting up a connection (TCP and TLS).
	Connect time.Duration
	// FirstByte bounds the wait for a response once the request is sent
	// (the engine counts from the start of a request without a body; one
	// with a body is bounded by its total request timeout).
	FirstByte time.Duration
	// Stall bounds the wait for the next bytes of a response body; a slow
	// reader of the body is not a stall, only a silent server is.
	Stall time.Duration
	// Attempts is how many times one request is sent when the endpoint
	// does not answer (any of the limits above), with backoff between.
	Attempts int
}

// The variables that set Limits (a Go duration such as 10s, or a count),
// for operators and tests.
const (
	EnvConnectTimeout   = "ROCKLAKE_S3_CONNECT_TIMEOUT"
	EnvFirstByteTimeout = "ROCKLAKE_S3_FIRST_BYTE_TIMEOUT"
	EnvStallTimeout     = "ROCKLAKE_S3_STALL_TIMEOUT"
	EnvAttempts         = "ROCKLAKE_S3_ATTEMPTS"
)

// DefaultLimits name a dead endpoint within 30 s (three silent attempts of
// 9 s and the backoff between them: 27-29 s measured, make bench-silent),
// well inside the CLI's shortest deadline (5 min) and a Lambda's; S3 itself
// answers in milliseconds and takes and sends a long body without pauses
// of seconds.
func DefaultLimits() Limits {
	return Limits{Connect: 5 * time.Second, FirstByte: 9 * time.Second, Stall: 9 * time.Second, Attempts: 3}
}

// limitsFromEnv is DefaultLimits with the variables set in the environment;
// a value that is not a positive duration (or count) is an error, not a
// silent default.
func limitsFromEnv() (Limits, error) {
	l := DefaultLimits()
	for _, d := range []struct {
		env string
		to  *time.Duration
	}{{EnvConnectTimeout, &l.Connect}, {EnvFirstByteTimeout, &l.FirstByte}, {EnvStallTimeout, &l.Stall}} {
		v := os.Getenv(d.env)
		if v == "" {
			continue
		}
		x, err := time.ParseDuration(v)
		if err != nil || x <= 0 {
			return Limits{}, fmt.Errorf("%s=%q: want a positive duration like 10s", d.env, v)
		}
		*d.to = x
	}
	if v := os.Getenv(EnvAttempts); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return Limits{}, fmt.Errorf("%s=%q: want a count of at least 1", EnvAttempts, v)
		}
		l.Attempts = n
	}
	return l, nil
}

// NoAnswer says which limit an error ran into, if it is one of them: a
// connection not set up, no response, or a body that stalled. (The caller's
// own deadline gives other errors, but for one that cut a dial short: both
// are net's i/o timeout.)
func (l Limits) NoAnswer(err error) (string, bool) {
	var stall *StallError
	var op *net.OpError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &stall) && stall.Upload:
		return fmt.Sprintf("its upload stalled: it took no data for %s (%s)", stall.After, EnvStallTimeout), true
	case errors.As(err, &stall):
		return fmt.Sprintf("its response stalled: no data for %s (%s)", stall.After, EnvStallTimeout), true
	case errors.As(err, &op) && op.Op == "dial" && op.Timeout():
		return fmt.Sprintf("no connection within %s (%s)", l.Connect, EnvConnectTimeout), true
	case isHeaderTimeout(err):
		return fmt.Sprintf("no response within %s (%s)", l.FirstByte, EnvFirstByteTimeout), true
	}
	return "", false
}

// isHeaderTimeout: net/http gave up waiting for response headers
// (Transport.ResponseHeaderTimeout). It says so only in its text.
func isHeaderTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() && strings.Contains(err.Error(), "timeout awaiting response headers")
}

// StallError: a response body stopped arriving, or a request body stopped
// being taken (Upload: the endpoint stopped reading it); no byte moved for
// After. It is a timeout (net.Error), which the SDK's retryer retries.
type StallError struct {
	Host   string
	After  time.Duration
	Upload bool
}

func (e *StallError) Error() string {
	if e.Upload {
		return fmt.Sprintf("upload to %s stalled: the endpoint took no data for %s", e.Host, e.After)
	}
	return fmt.Sprintf("response from %s stalled: no data for %s", e.Host, e.After)
}

// Timeout marks a stall as a timeout: retried, and named as one.
func (e *StallError) Timeout() bool { return true }

// Temporary completes net.Error.
func (e *StallError) Temporary() bool { return true }

// stallGuard is the HTTP client of every AWS call: the SDK's own (dial and
// response-header limits set on it), whose response bodies fail a read that
// waits longer than the stall limit.
type stallGuard struct {
	inner aws.HTTPClient
	stall time.Duration
}

func (c stallGuard) Do(req *http.Request) (*http.Response, error) {
	// net/http's ResponseHeaderTimeout counts from the request's last
	// byte: a body the endpoint never reads (its TCP window full) would
	// block the write forever. The body is taken by the transport a
	// chunk at a time; a wait between chunks longer than the stall limit
	// cancels the request.
	var sent *sendGuard
	cancel := context.CancelCauseFunc(func(error) {})
	if req.Body != nil && req.Body != http.NoBody && c.stall > 0 {
		var ctx context.Context
		ctx, cancel = context.WithCancelCause(req.Context())
		sent = &sendGuard{body: req.Body, limit: c.stall, host: req.URL.Host, cancel: cancel}
		sent.timer = time.AfterFunc(c.stall, sent.fire)
		sent.timer.Stop()
		req = req.WithContext(ctx)
		req.Body = sent
	}
	resp, err := c.inner.Do(req)
	if sent != nil {
		sent.done()
		if stalled := context.Cause(req.Context()); err != nil && errors.As(stalled, new(*StallError)) {
			cancel(nil)
			return nil, stalled
		}
	}
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		cancel(nil)
		return resp, err
	}
	resp.Body = newStallBody(resp.Body, c.stall, req.URL.Host, func() { cancel(nil) })
	return resp, nil
}

// sendGuard is a request body that cancels its request when the transport
// takes no chunk of it for limit, once it has taken the first (the dial has
// its own limit): the endpoint stopped reading.
type sendGuard struct {
	body   io.ReadCloser
	limit  time.Duration
	host   string
	cancel context.CancelCauseFunc
	timer  *time.Timer

	mu       sync.Mutex
	finished bool
}

func (g *sendGuard) Read(p []byte) (int, error) {
	g.timer.Stop()
	n, err := g.body.Read(p)
	g.mu.Lock()
	if err == nil && !g.finished {
		g.timer.Reset(g.limit) // the next chunk must be taken within limit
	}
	g.mu.Unlock()
	return n, err
}

func (g *sendGuard) Close() error {
	g.done()
	return g.body.Close()
}

// done disarms the guard: the body was sent, or the request is over.
func (g *sendGuard) done() {
	g.mu.Lock()
	g.finished = true
	g.mu.Unlock()
	g.timer.Stop()
}

func (g *sendGuard) fire() {
	g.mu.Lock()
	finished := g.finished
	g.mu.Unlock()
	if !finished {
		g.cancel(&StallError{Host: g.host, After: g.limit, Upload: true})
	}
}

// stallBody times each Read: one that waits longer than the limit closes
// the body (which ends the Read) and fails with a *StallError. Only a Read
// in progress is timed, so a slow consumer never trips it.
type stallBody struct {
	body   io.ReadCloser
	limit  time.Duration
	host   string
	timer  *time.Timer
	closed func() // releases the request's context

	mu      sync.Mutex
	stalled bool
}

func newStallBody(body io.ReadCloser, limit time.Duration, host string, closed func()) *stallBody {
	b := &stallBody{body: body, limit: limit, host: host, closed: closed}
	b.timer = time.AfterFunc(limit, b.fire)
	b.timer.Stop()
	return b
}

func (b *stallBody) fire() {
	b.mu.Lock()
	b.stalled = true
	b.mu.Unlock()
	b.body.Close()
}

func (b *stallBody) isStalled() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stalled
}

func (b *stallBody) Read(p []byte) (int, error) {
	if b.isStalled() {
		return 0, &StallError{Host: b.host, After: b.limit}
	}
	b.timer.Reset(b.limit)
	n, err := b.body.Read(p)
	if !b.timer.Stop() && b.isStalled() {
		return n, &StallError{Host: b.host, After: b.limit}
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	if b.closed != nil {
		b.closed()
	}
	return err
}

// silenceKey holds one operation's count of attempts the endpoint did not
// answer, across the retry middleware's attempts.
type silenceKey struct{}

// countSilence gives each operation its count (an Initialize step: once per
// operation, outside the retry loop).
func countSilence(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("rocklakeSilenceCount",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return next.HandleInitialize(context.WithValue(ctx, silenceKey{}, new(int)), in)
		}), middleware.Before)
}

// Retryer bounds r (the standard retryer, with its backoff) by Limits: a
// request that got an answer (throttling, a 5xx) is tried as often as r
// allows, one the endpoint did not answer at most Attempts times, so that a
// dead endpoint is named in a bounded time whatever r's MaxAttempts.
func (l Limits) Retryer(r aws.RetryerV2) aws.RetryerV2 {
	return silenceBudget{RetryerV2: r, limits: l}
}

type silenceBudget struct {
	aws.RetryerV2
	limits Limits
}

// ErrSilentAttempts joins the last error of a request that the endpoint
// left unanswered Attempts times.
var ErrSilentAttempts = errors.New("awsconfig: attempts left unanswered")

func (r silenceBudget) GetRetryToken(ctx context.Context, err error) (func(error) error, error) {
	if n, ok := ctx.Value(silenceKey{}).(*int); ok {
		if _, silent := r.limits.NoAnswer(err); silent {
			*n++ // attempts of one operation run one after another
			if *n >= r.limits.Attempts {
				return nil, fmt.Errorf("%d %w", *n, ErrSilentAttempts)
			}
		}
	}
	return r.RetryerV2.GetRetryToken(ctx, err)
}
