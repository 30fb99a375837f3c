package pointer_test

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
)

// One versitygw on loopback for the package: a versioned bucket and one
// without versioning.
const (
	versioned   = "pointers"
	unversioned = "plain"
)

func TestMain(m *testing.M) {
	os.Exit(s3server.Main(m, map[string]bool{versioned: true, unversioned: false}))
}

var seq atomic.Int64

// newURL is a fresh pointer key in bucket.
func newURL(t testing.TB, bucket string) string {
	return fmt.Sprintf("s3://%s/%s-%d/CURRENT", bucket, strings.ReplaceAll(t.Name(), "/", "-"), seq.Add(1))
}
