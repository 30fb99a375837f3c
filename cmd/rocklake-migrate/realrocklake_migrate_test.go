package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
)

// The workflow, on a catalog the real RockLake wrote, held against the real
// RockLake: after a dry run and after an aborted run the source opens and
// takes writes; after migrate --to v2 RockLake refuses the new catalog with
// FormatVersionMismatch (SQLSTATE 0A000); after rollback it serves the old one,
// takes writes, and DuckDB's queries answer as before.
func TestRealRockLakeMigrateRollback(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	src, data := filepath.Join(dir, "catalogs", "prod"), filepath.Join(dir, "data")+"/"
	baseline := duckdbAnswers(t, ctx, src, data, rocklake.DuckDBWorkload)
	// servesAndWrites: RockLake opens dir, serves it and commits a schema.
	servesAndWrites := func(dir, schema string) {
		t.Helper()
		addSchema(t, ctx, dir, schema)
		rocklakeVerify(t, ctx, dir)
	}
	ptr := pointAt(t, src)

	// A dry run (which fences nothing) verifies, and leaves the source a
	// catalog RockLake opens and writes.
	var rep localrun.Report
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--dry-run", "--json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "dry run verified" && !strings.Contains(rep.Outcome, "dry") {
		t.Fatalf("dry run report %q: %v", r.stdout, err)
	}
	servesAndWrites(src, "after_dry_run")

	// A run refused before anything is touched (its target occupied:
	// TargetNotEmpty at Check) leaves the same.
	occupied := filepath.Join(dir, "catalogs", "v2-m-occupied")
	cli(t, "seed", "--catalog", "file://"+occupied, "--rows", "10").want(t, exitOK)
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--migration-id", "m-occupied").want(t, exitError, "TargetNotEmpty")
	servesAndWrites(src, "after_refusal")

	// An aborted offline run (interrupted at Import, after Freeze fenced
	// and checkpointed the source: Abort runs) leaves the same.
	runCtx, interrupt := context.WithCancel(ctx)
	stderr := &cancelOn{state: "Import", cancel: interrupt}
	var stdout bytes.Buffer
	if code := run(runCtx, &env{stdout: &stdout, stderr: stderr}, []string{"migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--offline"}); code == exitOK ||
		!strings.Contains(stderr.buf.String(), "cleaned up after the interruption") {
		t.Fatalf("interrupted migrate: exit %d\n%s", code, stderr.buf.String())
	}
	interrupt()
	servesAndWrites(src, "after_abort")

	// The real run (online, the default): RockLake refuses the format-2
	// catalog.
	r = cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--json")
	r.want(t, exitOK)
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Outcome != "migrated" {
		t.Fatalf("migrate report %q: %v", r.stdout, err)
	}
	if rep.Online == nil || len(rep.Online.Rounds) < 3 || rep.Online.Offline != "" {
		t.Fatalf("migrate without --offline: online report %+v, want an online run's rounds", rep.Online)
	}
	target := strings.TrimPrefix(rep.Target, "file://")
	if srv, err := rocklake.Serve(ctx, target); err == nil {
		srv.Stop()
		t.Fatalf("rocklake served the format-2 catalog %s", target)
	} else if !strings.Contains(err.Error(), "0A000") && !strings.Contains(err.Error(), "FormatVersionMismatch") && !strings.Contains(err.Error(), "format version") {
		t.Fatalf("rocklake's refusal of the format-2 catalog names no format version mismatch: %v", err)
	}

	// Rollback: the pointer names the source again, which RockLake serves.
	cli(t, "rollback", "--pointer", ptr).want(t, exitOK)
	cli(t, "check", "--catalog", "file://"+src, "--expect", "v1").want(t, exitOK)
	servesAndWrites(src, "after_rollback")
	if got := duckdbAnswers(t, ctx, src, data, nil); got != baseline {
		t.Fatalf("DuckDB answers differ after the rollback:\nbefore: %s\nafter:  %s", baseline, got)
	}
}
