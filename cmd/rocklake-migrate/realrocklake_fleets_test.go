package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/kvscan"
	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// A fleet of catalogs the real RockLake wrote, each behind its own pointer
// under one prefix, and one pointer whose catalog is in a format no binary
// knows: `fleet migrate --rebuild` moves the five (the real binary reads
// each the same before and after) and refuses the sixth by name; `fleet
// migrate --to v2 --canary 1 --concurrency 2` migrates the five (each
// verified), refuses the sixth, exits non-zero; a second run does nothing
// to the five and refuses the sixth again; status says where each stands;
// `fleet rollback` takes the five back (the real binary reads them as
// before); `fleet drift --expect v1` names the sixth.
func TestRealRockLakeFleetMigrateRollback(t *testing.T) {
	ctx, _ := s3Stack(t, 8*time.Minute)
	store := testenv.Store(t)
	dir := t.TempDir()
	base, data := filepath.Join(dir, "base"), filepath.Join(dir, "data")+"/"
	duckdbAnswers(t, ctx, base, data, rocklake.DuckDBWorkload)
	const n = 5
	prefix := "s3://rocklake/tenants/"
	ptrOf := func(i int) string { return fmt.Sprintf("%st%d/CURRENT", prefix, i) }
	reads := map[string]string{} // pointer → the real binary's read of its catalog
	readOf := func(catalog string) string {
		t.Helper()
		out, err := rocklake.InspectSnapshot(ctx, strings.TrimPrefix(catalog, "file://"))
		if err != nil {
			t.Fatalf("rocklake inspect snapshot %s: %v\n%s", catalog, err, out)
		}
		f := rocklake.Fields(out)
		if len(f) == 0 {
			t.Fatalf("rocklake inspect snapshot %s: no fields in %q", catalog, out)
		}
		// The writer epoch is the opener's own: inspect opens the catalog
		// as a writer, and a rebuilt catalog counts its writers afresh.
		delete(f, "Writer epoch")
		b, _ := json.Marshal(f)
		return string(b)
	}
	for i := 1; i <= n; i++ {
		cat := filepath.Join(dir, fmt.Sprintf("t%d", i))
		if out, err := exec.CommandContext(ctx, "cp", "-r", base, cat).CombinedOutput(); err != nil {
			t.Fatalf("cp: %v: %s", err, out)
		}
		addSchema(t, ctx, cat, fmt.Sprintf("tenant_%d", i)) // each tenant's own commit
		cli(t, "init-pointer", "--pointer", ptrOf(i), "--catalog", "file://"+cat).want(t, exitOK)
		reads[ptrOf(i)] = readOf(cat)
	}
	firstAnswers := duckdbAnswers(t, ctx, filepath.Join(dir, "t1"), data, nil)
	// The sixth: a catalog in format 99, behind a pointer that says 1.
	unknown := "file://" + filepath.Join(dir, "t6")
	kvscan.Put(t, unknown, format.FormatVersionKey(), format.EncodeFormatVersion(99), snapshotKey, format.EncodeEnvelope(format.V1, nil))
	if _, err := pointer.Create(ctx, store, ptrOf(6), pointer.Pointer{Catalog: unknown, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Put(ctx, prefix+"README.txt", []byte("the tenants' pointers\n")); err != nil {
		t.Fatal(err)
	}
	readersRun := func(code int, args ...string) fleet.Run {
		t.Helper()
		r := cli(t, append([]string{"fleet"}, append(args, "--pointers", prefix, "--shards", "2", "--freeze-grace", "0s", "--json")...)...)
		t.Logf("fleet %v:\n%s", args, r.stderr)
		r.want(t, code)
		var run fleet.Run
		if err := json.Unmarshal([]byte(r.stdout), &run); err != nil {
			t.Fatalf("fleet %v: %v\n%s\n%s", args, err, r.stdout, r.stderr)
		}
		if len(run.Lines) != n+1 && run.Kind == "migrate" {
			t.Fatalf("fleet %v: %d pointers, want %d: %+v", args, len(run.Lines), n+1, run.Lines)
		}
		if run.Kind == "migrate" && run.Ignored < 1 {
			t.Fatalf("fleet %v: the other object under the prefix was not counted: %d", args, run.Ignored)
		}
		return run
	}
	lineOf := func(run fleet.Run, ptr string) fleet.Line {
		for _, l := range run.Lines {
			if l.Pointer == ptr {
				return l
			}
		}
		t.Fatalf("fleet run %s has no line for %s", run.ID, ptr)
		return fleet.Line{}
	}
	refusedSixth := func(run fleet.Run) {
		t.Helper()
		if l := lineOf(run, ptrOf(6)); l.State != fleet.Refused || l.ErrorName != "FormatVersionMismatch" {
			t.Fatalf("the unknown-format pointer: %+v, want refused as FormatVersionMismatch", l)
		}
	}

	// A rebuild: each catalog moved into a new one of its format, which
	// the real binary reads as it read the old.
	rebuilt := readersRun(exitError, "migrate", "--rebuild", "--canary", "1", "--concurrency", "2")
	refusedSixth(rebuilt)
	for i := 1; i <= n; i++ {
		l := lineOf(rebuilt, ptrOf(i))
		p, _, err := pointer.Read(ctx, store, ptrOf(i))
		if err != nil || l.State != fleet.Migrated || p.Catalog != l.After || p.Catalog == l.Before || p.FormatVersion != format.V1 {
			t.Fatalf("rebuild of %s: %+v, pointer %+v (%v)", ptrOf(i), l, p, err)
		}
		if got := readOf(p.Catalog); got != reads[ptrOf(i)] {
			t.Fatalf("the real binary reads %s differently after the rebuild:\nbefore: %s\nafter:  %s", ptrOf(i), reads[ptrOf(i)], got)
		}
	}
	if p, _, _ := pointer.Read(ctx, store, ptrOf(1)); duckdbAnswers(t, ctx, strings.TrimPrefix(p.Catalog, "file://"), data, nil) != firstAnswers {
		t.Fatal("DuckDB answers differently on the rebuilt catalog")
	}
	if !lineOf(rebuilt, ptrOf(1)).Canary || strings.Count(fmt.Sprint(rebuilt.Lines), "true") < 1 {
		t.Fatalf("no canary in %+v", rebuilt.Lines)
	}

	// To v2: the five migrated and verified, the sixth refused by name.
	migrated := readersRun(exitError, "migrate", "--to", "v2", "--canary", "1", "--concurrency", "2")
	refusedSixth(migrated)
	runs := map[string]int{}
	for i := 1; i <= n; i++ {
		l := lineOf(migrated, ptrOf(i))
		p, _, err := pointer.Read(ctx, store, ptrOf(i))
		if err != nil || l.State != fleet.Migrated || p.FormatVersion != format.V2 || p.Catalog != l.After || l.RunID == "" || l.FreezeSeconds <= 0 {
			t.Fatalf("migration of %s: %+v, pointer %+v (%v)", ptrOf(i), l, p, err)
		}
		cli(t, "check", "--catalog", p.Catalog, "--expect", "v2").want(t, exitOK)
		recs, err := store.List(ctx, layout.HistoryDir(ptrOf(i)))
		if err != nil {
			t.Fatal(err)
		}
		runs[ptrOf(i)] = len(recs)
	}
	if migrated.Totals[fleet.Migrated] != n || migrated.Totals[fleet.Refused] != 1 {
		t.Fatalf("totals %v", migrated.Totals)
	}

	// Again: nothing to do for the five (no run, no record), the sixth
	// refused again.
	again := readersRun(exitError, "migrate", "--to", "v2", "--canary", "1", "--concurrency", "2")
	refusedSixth(again)
	for i := 1; i <= n; i++ {
		if l := lineOf(again, ptrOf(i)); l.State != fleet.AtTarget || l.RunID != "" {
			t.Fatalf("the second run touched %s: %+v", ptrOf(i), l)
		}
		if recs, _ := store.List(ctx, layout.HistoryDir(ptrOf(i))); len(recs) != runs[ptrOf(i)] {
			t.Fatalf("the second run recorded a run of %s", ptrOf(i))
		}
	}
	r := cli(t, "fleet", "status", "--pointers", prefix, "--json")
	r.want(t, exitOK)
	var st fleet.Status
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.AtFormat[format.V2] != n || st.AtFormat[format.V1] != 1 || st.Run == nil || st.Run.ID != again.ID {
		t.Fatalf("fleet status: %+v (%v)", st, err)
	}
	cli(t, "fleet", "status", "--pointers", prefix).want(t, exitOK)

	// Rollback of the run that migrated them: each pointer names its
	// format-1 catalog again, read as before by the real binary.
	back := readersRun(exitOK, "rollback", "--concurrency", "2")
	if back.RollbackOf != migrated.ID || back.Totals[fleet.RolledBack] != n {
		t.Fatalf("fleet rollback: of %s, %v; want the five of %s rolled back", back.RollbackOf, back.Totals, migrated.ID)
	}
	for i := 1; i <= n; i++ {
		p, _, err := pointer.Read(ctx, store, ptrOf(i))
		if err != nil || p.FormatVersion != format.V1 || p.Catalog != lineOf(migrated, ptrOf(i)).Before {
			t.Fatalf("after the fleet rollback %s names %+v (%v)", ptrOf(i), p, err)
		}
		if got := readOf(p.Catalog); got != reads[ptrOf(i)] {
			t.Fatalf("the real binary reads %s differently after the rollback:\nbefore: %s\nafter:  %s", ptrOf(i), reads[ptrOf(i)], got)
		}
	}

	// Drift against v1: the sixth, by name, in one report; exit 4.
	r = cli(t, "fleet", "drift", "--pointers", prefix, "--expect", "v1", "--json")
	r.want(t, exitDrift)
	var dr fleet.DriftReport
	if err := json.Unmarshal([]byte(r.stdout), &dr); err != nil || len(dr.Pointers) != n+1 {
		t.Fatalf("fleet drift: %+v (%v)", dr, err)
	}
	for _, l := range dr.Pointers {
		if (l.Pointer == ptrOf(6)) == l.Healthy {
			t.Fatalf("fleet drift: %s healthy=%v: %+v", l.Pointer, l.Healthy, l)
		}
	}
}
