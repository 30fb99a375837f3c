package s3server

// What tests use: a gateway for one test or for a package's tests, and the
// process's S3 clients pointed at it.

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Start starts a gateway that is stopped when the test ends. A missing
// versitygw fails the test (the error says to run `make tools`) rather than
// skipping it, so that a run without S3 cannot pass silently. If the test
// failed, the gateway's log is added to the test output.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := Launch(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("versitygw log:\n%s", s.Logs())
		}
		if err := s.Stop(); err != nil {
			t.Errorf("stop local S3: %v", err)
		}
	})
	return s
}

// StartWith starts a gateway for the test (Start), points the process's S3
// clients at it (SetEnv) and creates the buckets (name → versioned).
func StartWith(t testing.TB, buckets map[string]bool) *Server {
	t.Helper()
	s := Start(t)
	SetEnv(t, s)
	for name, versioned := range buckets {
		if err := s.CreateBucket(t.Context(), name, versioned); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

var seq atomic.Int64

// NewURL is a fresh key in bucket for the test, no other test's in the
// process: s3://bucket/NAME-N then suffix, NAME the test's name with every
// byte but letters, digits and '-' made '-'.
func NewURL(t testing.TB, bucket, suffix string) string {
	name := []byte(t.Name())
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			name[i] = '-'
		}
	}
	return fmt.Sprintf("s3://%s/%s-%d%s", bucket, name, seq.Add(1), suffix)
}

// SetEnv points the process's S3 clients at s for the rest of the test (so
// the test must not be parallel). Variables from the host that would send
// requests elsewhere or sign them differently are cleared for the test.
func SetEnv(t testing.TB, s *Server) {
	t.Helper()
	for _, kv := range s.clientEnv() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // records the old value, restored after the test
		if v == "" {
			os.Unsetenv(k)
		}
	}
}

// clientEnv is Env, and the host's variables that would send requests
// elsewhere or sign them differently cleared (empty values), and no
// ~/.aws profile that could still change the S3 settings.
func (s *Server) clientEnv() []string {
	return append(s.Env(), "AWS_ENDPOINT_URL_S3=", "AWS_PROFILE=", "AWS_SESSION_TOKEN=",
		"AWS_CONFIG_FILE="+os.DevNull, "AWS_SHARED_CREDENTIALS_FILE="+os.DevNull)
}

// Main runs a package's tests against one gateway shared by all of them: it
// starts it, creates the buckets (name → versioned), points the process's
// S3 clients at it as SetEnv does, runs m and stops the gateway. Use it from
// TestMain: os.Exit(s3server.Main(m, buckets)). It returns the exit
// code, printing the gateway's log when tests failed.
func Main(m *testing.M, buckets map[string]bool) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := Launch(ctx, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start local S3:", err)
		return 1
	}
	defer s.Stop()
	for name, versioned := range buckets {
		if err := s.CreateBucket(ctx, name, versioned); err != nil {
			fmt.Fprintln(os.Stderr, "create bucket:", err)
			return 1
		}
	}
	for _, kv := range s.clientEnv() {
		k, v, _ := strings.Cut(kv, "=")
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "versitygw log:\n%s\n", s.Logs())
	}
	return code
}
