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
	"github.com/rocklake/rocklake-migrate/pkg/localstack/localstacktest"
)

// One versitygw on loopback for the package: a versioned bucket and one
// without versioning.
const (
	versioned   = "rocklake"
	unversioned = "plain"
)

func TestMain(m *testing.M) {
	os.Exit(localstacktest.Main(m, map[string]bool{versioned: true, unversioned: false}))
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
