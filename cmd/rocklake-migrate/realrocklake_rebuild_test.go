package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// commitReads are what a DuckLake client reads of the catalog as of one
// snapshot ($1): the snapshot itself and the rows visible at it.
var commitReads = []string{
	"SELECT * FROM ducklake_snapshot WHERE snapshot_id = $1",
	"SELECT * FROM ducklake_schema WHERE begin_snapshot <= $1",
	"SELECT * FROM ducklake_table WHERE begin_snapshot <= $1",
	"SELECT * FROM ducklake_column WHERE begin_snapshot <= $1",
	"SELECT * FROM ducklake_data_file WHERE begin_snapshot <= $1",
	"SELECT * FROM ducklake_snapshot_changes WHERE snapshot_id <= $1",
}

// readEveryCommit serves dir with the real RockLake and returns its answers
// to commitReads as of every snapshot from 0 to latest, one JSON string
// per snapshot.
func readEveryCommit(t *testing.T, ctx context.Context, dir string, latest uint64) []string {
	t.Helper()
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatalf("rocklake serve %s: %v", dir, err)
	}
	defer srv.Stop()
	var out []string
	for id := uint64(0); id <= latest; id++ {
		var stmts []rocklake.Stmt
		for _, q := range commitReads {
			stmts = append(stmts, rocklake.Stmt{SQL: q, Args: []string{strconv.FormatUint(id, 10)}})
		}
		res, err := srv.ExecExtended(ctx, stmts...)
		if err != nil {
			t.Fatalf("read snapshot %d of %s: %v\n%s", id, dir, err, srv.Logs())
		}
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// The proof with the real binary, which serves format 1 only: a catalog the
// real RockLake wrote, rebuilt by `migrate --rebuild` into another directory
// behind the pointer, is a catalog `rocklake verify catalog` passes and
// `rocklake serve` serves: every earlier commit reads as it read from the
// source, and it takes a write. A rollback's dry run says it would carry
// that write back; --discard-newer-commits (fencing the rebuilt catalog
// first) makes the source current again as it was, naming the snapshot
// left behind, and RockLake serves it. Old main had no --rebuild (a usage
// error), and `--to v1` had nothing to do.
func TestRealRockLakeRebuild(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	src := filepath.Join(dir, "catalogs", "prod")
	want := sampleCatalog(t, ctx, src)
	before := readEveryCommit(t, ctx, src, want.LatestSnapshotID)
	if before[0] == before[len(before)-1] {
		t.Fatalf("the reads do not tell snapshots apart: %s", before[0])
	}

	ptr := pointAt(t, src)
	relocated := filepath.Join(dir, "relocated")
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+relocated+"/", "--shards", "2", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "rebuilt" || rep.From != format.V1 || rep.To != format.V1 {
		t.Fatalf("migrate --rebuild report %q: %v", r.stdout, err)
	}
	target := strings.TrimPrefix(rep.Target, "file://")
	if target != filepath.Join(relocated, "v1-"+rep.MigrationID) {
		t.Fatalf("the new catalog %s is not in %s", rep.Target, relocated)
	}
	status := cli(t, "status", "--pointer", ptr)
	status.want(t, exitOK)
	if !strings.Contains(status.stdout, rep.Target) {
		t.Fatalf("status does not name the new catalog %s:\n%s", rep.Target, status.stdout)
	}

	rocklakeVerify(t, ctx, target)
	after := readEveryCommit(t, ctx, target, want.LatestSnapshotID)
	for id := range before {
		if after[id] != before[id] {
			t.Fatalf("snapshot %d reads differently from the rebuilt catalog:\nsource:  %s\nrebuilt: %s", id, before[id], after[id])
		}
	}
	addSchema(t, ctx, target, "after_rebuild")

	if r := cli(t, "rollback", "--pointer", ptr, "--dry-run"); r.code != exitOK || !strings.Contains(r.stdout, "carried back by rollback") {
		t.Fatalf("rollback --dry-run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := cli(t, "rollback", "--pointer", ptr, "--discard-newer-commits"); r.code != exitOK || !strings.Contains(r.stdout, "left behind in file://"+target+": snapshots") {
		t.Fatalf("rollback --discard-newer-commits: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cli(t, "check", "--catalog", "file://"+src, "--expect", "v1").want(t, exitOK)
	if again := readEveryCommit(t, ctx, src, want.LatestSnapshotID); again[len(again)-1] != before[len(before)-1] {
		t.Fatalf("the source reads differently after the rollback:\nbefore: %s\nafter:  %s", before[len(before)-1], again[len(again)-1])
	}
}

// --rebuild replaces --to, and excludes the in-place strategies, which make
// no new catalog: usage errors before anything is read.
func TestRebuildUsage(t *testing.T) {
	ptr := "s3://nowhere/CURRENT"
	cli(t, "migrate", "--pointer", ptr).want(t, exitUsage, "--to")
	cli(t, "migrate", "--pointer", ptr, "--rebuild", "--in-place").want(t, exitUsage, "--rebuild")
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--in-place-auto", "--target-dir", "s3://other/").want(t, exitUsage, "--target-dir")
	cli(t, "plan", "--pointer", ptr).want(t, exitUsage, "--to")
}
