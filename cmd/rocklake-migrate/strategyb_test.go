package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The seed page's commands, by hand: export v1, transform, import v2, verify,
// check; the source stays format 1.
func TestStrategyBByHand(t *testing.T) {
	dir := t.TempDir()
	src, dst := "file://"+dir+"/src", "file://"+dir+"/dst"
	v1, v2 := filepath.Join(dir, "catalog-v1.ndjson"), filepath.Join(dir, "catalog-v2.ndjson")
	cli(t, "seed", "--catalog", src, "--rows", "2000", "--seed", "3").want(t, exitOK)
	cli(t, "export", "--catalog", src, "--format", "v1", "--output", v1).want(t, exitOK)
	cli(t, "transform", "--input", v1, "--output", v2, "--to", "v2").want(t, exitOK)
	cli(t, "import", "--format", "v2", "--input", v2, "--catalog", dst).want(t, exitOK)
	r := cli(t, "verify", "--catalog", dst, "--input", v2)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "verified") {
		t.Fatalf("verify printed %q", r.stdout)
	}
	cli(t, "check", "--catalog", dst, "--expect", "v2").want(t, exitOK)
	cli(t, "check", "--catalog", src, "--expect", "v1").want(t, exitOK)
	// Importing again onto the finished catalog is refused.
	cli(t, "import", "--format", "v2", "--input", v2, "--catalog", dst).want(t, exitError, "not empty")
	// A v1 export imported as v2 is refused before anything is written.
	cli(t, "import", "--format", "v2", "--input", v1, "--catalog", "file://"+dir+"/other").want(t, exitError, "transform it first")
	// The shard directory form, with the unknown-tag flag checked.
	shards := filepath.Join(dir, "shards")
	cli(t, "export", "--catalog", src, "--format", "v1", "--output", shards, "--shards", "5").want(t, exitOK)
	cli(t, "transform", "--input", shards, "--output", filepath.Join(dir, "shards-v2"), "--to", "v2", "--unknown-tags", "keep").want(t, exitUsage)
}

func TestStrategyBRefusesVersion99(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir + "/cat"
	kvscan.Put(t, url, format.FormatVersionKey(), format.EncodeFormatVersion(99), snapshotKey, format.EncodeEnvelope(format.V1, nil))
	before := rawDump(t, url)
	cli(t, "export", "--catalog", url, "--format", "v1", "--output", filepath.Join(dir, "x.ndjson")).
		want(t, exitMismatch, "FormatVersionMismatch (SQLSTATE 0A000)", "found catalog format version 99", "expected 1")
	// A good export to verify the v99 catalog against.
	good := "file://" + dir + "/good"
	cli(t, "seed", "--catalog", good, "--rows", "50").want(t, exitOK)
	cli(t, "export", "--catalog", good, "--format", "v1", "--output", filepath.Join(dir, "g.ndjson")).want(t, exitOK)
	cli(t, "verify", "--catalog", url, "--input", filepath.Join(dir, "g.ndjson")).
		want(t, exitMismatch, "FormatVersionMismatch (SQLSTATE 0A000)", "found catalog format version 99")
	cli(t, "import", "--format", "v1", "--input", filepath.Join(dir, "g.ndjson"), "--catalog", url).
		want(t, exitError, "not empty")
	if after := rawDump(t, url); after != before {
		t.Fatalf("a refused command changed the catalog")
	}
}

// The default unknown-tag refusal comes before any shard is written: the
// output holds nothing, although only the last shard has the unknown tag.
func TestTransformRefusesUnknownTagsBeforeWriting(t *testing.T) {
	dir := t.TempDir()
	src := "file://" + dir + "/src"
	cli(t, "seed", "--catalog", src, "--rows", "3000").want(t, exitOK)
	cli(t, "kv", "put", "--catalog", src, "--force", "f0aa", "00").want(t, exitOK) // tag 0xF0: unknown, in the last shard
	shards := filepath.Join(dir, "v1")
	cli(t, "export", "--catalog", src, "--format", "v1", "--output", shards, "--shards", "4").want(t, exitOK)
	out := filepath.Join(dir, "v2")
	cli(t, "transform", "--input", shards, "--output", out, "--to", "v2").want(t, exitError, "UnknownTags", "0xF0: 1")
	if entries, _ := os.ReadDir(out); len(entries) != 0 {
		t.Fatalf("the refused transform wrote %d files", len(entries))
	}
	cli(t, "transform", "--input", shards, "--output", out, "--to", "v2", "--unknown-tags", "carry").want(t, exitOK, "")
}

// Import refuses a target that holds objects, that is inside another
// catalog (its wal/ prefix) or that holds one (a parent prefix, the bucket
// root), and writes nothing there.
func TestImportRefusesParentAndInsideTargets(t *testing.T) {
	s3server.StartWith(t, map[string]bool{"lake-b": false})
	src := "s3://lake-b/catalogs/prod"
	cli(t, "seed", "--catalog", src, "--rows", "200").want(t, exitOK)
	shards := filepath.Join(t.TempDir(), "v1")
	cli(t, "export", "--catalog", src, "--format", "v1", "--output", shards, "--shards", "2").want(t, exitOK)
	before := rawDump(t, src)
	for _, target := range []string{"s3://lake-b/catalogs", "s3://lake-b", src + "/wal", src + "/wal/sub"} {
		cli(t, "import", "--format", "v1", "--input", shards, "--catalog", target).want(t, exitError, "target location is not empty")
	}
	if after := rawDump(t, src); after != before {
		t.Fatal("a refused import changed the source")
	}
	cli(t, "import", "--format", "v1", "--input", shards, "--catalog", "s3://lake-b/catalogs/copy").want(t, exitOK)
}
