package drift_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/localstack"
)

// One versitygw on loopback for the package: a versioned bucket and one
// without versioning.
const (
	versioned   = "rocklake"
	unversioned = "plain"
)

var stack *localstack.Stack

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := localstack.Start(ctx, localstack.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "start versitygw:", err)
		return 1
	}
	defer s.Stop()
	stack = s
	for name, v := range map[string]bool{versioned: true, unversioned: false} {
		if err := s.CreateBucket(ctx, name, v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		os.Setenv(k, v)
	}
	for _, k := range []string{"AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"} {
		os.Unsetenv(k)
	}
	os.Setenv("AWS_CONFIG_FILE", os.DevNull)
	os.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	code := m.Run()
	if code != 0 {
		fmt.Fprintf(os.Stderr, "versitygw log:\n%s\n", s.Logs())
	}
	return code
}

var seq atomic.Int64

// newURL is a fresh pointer key in bucket.
func newURL(t testing.TB, bucket string) string {
	return fmt.Sprintf("s3://%s/%s-%d/CURRENT", bucket, strings.ReplaceAll(t.Name(), "/", "-"), seq.Add(1))
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func newStore(t testing.TB) *blob.Store {
	t.Helper()
	s, err := blob.New(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}
