package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// fleetOf seeds a catalog behind each named pointer under prefix (a
// missing one for names in gone: its pointer names a catalog that is not
// there) and returns the pointers' URLs by name.
func fleetOf(t *testing.T, prefix string, names []string, gone map[string]bool) map[string]string {
	t.Helper()
	ctx := testenv.Context(t)
	store := testenv.Store(t)
	dir := t.TempDir()
	out := map[string]string{}
	for _, n := range names {
		cat, ptr := "file://"+filepath.Join(dir, n), prefix+n+"/CURRENT"
		out[n] = ptr
		if gone[n] {
			if _, err := pointer.Create(ctx, store, ptr, pointer.Pointer{Catalog: cat, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		cli(t, "seed", "--catalog", cat, "--rows", "300").want(t, exitOK)
		cli(t, "init-pointer", "--pointer", ptr, "--catalog", cat).want(t, exitOK)
	}
	return out
}

// fleetJSON runs a fleet command with --json and decodes its output.
func fleetJSON[T any](t *testing.T, code int, args ...string) T {
	t.Helper()
	r := cli(t, append(append([]string{"fleet"}, args...), "--json")...)
	r.want(t, code)
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("fleet %v: %v\n%s\n%s", args, err, r.stdout, r.stderr)
	}
	return v
}

func states(run fleet.Run) map[string]fleet.State {
	m := map[string]fleet.State{}
	for _, l := range run.Lines {
		m[l.Pointer] = l.State
	}
	return m
}

func formatOf(t *testing.T, ptr string) format.Version {
	t.Helper()
	p, _, err := pointer.Read(testenv.Context(t), testenv.Store(t), ptr)
	if err != nil {
		t.Fatal(err)
	}
	return p.FormatVersion
}

// The canary and the failure limit: a canary that fails (here its catalog
// is gone: refused at Check, NoCatalog) stops the fleet run before any
// other pointer starts; --max-failures 1 starts no more after the first
// failure; without a limit every other pointer migrates and the failure is
// named; a second run does nothing to the migrated ones.
func TestFleetCanaryAndFailureLimit(t *testing.T) {
	s3Stack(t, 6*time.Minute)
	prefix := "s3://rocklake/tenants/"
	p := fleetOf(t, prefix, []string{"a-gone", "b", "c"}, map[string]bool{"a-gone": true})
	common := []string{"--pointers", prefix, "--to", "v2", "--shards", "2", "--freeze-grace", "0s", "--offline"}

	run := fleetJSON[fleet.Run](t, exitError, append([]string{"migrate", "--canary", "1"}, common...)...)
	if st := states(run); st[p["a-gone"]] != fleet.Refused || st[p["b"]] != fleet.Skipped || st[p["c"]] != fleet.Skipped || run.Stopped == "" {
		t.Fatalf("a failed canary: %v, stopped %q; want the others not started", st, run.Stopped)
	}
	if l := run.Lines[0]; !l.Canary || l.ErrorName != "NoCatalog" {
		t.Fatalf("the canary's line %+v: want it named, NoCatalog", l)
	}
	if formatOf(t, p["b"]) != format.V1 || formatOf(t, p["c"]) != format.V1 {
		t.Fatal("a pointer moved after the canary failed")
	}

	run = fleetJSON[fleet.Run](t, exitError, append([]string{"migrate", "--canary", "0", "--concurrency", "1", "--max-failures", "1"}, common...)...)
	if st := states(run); st[p["a-gone"]] != fleet.Refused || st[p["b"]] != fleet.Skipped || st[p["c"]] != fleet.Skipped {
		t.Fatalf("--max-failures 1 after one failure: %v; want no more started", st)
	}

	run = fleetJSON[fleet.Run](t, exitError, append([]string{"migrate", "--canary", "0", "--concurrency", "2"}, common...)...)
	if st := states(run); st[p["a-gone"]] != fleet.Refused || st[p["b"]] != fleet.Migrated || st[p["c"]] != fleet.Migrated {
		t.Fatalf("no failure limit: %v; want b and c migrated, a named", st)
	}
	if formatOf(t, p["b"]) != format.V2 || formatOf(t, p["c"]) != format.V2 {
		t.Fatal("the pointers of b and c do not say format 2")
	}
	again := fleetJSON[fleet.Run](t, exitError, append([]string{"migrate", "--canary", "1"}, common...)...)
	if st := states(again); st[p["a-gone"]] != fleet.Refused || st[p["b"]] != fleet.AtTarget || st[p["c"]] != fleet.AtTarget {
		t.Fatalf("the second run: %v; want b and c left alone", st)
	}
	// The canary of the second run is the refused pointer (b and c need
	// nothing): it stopped nothing else, there was nothing else.
	if again.Totals[fleet.Skipped] != 0 {
		t.Fatalf("the second run skipped %d", again.Totals[fleet.Skipped])
	}
}

// A fleet from lists, in two buckets: each listed URL is a member, one
// that is not a pointer is named (refused, its error's name), and plan
// reads every member without writing: the refused one, and the estimate
// of the others' runs.
func TestFleetFromListsInTwoBuckets(t *testing.T) {
	ctx, s := s3Stack(t, 4*time.Minute)
	if err := s.CreateBucket(ctx, "other", true); err != nil {
		t.Fatal(err)
	}
	store := testenv.Store(t)
	a := fleetOf(t, "s3://rocklake/t/", []string{"a"}, nil)
	b := fleetOf(t, "s3://other/t/", []string{"b"}, nil)
	list := fmt.Sprintf("# the fleet\n%s\n\n%s  # in the other bucket\ns3://rocklake/t/nope/CURRENT\n", a["a"], b["b"])
	if _, err := store.Put(ctx, "s3://rocklake/fleet.txt", []byte(list)); err != nil {
		t.Fatal(err)
	}
	plan := fleetJSON[operator.FleetPlan](t, exitOK, "plan", "--pointers", "s3://rocklake/fleet.txt", "--to", "v2", "--concurrency", "2")
	if len(plan.Pointers) != 3 || plan.ToMigrate != 2 || plan.Refused != 1 || plan.Seconds <= 0 {
		t.Fatalf("fleet plan: %+v", plan)
	}
	run := fleetJSON[fleet.Run](t, exitError, "migrate", "--pointers", "s3://rocklake/fleet.txt", "--to", "v2", "--shards", "2", "--freeze-grace", "0s", "--canary", "1")
	st := states(run)
	if st[a["a"]] != fleet.Migrated || st[b["b"]] != fleet.Migrated || st["s3://rocklake/t/nope/CURRENT"] != fleet.Refused {
		t.Fatalf("fleet from a list: %v", st)
	}
	for _, l := range run.Lines {
		if l.Pointer == "s3://rocklake/t/nope/CURRENT" && l.ErrorName == "" {
			t.Fatalf("the missing pointer is not named by its error: %+v", l)
		}
	}
	if formatOf(t, b["b"]) != format.V2 {
		t.Fatal("the pointer in the other bucket did not move")
	}
	// Without --json: each pointer's run said on stderr as it starts and
	// ends, once each, and the record as a table.
	r := cli(t, "fleet", "rollback", "--pointers", "s3://rocklake/fleet.txt", "--freeze-grace", "0s")
	r.want(t, exitOK)
	if strings.Count(r.stderr, ": rollback started") != 2 || strings.Count(r.stderr, ": rollback ended") != 2 ||
		!strings.Contains(r.stdout, "2 pointers: 2 rolled-back") {
		t.Fatalf("fleet rollback's progress and table:\n%s\n%s", r.stderr, r.stdout)
	}
}
