// Package testcatalog opens catalogs for tests: a catalog held open for the
// length of a test.
package testcatalog

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// OpenV1 opens the format-1 catalog at url (the startup check expects
// format 1) for the test, closed when it ends.
func OpenV1(t testing.TB, url string) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Open(testenv.Context(t), url, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
