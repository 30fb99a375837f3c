package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// A fleet run while every catalog is served: two catalogs the real
// RockLake wrote, each behind its pointer under one prefix, each under its
// own `serve` with a client committing through it every 200 ms. `fleet
// migrate --rebuild --concurrency 2` moves both (each supervisor follows
// its own pointer), `fleet rollback` takes both back (carrying what was
// committed since); every commit each client had acknowledged is in the
// catalog its pointer names at the end, which RockLake serves.
func TestRealRockLakeFleetUnderServe(t *testing.T) {
	ctx, _ := s3Stack(t, 6*time.Minute)
	type tenant struct {
		ptr, src string
		cl       *rocklake.Server
		w        *committer
	}
	var tenants []*tenant
	dir := t.TempDir()
	for _, name := range []string{"a", "b"} {
		tn := &tenant{ptr: "s3://rocklake/tenants/" + name + "/CURRENT", src: filepath.Join(dir, name, "catalogs", "prod")}
		if err := servedCatalog(t, ctx, tn.src).Stop(); err != nil {
			t.Fatal(err)
		}
		cli(t, "init-pointer", "--pointer", tn.ptr, "--catalog", "file://"+tn.src).want(t, exitOK)
		_, tn.cl = servedWriter(t, ctx, tn.ptr, "before_fleet")
		tn.w = commitEvery(ctx, tn.cl, 200*time.Millisecond)
		tenants = append(tenants, tn)
	}
	fleetRun := func(args ...string) fleet.Run {
		t.Helper()
		r := cli(t, append([]string{"fleet"}, append(args, "--pointers", "s3://rocklake/tenants/", "--concurrency", "2", "--freeze-grace", "20s", "--json")...)...)
		r.want(t, exitOK)
		var run fleet.Run
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
			t.Fatalf("fleet %v: %v\n%s", args, err, r.stdout)
		}
		return run
	}
	moved := fleetRun("migrate", "--rebuild", "--shards", "2")
	if moved.Totals[fleet.Migrated] != len(tenants) {
		t.Fatalf("fleet migrate --rebuild: %v", moved.Totals)
	}
	for _, tn := range tenants {
		eventually(t, "the writer on the new catalog of "+tn.ptr, func() error { return writeSchema(ctx, tn.cl, "after_flip") })
	}
	time.Sleep(time.Second) // commits on the new catalogs
	back := fleetRun("rollback")
	if back.Totals[fleet.RolledBack] != len(tenants) || back.RollbackOf != moved.ID {
		t.Fatalf("fleet rollback: %v of %s, want both of %s", back.Totals, back.RollbackOf, moved.ID)
	}
	store := testenv.Store(t)
	for _, tn := range tenants {
		eventually(t, "the writer on the previous catalog of "+tn.ptr, func() error { return writeSchema(ctx, tn.cl, "after_rollback") })
		time.Sleep(500 * time.Millisecond)
		acked, refused := tn.w.halt()
		t.Logf("%s: %d commits acknowledged, %d refused, longest outage %s", tn.ptr, len(acked), refused, tn.w.longestOutage().Round(time.Millisecond))
		if err := allCommitted(ctx, tn.cl, append(acked, "before_fleet", "after_flip", "after_rollback")); err != nil {
			t.Fatalf("%s after the fleet rollback: %v", tn.ptr, err)
		}
		if p, _, err := pointer.Read(ctx, store, tn.ptr); err != nil || p.Catalog != "file://"+tn.src {
			t.Fatalf("%s names %+v (%v), want %s again", tn.ptr, p, err, tn.src)
		}
	}
}
