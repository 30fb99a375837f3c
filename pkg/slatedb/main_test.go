package slatedb_test

import (
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
		return s3server.NewURL(t, bucket, "")
	}},
}

func eachBackend(t *testing.T, f func(t *testing.T, url string)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.url(t)) })
	}
}
