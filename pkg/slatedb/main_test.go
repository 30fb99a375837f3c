package slatedb_test

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
)

const bucket = "slatedb-test"

// One versitygw on loopback for the whole package: S3 is real here.
func TestMain(m *testing.M) {
	os.Exit(s3server.Main(m, map[string]bool{bucket: true}))
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
