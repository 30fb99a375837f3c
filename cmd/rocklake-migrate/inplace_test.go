package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// objects lists every object under prefix with its ETag; only the object
// named prefix if exact.
// dataObjects is a listing from objects without SlateDB's manifests.
func dataObjects(listing string) string {
	var out []string
	for _, l := range strings.Split(listing, "\n") {
		if !strings.Contains(l, "/manifest/") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func objects(t *testing.T, ctx context.Context, prefix string, exact ...bool) string {
	t.Helper()
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := store.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range infos {
		if len(exact) > 0 && in.URL != prefix {
			continue // the lock beside the pointer: Check takes and frees it
		}
		out = append(out, in.URL+" "+in.ETag)
	}
	sort.Strings(out)
	return strings.Join(out, "\n")
}

// strategyBDigest migrates a copy of src the export/import way, by hand,
// and returns the new catalog's digest as verify prints it.
func strategyBDigest(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	v1, v2, dst := filepath.Join(dir, "v1.ndjson"), filepath.Join(dir, "v2.ndjson"), "file://"+dir+"/b"
	cli(t, "export", "--catalog", src, "--format", "v1", "--output", v1).want(t, exitOK)
	cli(t, "transform", "--input", v1, "--output", v2, "--to", "v2").want(t, exitOK)
	cli(t, "import", "--format", "v2", "--input", v2, "--catalog", dst).want(t, exitOK)
	r := cli(t, "verify", "--catalog", dst, "--input", v2)
	r.want(t, exitOK)
	_, d, ok := strings.Cut(r.stdout, "digest ")
	if !ok {
		t.Fatalf("verify printed no digest: %s", r.stdout)
	}
	return strings.Fields(d)[0]
}

// migrate --in-place behind a pointer on S3: the dry run and the refusal over
// the limit write nothing; the run gives Strategy B's digest, copies the
// catalog as it was beside it (the way back) and moves the pointer; rollback
// is a pointer flip to the way back, which drift takes for a catalog the
// pointer names, and the next migration goes through from there.
func TestMigrateInPlace(t *testing.T) {
	ctx, _ := s3Stack(t, 3*time.Minute)
	src, ptr := seededS3Pointer(t, 1500)
	wantDigest := strategyBDigest(t, src)
	catalogObjects, pointerObjects := objects(t, ctx, src+"/"), objects(t, ctx, ptr, true)

	var rep localrun.Report
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--dry-run", "--json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || !strings.HasPrefix(rep.Outcome, "dry run") || rep.InPlace == nil || rep.InPlace.Records == 0 {
		t.Fatalf("dry run report %s: %v", r.stdout, err)
	}
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--in-place-max-bytes", "5000").want(t, exitError, "InPlaceTooLarge", "Strategy B")
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--in-place-max-bytes", "0").want(t, exitUsage)
	// A limit whose batch this machine's memory cannot hold (1 TiB), with
	// either flag: refused before anything is touched (issue 24, 7).
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--in-place-max-bytes", "1099511627776").want(t, exitError, "InPlaceLimitTooLarge", "38 bytes per byte")
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place-auto", "--in-place-max-bytes", "1099511627776").want(t, exitError, "InPlaceLimitTooLarge")
	if got := objects(t, ctx, src+"/"); got != catalogObjects {
		t.Fatalf("the dry run or the refusal wrote to the catalog:\nbefore:\n%s\nafter:\n%s", catalogObjects, got)
	}
	if got := objects(t, ctx, ptr, true); got != pointerObjects {
		t.Fatalf("the dry run or the refusal moved the pointer:\nbefore:\n%s\nafter:\n%s", pointerObjects, got)
	}

	r = cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("migrate --in-place --json: %q: %v", r.stdout, err)
	}
	wayBack := "s3://rocklake/catalogs/v1-" + rep.MigrationID
	if rep.Outcome != "migrated in place" || rep.Target != src || rep.PointerVersionID == "" || rep.Digest != wantDigest ||
		rep.InPlace == nil || rep.InPlace.WayBack == nil || rep.InPlace.WayBack.Catalog != wayBack {
		t.Fatalf("report %+v, want migrated in place at %s with Strategy B's digest %s and the way back %s", rep, src, wantDigest, wayBack)
	}
	if got := strategyBDigest(t, wayBack); got != wantDigest {
		t.Fatalf("the way back migrates to %s, the catalog before the migration to %s", got, wantDigest)
	}
	cli(t, "drift", "--pointer", ptr, "--expect", "v2").want(t, exitOK)
	cli(t, "check", "--catalog", src, "--expect", "v2").want(t, exitOK)
	cli(t, "check", "--catalog", src, "--expect", "v1").want(t, exitMismatch, "FormatVersionMismatch")
	if st := cli(t, "status", "--pointer", ptr); !strings.Contains(st.stdout, rep.MigrationID) {
		t.Fatalf("status after the migration: %s", st.stdout)
	}
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place").want(t, exitOK)

	dry := cli(t, "rollback", "--pointer", ptr, "--dry-run")
	dry.want(t, exitOK)
	cli(t, "check", "--catalog", src, "--expect", "v2").want(t, exitOK)
	rb := cli(t, "rollback", "--pointer", ptr)
	rb.want(t, exitOK)
	if !strings.Contains(rb.stdout, "in place") || !strings.Contains(rb.stdout, wayBack) {
		t.Fatalf("rollback printed %s", rb.stdout)
	}
	if st := cli(t, "status", "--pointer", ptr); !strings.Contains(st.stdout, wayBack) {
		t.Fatalf("status after the rollback names no way back %s: %s", wayBack, st.stdout)
	}
	cli(t, "check", "--catalog", wayBack, "--expect", "v1").want(t, exitOK)
	cli(t, "check", "--catalog", src, "--expect", "v2").want(t, exitOK) // the flip left it alone
	cli(t, "drift", "--pointer", ptr, "--expect", "v1").want(t, exitOK)
	// The lock is free and the pointer consistent: the next run goes through.
	r = cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Target != wayBack || rep.Digest != wantDigest {
		t.Fatalf("the migration after the rollback: %s (%v)", r.stdout, err)
	}
	cli(t, "check", "--catalog", wayBack, "--expect", "v2").want(t, exitOK)
}

// Strategy A on a catalog the real RockLake wrote: RockLake refuses the
// migrated catalog (format 2, FormatVersionMismatch), our digest equals a
// Strategy B run's, and after the rollback (the pointer names the way back)
// RockLake serves the way back, takes a write, verifies it, and DuckDB's
// queries answer as before.
func TestRealRockLakeInPlace(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	src, data := filepath.Join(dir, "catalogs", "prod"), filepath.Join(dir, "data")+"/"
	baseline := duckdbAnswers(t, ctx, src, data, rocklake.DuckDBWorkload)
	wantDigest := strategyBDigest(t, "file://"+src)
	ptr := pointAt(t, src)

	var rep localrun.Report
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "migrated in place" || rep.Digest != wantDigest {
		t.Fatalf("migrate --in-place report %s (%v), want Strategy B's digest %s", r.stdout, err, wantDigest)
	}
	if srv, err := rocklake.Serve(ctx, src); err == nil {
		srv.Stop()
		t.Fatalf("rocklake served the catalog migrated to format 2")
	} else if !strings.Contains(err.Error(), "0A000") && !strings.Contains(err.Error(), "FormatVersionMismatch") && !strings.Contains(err.Error(), "format version") {
		t.Fatalf("rocklake's refusal of the format-2 catalog names no format version mismatch: %v", err)
	}

	cli(t, "rollback", "--pointer", ptr).want(t, exitOK)
	wayBack := filepath.Join(dir, "catalogs", "v1-"+rep.MigrationID)
	if st := cli(t, "status", "--pointer", ptr); !strings.Contains(st.stdout, "file://"+wayBack) {
		t.Fatalf("status after the rollback names no way back %s: %s", wayBack, st.stdout)
	}
	if got := duckdbAnswers(t, ctx, wayBack, data, nil); got != baseline {
		t.Fatalf("DuckDB answers differ after the rollback:\nbefore: %s\nafter:  %s", baseline, got)
	}
	addSchema(t, ctx, wayBack, "after_rollback")
	rocklakeVerify(t, ctx, wayBack)
}

// migrate --in-place-auto: a catalog within the limit goes in place, one
// over it through export/import, each said on stderr; forcing and choosing
// at once is a usage error.
func TestMigrateInPlaceAuto(t *testing.T) {
	s3Stack(t, 3*time.Minute)
	cli(t, "migrate", "--pointer", "s3://rocklake/x/CURRENT", "--to", "v2", "--in-place", "--in-place-auto").want(t, exitUsage)
	for _, c := range []struct {
		name, max, outcome, strategy string
	}{
		{"small", "33554432", "migrated in place", "in place (Strategy A)"},
		{"large", "5000", "migrated", "export/import (Strategy B)"},
	} {
		src, ptr := "s3://rocklake/"+c.name+"/catalogs/prod", "s3://rocklake/"+c.name+"/CURRENT"
		cli(t, "seed", "--catalog", src, "--rows", "1500").want(t, exitOK)
		cli(t, "init-pointer", "--pointer", ptr, "--catalog", src).want(t, exitOK)
		r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place-auto", "--in-place-max-bytes", c.max, "--shards", "2", "--json")
		r.want(t, exitOK)
		var rep localrun.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != c.outcome || (rep.Target == src) != (c.name == "small") {
			t.Fatalf("%s: report %s (%v), want %q", c.name, r.stdout, err, c.outcome)
		}
		if !strings.Contains(r.stderr, "strategy: "+c.strategy) {
			t.Fatalf("%s: stderr does not say the strategy %q: %s", c.name, c.strategy, r.stderr)
		}
	}
}

// Issue 24: a way back is released only by a later run that asks for it
// (cleanup --release-way-back), and only once a pointer version named the
// migrated catalog and the current pointer neither names it nor rolls back
// to it; released, it still stays while a kept pointer version names it.
// restore refuses a migration that has no way back claimed, or whose
// migrated catalog a pointer version named (rollback is the way then).
func TestWayBackReleaseAndRestoreRefusals(t *testing.T) {
	ctx, _ := s3Stack(t, 3*time.Minute)
	src, other, ptr := "s3://rocklake/catalogs/prod", "s3://rocklake/catalogs/next", "s3://rocklake/CURRENT"
	cli(t, "seed", "--catalog", src, "--rows", "300").want(t, exitOK)
	cli(t, "seed", "--catalog", other, "--rows", "100").want(t, exitOK)
	cli(t, "init-pointer", "--pointer", ptr, "--catalog", src).want(t, exitOK)
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	wayBack := "s3://rocklake/catalogs/v1-" + rep.MigrationID
	wayBackObjects := objects(t, ctx, wayBack+"/")

	cli(t, "restore", "--pointer", ptr).want(t, exitUsage, "--migration-id is required")
	cli(t, "restore", "--pointer", ptr, "--migration-id", "m-none").want(t, exitError, "RestoreRefused")
	cli(t, "restore", "--pointer", ptr, "--migration-id", rep.MigrationID).want(t, exitError, "RestoreRefused", "use rollback")
	cli(t, "cleanup", "--pointer", ptr, "--apply", "--release-way-back", rep.MigrationID).want(t, exitError, "ReleaseRefused", "rolls back to it")

	// The pointer moves on to another catalog: the way back may go.
	store := flipTo(t, ctx, ptr, other, format.V1, "m-next")
	r = cli(t, "cleanup", "--pointer", ptr, "--release-way-back", rep.MigrationID)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "would record the way back "+wayBack+" as no longer needed") {
		t.Fatalf("cleanup --release-way-back (dry run):\n%s", r.stdout)
	}
	if cl, err := claim.Read(ctx, store, ptr, rep.MigrationID); err != nil || cl.Released != nil || cl.Named == nil {
		t.Fatalf("the claim after the dry run: %+v, %v", cl, err)
	}
	r = cli(t, "cleanup", "--pointer", ptr, "--apply", "--release-way-back", rep.MigrationID)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "recorded the way back "+wayBack+" as no longer needed") {
		t.Fatalf("cleanup --apply --release-way-back:\n%s", r.stdout)
	}
	// What else it removed: the in-place flip's pins, which the pointer
	// moved past, and nothing else.
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "deleted") && !strings.Contains(line, layout.FlipCheckpoint(rep.MigrationID)) {
			t.Fatalf("cleanup --apply --release-way-back deleted more than the flip's pins: %s\n%s", line, r.stdout)
		}
	}
	if cl, err := claim.Read(ctx, store, ptr, rep.MigrationID); err != nil || cl.Released == nil {
		t.Fatalf("the claim after the release: %+v, %v", cl, err)
	}
	// Its data is as it was (deleting the flip's pin on it wrote only its
	// manifest), and it opens.
	if got := dataObjects(objects(t, ctx, wayBack+"/")); got != dataObjects(wayBackObjects) {
		t.Fatalf("the released way back changed while a pointer version names it:\n%s\n→\n%s", dataObjects(wayBackObjects), got)
	}
	cli(t, "check", "--catalog", wayBack, "--expect", "v1").want(t, exitOK)
	cli(t, "drift", "--pointer", ptr, "--expect", "v1").want(t, exitOK)
}
