// Package kvscan reads a SlateDB database whole, whatever its format, and
// compares two such reads: the byte-for-byte equality the migration tests
// hold a new catalog to. Put writes raw keys and values, as any client of
// SlateDB could.
package kvscan

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Dump is every key and value of the database at url (its latest state).
func Dump(t testing.TB, url string) map[string]string {
	t.Helper()
	ctx := testenv.Context(t)
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", url, err)
	}
	defer r.Close()
	it, err := r.Scan(ctx, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	m := map[string]string{}
	for it.Next() {
		m[string(it.Key())] = string(it.Value())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return m
}

// Put writes keys and values (key, value, key, value, …) into the database
// at url in one batch, straight through SlateDB: the way to build catalogs
// no catalog package would make.
func Put(t testing.TB, url string, kv ...[]byte) {
	t.Helper()
	ctx := testenv.Context(t)
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	for i := 0; i+1 < len(kv); i += 2 {
		b.Put(kv[i], kv[i+1])
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// Same fails t unless got holds exactly want's keys, each with want's value.
func Same(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("%s: %d keys, want %d", what, len(got), len(want))
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Fatalf("%s: key %x differs (present %v)", what, k, ok)
		}
	}
}
