package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The way back with the servers serving: `rocklake-migrate serve` runs the
// real RockLake on the pointer's catalog while a client commits through it
// every 200 ms; `migrate --rebuild` flips to a new catalog, the client
// commits there, then a plain `rollback` carries those commits back into
// the previous catalog in rounds while the writer goes on, fences the new
// catalog only for the last round, and flips back; the supervisor follows
// both flips. Every commit acknowledged before, during and after both runs
// is in the catalog the pointer names at the end, which RockLake serves and
// verifies.
func TestRealRockLakeServeRollbackKeepsEveryCommit(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	ptr, src, sv, cl := servedPointer(t, ctx, dir)

	w := commitEvery(ctx, cl, 200*time.Millisecond)
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "new")+"/",
		"--shards", "2", "--freeze-grace", "20s", "--json")
	r.want(t, exitOK)
	var fwd localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &fwd); err != nil || fwd.Outcome != "rebuilt" {
		t.Fatalf("migrate report %q: %v", r.stdout, err)
	}
	eventually(t, "the writer on the new catalog", func() error { return writeSchema(ctx, cl, "after_flip") })
	time.Sleep(2 * time.Second) // commits on the new catalog
	onNew := len(w.snapshot())

	b := cli(t, "rollback", "--pointer", ptr, "--freeze-grace", "20s", "--json")
	b.want(t, exitOK)
	var back localrun.Report
	if err := json.Unmarshal([]byte(b.stdout), &back); err != nil || back.Outcome != "rolled back" || back.RollbackOf != fwd.MigrationID || back.Online == nil {
		t.Fatalf("rollback report %q: %v", b.stdout, err)
	}
	eventually(t, "the writer on the previous catalog", func() error { return writeSchema(ctx, cl, "after_rollback") })
	time.Sleep(time.Second)
	acked, refused := w.halt()
	t.Logf("%d commits acknowledged (%d before the rollback), %d refused; the rollback carried %d keys in %d rounds, write freeze %.2f s, longest outage the client saw %s",
		len(acked), onNew, refused, back.CarriedKeys, len(back.Online.Rounds), back.Online.FreezeSeconds, w.longestOutage().Round(time.Millisecond))
	if back.CarriedKeys == 0 || len(acked) <= onNew {
		t.Fatalf("the rollback carried %d keys; %d commits acknowledged, %d before it: the writes did not go on through it", back.CarriedKeys, len(acked), onNew)
	}
	if err := allCommitted(ctx, cl, append(acked, "before_migration", "after_flip", "after_rollback")); err != nil {
		t.Fatalf("the catalog served after the rollback: %v", err)
	}
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := pointer.Read(ctx, store, ptr)
	if err != nil || p.Catalog != "file://"+src || p.RolledBack == nil || p.RolledBack.Of != fwd.MigrationID {
		t.Fatalf("pointer after the rollback %+v: %v", p, err)
	}
	if !strings.Contains(sv.errOut.String(), "mode=writer catalog=file://"+src) {
		t.Fatalf("the supervisor's health lines do not name the writer back on %s:\n%s", src, sv.errOut.String())
	}
	if code := sv.stop(); code != exitOK {
		t.Logf("serve stopped: %d", code)
	}
	rocklakeVerify(t, ctx, src)
}

// The rollback of a format change: a catalog the real RockLake wrote,
// migrated to format 2; then a commit on the format-2 catalog by a format-2
// writer (the project's own writer standing in for a RockLake release that
// serves format 2: the very keys RockLake v0.47.11 writes for that commit
// on a copy of the format-1 catalog, migrated to format 2); then a plain
// `rollback`. The previous catalog has the commit in format 1, and the
// real RockLake verifies it and serves it.
func TestRealRockLakeRollbackOfAFormatChange(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	ptr, src := pointedCatalog(t, ctx, dir)
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--json")
	r.want(t, exitOK)
	var fwd localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &fwd); err != nil || fwd.To != format.V2 {
		t.Fatalf("migrate --to v2 report %q: %v", r.stdout, err)
	}

	clone := filepath.Join(dir, "clone")
	if err := os.CopyFS(clone, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	before := kvscan.Dump(t, "file://"+clone)
	addSchema(t, ctx, clone, "written_as_v2")
	after := kvscan.Dump(t, "file://"+clone)
	writeAsV2(t, ctx, fwd.Target, before, after)

	back := cli(t, "rollback", "--pointer", ptr, "--json")
	back.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(back.stdout), &rep); err != nil || rep.Outcome != "rolled back" || rep.Target != "file://"+src || rep.To != format.V1 || rep.CarriedKeys == 0 {
		t.Fatalf("rollback report %q: %v", back.stdout, err)
	}
	// The previous catalog holds the commit as RockLake wrote it on the
	// copy, but for its snapshot's time, which format 2 keeps to the
	// microsecond.
	got := kvscan.Dump(t, "file://"+src)
	for k, v := range after {
		if got[k] != v && format.Tag(k[0]) != format.TagSnapshot {
			t.Fatalf("key %x: the previous catalog holds %x, RockLake wrote %x", k, got[k], v)
		}
	}
	rocklakeVerify(t, ctx, src)
	servesEveryCommit(t, ctx, src, "the previous catalog after the rollback", []string{"written_as_v2"})
}

// writeAsV2 writes into the format-2 catalog at url the change between two
// reads of a format-1 catalog, migrated to format 2: what a format-2
// writer would commit for the same statement.
func writeAsV2(t *testing.T, ctx context.Context, url string, before, after map[string]string) {
	t.Helper()
	path, err := migration.Path(format.V1, format.V2)
	if err != nil {
		t.Fatal(err)
	}
	v2 := func(k, v string) []ndjson.Record {
		rec, err := ndjson.NewRecord(format.V1, []byte(k), []byte(v))
		if err != nil {
			t.Fatal(err)
		}
		out, err := migration.Records(rec, path, migration.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	var b slatedb.Batch
	for k, v := range after {
		if before[k] != v {
			for _, r := range v2(k, v) {
				b.Put(r.Raw())
			}
		}
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			for _, r := range v2(k, v) {
				key, _ := r.Raw()
				b.Delete(key)
			}
		}
	}
	if b.Len() == 0 {
		t.Fatal("the commit changed no key")
	}
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// The way down as a migration of its own: a catalog the real RockLake
// wrote, migrated to format 2 and then `migrate --to v1` into a fresh
// catalog, is the catalog RockLake wrote key for key (but for its
// snapshots' times, which format 2 keeps to the microsecond), and RockLake
// verifies it and serves the same schemas.
func TestRealRockLakeMigrateDown(t *testing.T) {
	ctx, _ := s3Stack(t, 4*time.Minute)
	ptr, src := pointedCatalog(t, ctx, t.TempDir())
	orig := kvscan.Dump(t, "file://"+src)
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2").want(t, exitOK)
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v1", "--shards", "3", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.From != format.V2 || rep.To != format.V1 || rep.Outcome != "migrated" {
		t.Fatalf("migrate --to v1 report %q: %v", r.stdout, err)
	}
	down := kvscan.Dump(t, rep.Target)
	if len(down) != len(orig) {
		t.Fatalf("v1→v2→v1: %d keys, RockLake wrote %d", len(down), len(orig))
	}
	times := 0
	for k, v := range orig {
		switch {
		case down[k] == v:
		case format.Tag(k[0]) == format.TagSnapshot:
			times++
		default:
			t.Fatalf("v1→v2→v1: key %x holds %x, RockLake wrote %x", k, down[k], v)
		}
	}
	t.Logf("%d keys, %d snapshot rows whose time had digits below a microsecond", len(orig), times)
	target := strings.TrimPrefix(rep.Target, "file://")
	rocklakeVerify(t, ctx, target)
	want := servedSchemas(t, ctx, src)
	if got := servedSchemas(t, ctx, target); got != want {
		t.Fatalf("schemas served from the catalog migrated down: %s, want %s", got, want)
	}
}

func servedSchemas(t *testing.T, ctx context.Context, dir string) string {
	t.Helper()
	srv, err := rocklake.Serve(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	s, err := schemas(ctx, srv)
	if err != nil {
		t.Fatalf("%v\n%s", err, srv.Logs())
	}
	return s
}
