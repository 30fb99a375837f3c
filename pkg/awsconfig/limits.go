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

// DefaultLimits name a dead endpoint within about half a minute (three
// silent attempts of 10 s and the backoff between them), well inside the
// CLI's shortest deadline (5 min) and a Lambda's; S3 itself answers in
// milliseconds and sends a long response without pauses of seconds.
func DefaultLimits() Limits {
	return Limits{Connect: 5 * time.Second, FirstByte: 10 * time.Second, Stall: 10 * time.Second, Attempts: 3}
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

// StallError: a response body stopped arriving; no byte came for After.
// It is a timeout (net.Error), which the SDK's retryer retries.
type StallError struct {
	Host  string
	After time.Duration
}

func (e *StallError) Error() string {
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
	resp, err := c.inner.Do(req)
	if err != nil || resp.Body == nil || resp.Body == http.NoBody {
		return resp, err
	}
	resp.Body = newStallBody(resp.Body, c.stall, req.URL.Host)
	return resp, nil
}

// stallBody times each Read: one that waits longer than the limit closes
// the body (which ends the Read) and fails with a *StallError. Only a Read
// in progress is timed, so a slow consumer never trips it.
type stallBody struct {
	body  io.ReadCloser
	limit time.Duration
	host  string
	timer *time.Timer

	mu      sync.Mutex
	stalled bool
}

func newStallBody(body io.ReadCloser, limit time.Duration, host string) *stallBody {
	b := &stallBody{body: body, limit: limit, host: host}
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
	return b.body.Close()
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
