package catalog_test

import (
	"bytes"
	"crypto/sha256"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/localstack/localstacktest"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The snapshot test: a real SlateDB directory holding a small format-1
// catalog is committed under testdata, with what inspect --json printed for
// it. Every later binary must read it the same. Both are written only with
// -update-golden, deliberately, never by a plain test run.
var updateGolden = flag.Bool("update-golden", false, "rewrite "+goldenDir+" and "+goldenJSON+" (committed test data: only on purpose)")

const (
	goldenDir  = "testdata/catalog-v1"
	goldenJSON = "testdata/catalog-v1.json"
)

func TestGoldenCatalogV1(t *testing.T) {
	if *updateGolden {
		generateGolden(t)
	}
	dir, err := filepath.Abs(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "manifest")); err != nil {
		t.Fatalf("%v: %s is committed test data (regenerate it only on purpose: go test ./pkg/catalog -run TestGoldenCatalogV1 -update-golden)", err, goldenDir)
	}
	before := treeDigest(t, dir)
	got := inspectAll(t, "file://"+dir)
	if after := treeDigest(t, dir); after != before {
		t.Fatalf("reading %s changed files in it: readers must write nothing", goldenDir)
	}
	if *updateGolden {
		if err := os.WriteFile(goldenJSON, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	compareGolden(t, got)

	// The same directory, copied object for object to S3, is the same
	// catalog: the URL names the SlateDB root on either store.
	t.Run("s3", func(t *testing.T) {
		ctx := testCtx(t)
		s := localstacktest.Start(t)
		localstacktest.SetEnv(t, s)
		if err := s.CreateBucket(ctx, "golden", false); err != nil {
			t.Fatal(err)
		}
		store, err := blob.New(ctx)
		if err != nil {
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			body, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(dir, path)
			_, err = store.Put(ctx, "s3://golden/rocklake/catalog-v1/"+filepath.ToSlash(rel), body)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		compareGolden(t, inspectAll(t, "s3://golden/rocklake/catalog-v1"))
	})
}

func inspectAll(t *testing.T, url string) []byte {
	t.Helper()
	ctx := testCtx(t)
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out bytes.Buffer
	if err := c.InspectJSON(ctx, &out, format.KnownTags()...); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

func compareGolden(t *testing.T, got []byte) {
	t.Helper()
	want, err := os.ReadFile(goldenJSON)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(got, want) {
		return
	}
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			t.Fatalf("inspect output differs from %s at line %d:\n got: %.300s\nwant: %.300s", goldenJSON, i+1, at(g, i), at(w, i))
		}
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end of output)"
}

// treeDigest hashes every file's path and content under dir.
func treeDigest(t *testing.T, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		fmt.Fprintf(h, "%s %d\n", path, len(b))
		h.Write(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", h.Sum(nil))
}

// generateGolden writes the golden catalog: a seeded format-1 catalog with
// every row type, plus what a newer binary might have left in it: a key of
// an unknown tag and a row with a field this binary does not know.
func generateGolden(t *testing.T) {
	ctx := testCtx(t)
	tmp := filepath.Join(t.TempDir(), "catalog-v1")
	url := "file://" + tmp
	res, err := seed.Seed(ctx, url, seed.Options{Rows: 160, Seed: 20250106, Version: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range res.Rows {
		if n == 0 {
			t.Fatalf("the golden catalog has no %s row: pick rows or seed so that every table has one", name)
		}
	}
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	var file catalog.Entry
	for row, err := range c.Scan(ctx, format.TagDataFile) {
		if err != nil {
			t.Fatal(err)
		}
		file = row.Raw
		break
	}
	c.Close()
	value := protowire.AppendTag(bytes.Clone(file.Value), 1000, protowire.BytesType)
	value = protowire.AppendString(value, "a newer binary's field")
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put(file.Key, value)
	b.Put([]byte{0x0E, 0, 0, 0, 0, 0, 0, 0, 1}, []byte("a row of a table a newer binary added"))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(goldenDir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(goldenDir, os.DirFS(tmp)); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %s", goldenDir)
}
