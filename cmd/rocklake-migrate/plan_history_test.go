package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/operator"

	"github.com/rocklake/rocklake-migrate/pkg/history"
)

// The operator's view: plan (read-only, human and JSON), then a dry run, a
// migration and a rollback, each in history newest first with its trigger,
// and status with nothing in progress.
func TestPlanHistoryStatus(t *testing.T) {
	ctx, s := s3Stack(t, 2*time.Minute)
	_, ptr := seededS3Pointer(t, 2000)

	before, err := s.Objects(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := cli(t, "plan", "--pointer", ptr, "--to", "v2", "--shards", "4", "--json")
	r.want(t, exitOK)
	var rep operator.PlanReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("plan --json: %q: %v", r.stdout, err)
	}
	if !rep.Ready || len(rep.Shards) != 4 || rep.Estimate == nil || rep.Estimate.TotalUSD <= 0 || !rep.Online || rep.Estimate.Seconds["VerifyCatchUp"] <= 0 {
		t.Fatalf("plan: %+v", rep)
	}
	h := cli(t, "plan", "--pointer", ptr, "--to", "v2", "--shards", "4", "--migration-id", "m-planned")
	h.want(t, exitOK)
	for _, want := range []string{"nothing was written", "ok   pointer-versioning", "balanced by bytes", "estimated AWS cost", "--migration-id m-planned", "estimated write freeze", "online: from the fence after the copy"} {
		if !strings.Contains(h.stdout, want) {
			t.Fatalf("plan does not say %q:\n%s", want, h.stdout)
		}
	}
	// Offline, the freeze is the whole run after the fence, and the ready
	// line says --offline.
	var off operator.PlanReport
	o := cli(t, "plan", "--pointer", ptr, "--to", "v2", "--shards", "4", "--offline", "--json")
	o.want(t, exitOK)
	if err := json.Unmarshal([]byte(o.stdout), &off); err != nil || off.Online || off.Estimate == nil || off.Estimate.WriteFreezeSeconds <= rep.Estimate.WriteFreezeSeconds {
		t.Fatalf("plan --offline: %+v, %v; online freeze %v", off, err, rep.Estimate)
	}
	if o := cli(t, "plan", "--pointer", ptr, "--to", "v2", "--offline"); !strings.Contains(o.stdout, "offline: from the fence before the copy") || !strings.Contains(o.stdout, " --offline") {
		t.Fatalf("plan --offline:\n%s", o.stdout)
	}
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--online", "--offline").want(t, exitUsage, "exclude each other")
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--online", "--in-place").want(t, exitUsage, "choose one")
	if after, err := s.Objects(ctx); err != nil || strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("plan wrote something: %v", err)
	}

	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--dry-run").want(t, exitOK)
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--migration-id", "m-planned").want(t, exitOK)
	cli(t, "rollback", "--pointer", ptr).want(t, exitOK)

	r = cli(t, "history", "--pointer", ptr, "--json")
	r.want(t, exitOK)
	var runs []history.Entry
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil {
		t.Fatalf("history --json: %q: %v", r.stdout, err)
	}
	var got []string
	for _, e := range runs {
		got = append(got, string(e.Kind)+" "+string(e.Outcome))
		if !strings.HasPrefix(e.Trigger, "cli:") {
			t.Errorf("run %s: trigger %q", e.ID, e.Trigger)
		}
	}
	if strings.Join(got, ", ") != "rollback succeeded, migrate succeeded, dry-run dry-run-ok" || runs[1].ID != "m-planned" {
		t.Fatalf("history: %v (%s)", got, r.stdout)
	}
	h = cli(t, "history", "--pointer", ptr, "--limit", "1")
	h.want(t, exitOK)
	if !strings.Contains(h.stdout, "rollback") || strings.Contains(h.stdout, "dry-run") {
		t.Fatalf("history --limit 1:\n%s", h.stdout)
	}
	cli(t, "history", "--pointer", ptr, "--limit", "-1").want(t, exitUsage)
	st := cli(t, "status", "--pointer", ptr)
	st.want(t, exitOK)
	if !strings.Contains(st.stdout, "no migration in progress") {
		t.Fatalf("status:\n%s", st.stdout)
	}
	// A format this binary does not know is a usage error, before any I/O.
	cli(t, "plan", "--pointer", ptr, "--to", "v9").want(t, exitUsage, "unsupported")
}
