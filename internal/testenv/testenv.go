// Package testenv holds what the tests of many packages share: a bounded
// context for a test's I/O (Context) and a blob store configured from the
// environment, as production configures it (Store). The rigs the tests run
// are its subpackages: proc (child processes), s3server (versitygw),
// snsserver (moto), rocklake (the real RockLake binary), catalogfixture
// (catalog entries of every shape), kvscan (raw reads and writes of a
// database) and testcatalog (a catalog open for a test). Product packages
// import none of it (`make lint` checks).
package testenv

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

// testTimeout bounds a test's I/O so that no test can hang: the longest
// any package needs (shard's scans of seeded catalogs on a shared 2-core
// machine); most tests end in seconds.
const testTimeout = 5 * time.Minute

// Context is a context for a test's I/O, ended after testTimeout or when the
// test's cleanups run. It is not t.Context(): cleanups the test registers
// later (stopping servers, deleting objects) may still use it.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// Store is a blob store configured from the environment only (s3server's
// SetEnv or Main point it at the test's versitygw).
func Store(t testing.TB) *blob.Store {
	t.Helper()
	s, err := blob.New(Context(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// EnvInts reads a comma-separated list of integers from the environment
// variable name (a benchmark's sizes), else def.
func EnvInts(t testing.TB, name string, def []int) []int {
	t.Helper()
	env := os.Getenv(name)
	if env == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(env, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, n)
	}
	return out
}
