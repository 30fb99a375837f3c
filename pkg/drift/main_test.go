package drift_test

import (
	"os"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
)

// One versitygw on loopback for the package: a versioned bucket and one
// without versioning.
const versioned, unversioned = "rocklake", "plain"

func TestMain(m *testing.M) {
	os.Exit(s3server.Main(m, map[string]bool{versioned: true, unversioned: false}))
}

// newURL is a fresh pointer key in bucket.
func newURL(t testing.TB, bucket string) string { return s3server.NewURL(t, bucket, "/CURRENT") }
