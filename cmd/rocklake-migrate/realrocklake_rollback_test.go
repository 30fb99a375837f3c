package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
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
	bin, err := rocklake.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := s3Stack(t, 4*time.Minute)
	dir := t.TempDir()
	src := filepath.Join(dir, "catalogs", "prod")
	if err := servedCatalog(t, ctx, src).Stop(); err != nil {
		t.Fatal(err)
	}
	ptr := "s3://rocklake/CURRENT"
	cli(t, "init-pointer", "--pointer", ptr, "--catalog", "file://"+src).want(t, exitOK)
	sv := superviseRockLake(t, ctx, ptr, bin, 16, "--interval", "200ms")
	cl := rocklake.Client(sv.port)
	eventually(t, "the writer takes a write", func() error { return writeSchema(ctx, cl, "before_migration") })

	w := commitEvery(ctx, cl, 200*time.Millisecond)
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--target-dir", "file://"+filepath.Join(dir, "new")+"/",
		"--shards", "2", "--freeze-grace", "1s", "--json")
	r.want(t, exitOK)
	var fwd workflow.LocalReport
	if err := json.Unmarshal([]byte(r.stdout), &fwd); err != nil || fwd.Outcome != "rebuilt" {
		t.Fatalf("migrate report %q: %v", r.stdout, err)
	}
	eventually(t, "the writer on the new catalog", func() error { return writeSchema(ctx, cl, "after_flip") })
	time.Sleep(2 * time.Second) // commits on the new catalog
	onNew := len(w.snapshot())

	b := cli(t, "rollback", "--pointer", ptr, "--freeze-grace", "1s", "--json")
	b.want(t, exitOK)
	var back workflow.LocalReport
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
	if out, err := rocklake.Verify(ctx, src); err != nil {
		t.Fatalf("rocklake verify catalog %s after the rollback: %v\n%s", src, err, out)
	}
}
