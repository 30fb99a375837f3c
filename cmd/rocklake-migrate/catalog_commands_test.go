package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

type result struct {
	code           int
	stdout, stderr string
}

// s3Stack starts versitygw for the test with a versioned bucket "rocklake"
// and points the process's S3 settings at it; the context ends after
// timeout, or with the test.
func s3Stack(tb testing.TB, timeout time.Duration) (context.Context, *s3server.Server) {
	tb.Helper()
	s := s3server.StartWith(tb, map[string]bool{"rocklake": true})
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	tb.Cleanup(cancel)
	return ctx, s
}

// cli runs the CLI in-process, as main does.
func cli(t testing.TB, args ...string) result {
	t.Helper()
	// Benchmarks migrate millions of rows.
	limit := 2 * time.Minute
	if _, bench := t.(*testing.B); bench {
		limit = 20 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var out, errOut bytes.Buffer
	if len(args) > 0 && (args[0] == "migrate" || args[0] == "rollback") && !slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--freeze-grace") }) {
		// No supervisor watches the tests' pointers: fence at once unless
		// a test says otherwise.
		args = append(slices.Clip(args), "--freeze-grace", "0")
	}
	code := run(ctx, &env{stdout: &out, stderr: &errOut}, args)
	return result{code, out.String(), errOut.String()}
}

func (r result) want(t testing.TB, code int, stderr ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stderr {
		if !strings.Contains(r.stderr, s) {
			t.Fatalf("stderr %q does not contain %q", r.stderr, s)
		}
	}
}

// eachBackend runs f on file:// and on s3:// (versitygw on loopback).
func eachBackend(t *testing.T, f func(t *testing.T, newURL func() string)) {
	t.Run("file", func(t *testing.T) {
		dir, n := t.TempDir(), 0
		f(t, func() string { n++; return fmt.Sprintf("file://%s/catalog-%d", dir, n) })
	})
	t.Run("s3", func(t *testing.T) {
		s3server.StartWith(t, map[string]bool{"catalogs": true})
		n := 0
		f(t, func() string { n++; return fmt.Sprintf("s3://catalogs/catalog-%d", n) })
	})
}

// rawDump lists every key and value, bypassing the startup check.
func rawDump(t *testing.T, url string) string {
	t.Helper()
	r := cli(t, "kv", "scan", "--catalog", url, "--skip-version-check")
	r.want(t, 0)
	return r.stdout
}

var (
	versionKeyHex = hex.EncodeToString(format.FormatVersionKey())
	snapshotKey   = []byte{0x02, 0, 0, 0, 0, 0, 0, 0, 1}
)

// Every command that opens a catalog refuses a version-99 one with the
// startup check's error and exit 3, and changes nothing.
func TestEveryCommandRefusesVersion99(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		url := newURL()
		kvscan.Put(t, url, format.FormatVersionKey(), format.EncodeFormatVersion(99), snapshotKey, format.EncodeEnvelope(format.V1, nil))
		before := rawDump(t, url)
		for _, args := range [][]string{
			{"check", "--catalog", url},
			{"check", "--catalog", url, "--expect", "v1"},
			{"check", "--catalog", url, "--json"},
			{"inspect", "--catalog", url},
			{"inspect", "--catalog", url, "--json"},
			{"inspect", "--catalog", url, "--table", "ducklake_snapshot"},
			{"kv", "get", "--catalog", url, hex.EncodeToString(snapshotKey)},
			{"kv", "scan", "--catalog", url},
			{"kv", "put", "--catalog", url, "--force", hex.EncodeToString(snapshotKey), "00"},
			{"kv", "delete", "--catalog", url, "--force", hex.EncodeToString(snapshotKey)},
			{"seed", "--catalog", url, "--rows", "10"},
		} {
			t.Run(strings.Join(args[:2], " "), func(t *testing.T) {
				r := cli(t, args...)
				expected := "expected 2"
				if slices.Contains(args, "--expect") || args[0] == "seed" {
					expected = "expected 1"
				}
				r.want(t, exitMismatch, "FormatVersionMismatch (SQLSTATE 0A000)", "found catalog format version 99", expected)
			})
		}
		if after := rawDump(t, url); after != before {
			t.Fatalf("a refused command changed the catalog:\nbefore %s\nafter  %s", before, after)
		}
		r := cli(t, "check", "--catalog", url, "--json")
		var got checkResult
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("check --json printed %q: %v", r.stdout, err)
		}
		if got.FormatVersion == nil || *got.FormatVersion != 99 || got.OK || got.SQLState != "0A000" {
			t.Fatalf("check --json = %s", r.stdout)
		}
	})
}

// A location with rows but no version key is an uninitialized catalog:
// refused by every command that opens one; seed refuses it as not empty.
func TestEveryCommandRefusesMissingVersion(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		url := newURL()
		kvscan.Put(t, url, snapshotKey, format.EncodeEnvelope(format.V1, nil))
		for _, args := range [][]string{
			{"check", "--catalog", url},
			{"inspect", "--catalog", url},
			{"kv", "get", "--catalog", url, hex.EncodeToString(snapshotKey)},
			{"kv", "scan", "--catalog", url},
			{"kv", "put", "--catalog", url, "--force", "01", "00"},
			{"kv", "delete", "--catalog", url, "--force", "01"},
		} {
			cli(t, args...).want(t, exitMismatch, "FormatVersionMismatch (SQLSTATE 0A000)", "found no catalog format version")
		}
		cli(t, "seed", "--catalog", url, "--rows", "10").want(t, exitError, "not empty", "no catalog-format-version")
		r := cli(t, "check", "--catalog", url, "--json")
		if !strings.HasPrefix(r.stdout, `{"format_version":null,`) {
			t.Fatalf("check --json of an uninitialized catalog: %s", r.stdout)
		}
	})
}

func TestSeedCheckInspect(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		url := newURL()
		r := cli(t, "seed", "--catalog", url, "--rows", "500", "--seed", "9")
		r.want(t, 0)
		if !strings.Contains(r.stdout, "RockLake v0.47.11 layout") || !strings.Contains(r.stdout, "ducklake_file_column_stats") {
			t.Fatalf("seed printed %q", r.stdout)
		}
		cli(t, "seed", "--catalog", url, "--rows", "5").want(t, exitError, "not empty", "format-1 catalog")

		r = cli(t, "check", "--catalog", url)
		r.want(t, 0)
		if r.stdout != "catalog format version 1 (v1): ok\n" {
			t.Fatalf("check printed %q", r.stdout)
		}
		r = cli(t, "check", "--catalog", url, "--json", "--expect", "1")
		r.want(t, 0)
		if r.stdout != `{"format_version":1,"expected":1,"supported_versions":[1,2],"ok":true}`+"\n" {
			t.Fatalf("check --json printed %q", r.stdout)
		}
		cli(t, "check", "--catalog", url, "--expect", "v2").want(t, exitMismatch,
			"FormatVersionMismatch (SQLSTATE 0A000)", "found catalog format version 1, expected 2")

		r = cli(t, "inspect", "--catalog", url)
		r.want(t, 0)
		for _, s := range []string{"catalog format version 1 (v1)", "ducklake_data_file", "total", "next_file_id", "retain-from"} {
			if !strings.Contains(r.stdout, s) {
				t.Fatalf("inspect output lacks %q:\n%s", s, r.stdout)
			}
		}
		r = cli(t, "inspect", "--catalog", url, "--table", "ducklake_table,ducklake_schema")
		r.want(t, 0)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		for _, l := range lines {
			var row struct {
				Table string         `json:"table"`
				Row   map[string]any `json:"row"`
			}
			if err := json.Unmarshal([]byte(l), &row); err != nil || (row.Table != "ducklake_table" && row.Table != "ducklake_schema") || row.Row == nil {
				t.Fatalf("inspect --table line %q: %v", l, err)
			}
		}
		if !strings.HasPrefix(lines[0], `{"table":"ducklake_schema"`) {
			t.Fatalf("rows not in key order: %s", lines[0])
		}

		// Another seed of the same content, elsewhere, prints the same bytes.
		other := newURL()
		cli(t, "seed", "--catalog", other, "--rows", "500", "--seed", "9").want(t, 0)
		a := cli(t, "inspect", "--catalog", url, "--json", "--table", "all")
		b := cli(t, "inspect", "--catalog", other, "--json", "--table", "all")
		a.want(t, 0)
		if a.stdout != b.stdout || !json.Valid([]byte(a.stdout)) {
			t.Fatalf("inspect --json of equal catalogs differs, or is not JSON")
		}
		if strings.Contains(a.stdout, strings.TrimPrefix(url, "file://")) || strings.Contains(a.stdout, strings.TrimPrefix(url, "s3://")) {
			t.Fatalf("inspect --json mentions the catalog's location")
		}
	})
}

// The committed golden catalog, through the CLI, prints the golden JSON.
func TestInspectGoldenCatalog(t *testing.T) {
	dir, err := filepath.Abs("../../pkg/catalog/testdata/catalog-v1")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../pkg/catalog/testdata/catalog-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	r := cli(t, "inspect", "--catalog", "file://"+dir, "--json", "--table", "all")
	r.want(t, 0)
	if r.stdout != string(want) {
		t.Fatalf("inspect --json of %s differs from its golden JSON", dir)
	}
}

func TestKV(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		url := newURL()
		cli(t, "seed", "--catalog", url, "--rows", "20").want(t, 0)

		r := cli(t, "kv", "get", "--catalog", url, versionKeyHex)
		r.want(t, 0)
		if r.stdout != hex.EncodeToString(format.EncodeFormatVersion(1))+"\n" {
			t.Fatalf("kv get version = %q", r.stdout)
		}
		r = cli(t, "kv", "scan", "--catalog", url, "--prefix", "fe")
		r.want(t, 0)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		counters, err := catalogCounts(t, url)
		if err != nil {
			t.Fatal(err)
		}
		if uint64(len(lines)) != counters[format.TagCounter.Name()] {
			t.Fatalf("kv scan --prefix fe: %d lines, want %d:\n%s", len(lines), counters[format.TagCounter.Name()], r.stdout)
		}
		for _, l := range lines {
			k, v, ok := strings.Cut(l, " ")
			if _, err := hex.DecodeString(v); !ok || !strings.HasPrefix(k, "fe") || err != nil {
				t.Fatalf("kv scan line %q: want KEYHEX VALUEHEX", l)
			}
		}

		key := "3001" // a tag this binary does not know: any value
		cli(t, "kv", "put", "--catalog", url, key, "abcd").want(t, exitUsage, "--force")
		cli(t, "kv", "get", "--catalog", url, key).want(t, exitError, "key not found")
		cli(t, "kv", "put", "--catalog", url, "--force", key, "abcd").want(t, 0)
		r = cli(t, "kv", "get", "--catalog", url, key)
		r.want(t, 0)
		if r.stdout != "abcd\n" {
			t.Fatalf("kv get after put = %q", r.stdout)
		}
		r = cli(t, "kv", "scan", "--catalog", url, "--prefix", "30")
		if r.stdout != "3001 abcd\n" {
			t.Fatalf("kv scan --prefix 30 = %q", r.stdout)
		}
		cli(t, "kv", "delete", "--catalog", url, key).want(t, exitUsage, "--force")
		cli(t, "kv", "delete", "--catalog", url, "--force", key).want(t, 0)
		cli(t, "kv", "get", "--catalog", url, key).want(t, exitError, "key not found")

		for _, args := range [][]string{
			{"kv"}, {"kv", "frob"}, {"kv", "get", "--catalog", url}, {"kv", "get", "--catalog", url, "zz"},
			{"kv", "get", "--catalog", url, ""}, {"kv", "scan", "--catalog", url, "--prefix", "x"},
			{"kv", "put", "--catalog", url, "--force", "01"}, {"kv", "get", "01"},
		} {
			cli(t, args...).want(t, exitUsage)
		}
	})
}

// The escape hatch: a catalog whose version key is wrong can be repaired
// only with --skip-version-check (and --force), and then opens again.
func TestKVRepairsTheVersionKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, newURL func() string) {
		url := newURL()
		cli(t, "seed", "--catalog", url, "--rows", "20").want(t, 0)
		v99 := hex.EncodeToString(format.EncodeFormatVersion(99))
		v1 := hex.EncodeToString(format.EncodeFormatVersion(1))
		cli(t, "kv", "put", "--catalog", url, "--force", versionKeyHex, v99).want(t, exitUsage, "--version-key")
		cli(t, "kv", "put", "--catalog", url, "--force", "--version-key", versionKeyHex, v99).want(t, 0)
		cli(t, "check", "--catalog", url).want(t, exitMismatch, "found catalog format version 99")

		cli(t, "kv", "put", "--catalog", url, "--force", "--version-key", versionKeyHex, v1).want(t, exitMismatch)
		cli(t, "kv", "put", "--catalog", url, "--skip-version-check", "--version-key", versionKeyHex, v1).want(t, exitUsage, "--force")
		cli(t, "kv", "put", "--catalog", url, "--force", "--skip-version-check", "--version-key", versionKeyHex, "0153444b56").want(t, exitError, "InvalidValue")
		cli(t, "kv", "put", "--catalog", url, "--force", "--skip-version-check", "--version-key", versionKeyHex, v1).want(t, 0, "warning: --skip-version-check")
		cli(t, "check", "--catalog", url, "--expect", "v1").want(t, 0)
	})
}

func TestUsage(t *testing.T) {
	cli(t, "seed", "--rows", "1").want(t, exitUsage, "--catalog is required")
	cli(t, "seed", "--catalog", "file:///tmp/x").want(t, exitUsage, "--rows")
	cli(t, "check").want(t, exitUsage, "--catalog is required")
	cli(t, "check", "--catalog", "file:///tmp/x", "--expect", "v9").want(t, exitUsage, "--expect")
	cli(t, "inspect", "--catalog", "file:///tmp/x", "--table", "nope").want(t, exitUsage, "unknown table")
	cli(t, "check", "--catalog", "file://"+t.TempDir()+"/none").want(t, exitError, "no catalog at that location")
}

// catalogCounts counts the keys per tag of the format-1 catalog at url.
func catalogCounts(t *testing.T, url string) (map[string]uint64, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := catalog.Open(ctx, url, catalog.Options{Expect: format.V1})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.Counts(ctx)
}

// The raw door validates: a value must be what the catalog's format stores
// under its key, the version key needs --version-key and is never deleted.
func TestKVValidatesValues(t *testing.T) {
	dir := t.TempDir()
	url := "file://" + dir + "/c"
	cli(t, "seed", "--catalog", url, "--rows", "20").want(t, exitOK)
	before := rawDump(t, url)
	snap := hex.EncodeToString(snapshotKey)
	cli(t, "kv", "delete", "--catalog", url, "--force", versionKeyHex).want(t, exitUsage, "--version-key")
	cli(t, "kv", "delete", "--catalog", url, "--force", "--version-key", versionKeyHex).want(t, exitUsage, "uninitialized")
	cli(t, "kv", "put", "--catalog", url, "--force", snap, "00").want(t, exitError, "InvalidValue")
	// A format-2 envelope in a format-1 catalog.
	cli(t, "kv", "put", "--catalog", url, "--force", snap, hex.EncodeToString(format.EncodeEnvelope(format.V2, nil))).want(t, exitError, "InvalidValue")
	// A counter that is not 8 bytes.
	cli(t, "kv", "put", "--catalog", url, "--force", "fe01", hex.EncodeToString(format.EncodeEnvelope(format.V1, []byte{1}))).want(t, exitError, "InvalidValue")
	if after := rawDump(t, url); after != before {
		t.Fatal("a refused kv put changed the catalog")
	}
	cli(t, "kv", "put", "--catalog", url, "--force", snap, hex.EncodeToString(format.EncodeEnvelope(format.V1, nil))).want(t, exitOK)
	cli(t, "kv", "put", "--catalog", url, "--force", "fe01", hex.EncodeToString(format.EncodeCounter(format.V1, 99))).want(t, exitOK)
}
