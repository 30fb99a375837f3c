package slatedb_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// In one batch the last operation on a key wins (SlateDB 0.13.1's
// WriteBatch keeps one op per key): an in-place migration deletes every old
// key first and puts the new ones after, so a key whose bytes both formats
// share ends up put, not deleted.
func TestBatchLastOperationOnAKeyWins(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		put(t, ctx, w, "same", "old", "gone", "old", "kept", "old")
		// Deletes and puts collected apart, then joined: deletes first.
		var b, puts slatedb.Batch
		b.Delete([]byte("same"))
		b.Delete([]byte("gone"))
		puts.Put([]byte("same"), []byte("new"))
		puts.Put([]byte("kept"), []byte("first"))
		puts.Put([]byte("kept"), []byte("second"))
		puts.Put([]byte("dropped"), []byte("x"))
		puts.Delete([]byte("dropped"))
		b.Append(&puts)
		if b.Len() != 7 || puts.Len() != 5 {
			t.Fatalf("after Append: %d and %d operations, want 7 and 5", b.Len(), puts.Len())
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		for _, kv := range [][2]string{{"same", "new"}, {"kept", "second"}} {
			v, err := w.Get(ctx, []byte(kv[0]))
			if err != nil || !bytes.Equal(v, []byte(kv[1])) {
				t.Fatalf("%s = %q, %v; want %q", kv[0], v, err, kv[1])
			}
		}
		for _, k := range []string{"gone", "dropped"} {
			if v, err := w.Get(ctx, []byte(k)); !errors.Is(err, slatedb.ErrNotFound) {
				t.Fatalf("%s = %q, %v; want ErrNotFound", k, v, err)
			}
		}
	})
}

// Puts reads back each put, in order, and skips deletes.
func TestBatchPuts(t *testing.T) {
	var b slatedb.Batch
	b.Put([]byte("a"), []byte("1"))
	b.Delete([]byte("gone"))
	b.Put([]byte("bb"), nil)
	b.Put([]byte("c"), []byte("333"))
	var got []string
	b.Puts(func(k, v []byte) { got = append(got, string(k)+"="+string(v)) })
	if want := "a=1 bb= c=333"; strings.Join(got, " ") != want {
		t.Fatalf("Puts gave %q, want %q", strings.Join(got, " "), want)
	}
}
