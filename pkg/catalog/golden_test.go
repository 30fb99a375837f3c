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

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/internal/testenv/testcatalog"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
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
	checkGoldenCoverage(t, "file://"+dir)
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
		ctx := testenv.Context(t)
		s := s3server.Start(t)
		s3server.SetEnv(t, s)
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
	ctx := testenv.Context(t)
	c := testcatalog.OpenV1(t, url)
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

// generateGolden writes the golden catalog: a seeded format-1 catalog, one
// row of every key shape the seed did not write, and what a newer binary
// might have left in it: a key of an unknown tag (0x1D, one of RockLake's
// IVM tables until v0.22), counter and system keys of no known shape, and a
// row with a field this binary does not know.
func generateGolden(t *testing.T) {
	ctx := testenv.Context(t)
	tmp := filepath.Join(t.TempDir(), "catalog-v1")
	url := "file://" + tmp
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 60, Seed: 20250110}); err != nil {
		t.Fatal(err)
	}
	c := testcatalog.OpenV1(t, url)
	have := map[shapeID]bool{}
	var file catalog.Entry
	for row, err := range c.ScanRange(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		have[shapeID{row.Key.Tag, row.Key.Name}] = true
		if row.Key.Tag == format.TagDataFile && file.Key == nil {
			file = row.Raw
		}
	}
	c.Close()
	if file.Key == nil {
		t.Fatal("the seed wrote no data file")
	}
	var b slatedb.Batch
	for _, shape := range shapes() {
		if have[shapeID{shape.Tag, shape.Name}] {
			continue
		}
		msg := sampleRow(t, format.V1, shape, 1)
		k := sampleKey(shape, msg, 1)
		b.Put(mustKey(t, format.V1, k), mustValue(t, format.V1, k, msg))
	}
	value := protowire.AppendTag(bytes.Clone(file.Value), 1000, protowire.BytesType)
	value = protowire.AppendString(value, "a newer binary's field")
	b.Put(file.Key, value)
	b.Put([]byte{0x1D, 0, 0, 0, 0, 0, 0, 0, 1}, []byte("a row of a table a newer binary added"))
	b.Put(format.SystemKey("future-flag"), []byte("on"))
	b.Put([]byte{byte(format.TagCounter), 0x42}, format.EncodeCounter(format.V1, 7))
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
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

type shapeID struct {
	tag  format.Tag
	name string
}

// checkGoldenCoverage holds the golden catalog to what it is for: a row of
// every key shape of every known tag, a key of an unknown tag, counter and
// system keys of no known shape, and a row with an unknown field.
func checkGoldenCoverage(t *testing.T, url string) {
	t.Helper()
	ctx := testenv.Context(t)
	c := testcatalog.OpenV1(t, url)
	have := map[shapeID]bool{}
	rawCounter, rawSystem, unknownField := false, false, false
	for row, err := range c.ScanRange(ctx, nil, nil) {
		if err != nil {
			t.Fatal(err)
		}
		have[shapeID{row.Key.Tag, row.Key.Name}] = true
		rawCounter = rawCounter || row.Key.Tag == format.TagCounter && row.Key.Raw != nil
		rawSystem = rawSystem || row.Key.Tag == format.TagSystem && row.Key.Raw != nil
		unknownField = unknownField || len(row.Msg.ProtoReflect().GetUnknown()) > 0
	}
	for _, shape := range shapes() {
		if !have[shapeID{shape.Tag, shape.Name}] {
			t.Errorf("the golden catalog has no %s %q key", shape.Tag, shape.Name)
		}
	}
	unknown, err := c.UnknownTags(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(unknown) == 0 || !rawCounter || !rawSystem || !unknownField {
		t.Errorf("the golden catalog lacks a newer binary's data: unknown tags %v, raw counter %v, raw system key %v, unknown field %v",
			unknown, rawCounter, rawSystem, unknownField)
	}
}
