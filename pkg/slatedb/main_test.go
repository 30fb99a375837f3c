package slatedb_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localstack"
)

// stack is the versitygw the whole package's tests share: S3 is real here,
// started on loopback and stopped when the tests end.
var stack *localstack.Stack

const bucket = "slatedb-test"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

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
	if err := s.CreateBucket(ctx, bucket, true); err != nil {
		fmt.Fprintln(os.Stderr, "create bucket:", err)
		return 1
	}
	for _, kv := range s.Env() {
		k, v, _ := cut(kv)
		os.Setenv(k, v)
	}
	return m.Run()
}

func cut(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

var seq atomic.Int64

// backend is one place a database can live; every behaviour test runs on each.
type backend struct {
	name string
	url  func(t testing.TB) string
}

var backends = []backend{
	{"file", func(t testing.TB) string { return "file://" + t.TempDir() + "/db" }},
	{"s3", func(t testing.TB) string {
		return fmt.Sprintf("s3://%s/%s-%d", bucket, sanitize(t.Name()), seq.Add(1))
	}},
}

func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			b[i] = '-'
		}
	}
	return string(b)
}

func eachBackend(t *testing.T, f func(t *testing.T, url string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.url(t)) })
	}
}
