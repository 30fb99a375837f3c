package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
)

// The gated cut-over from the CLI: migrate --postpone-flip exits 0 at the
// gate with the pointer unchanged and the lock held, says how to approve
// or abort (on the terminal and in one SNS message); approve flips; abort
// of a second postponed run cleans up; both refuse what is not at the gate.
func TestPostponedFlipApproveAndAbort(t *testing.T) {
	s3Stack(t, 3*time.Minute)
	sns := snsserver.Start(t)
	sns.SetEnv(t)
	topic := sns.CreateTopic(t, "rocklake-alerts")
	src, ptr := seededS3Pointer(t, 500)

	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--dry-run", "--postpone-flip").want(t, exitUsage, "exclude each other")
	postpone := func() localrun.Report {
		t.Helper()
		r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--postpone-flip", "--sns-topic", topic, "--json")
		r.want(t, exitOK)
		var rep localrun.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("migrate --postpone-flip --json: %q: %v", r.stdout, err)
		}
		if rep.Gate == nil || !strings.Contains(rep.Outcome, "gate") || rep.PointerVersionID != "" || rep.Counts["ducklake_data_file"] == 0 ||
			!strings.Contains(rep.GateHow, "rocklake-migrate approve "+rep.MigrationID+" --pointer "+ptr) {
			t.Fatalf("report at the gate: %+v", rep)
		}
		return rep
	}
	rep := postpone()
	st := cli(t, "status", "--pointer", ptr)
	st.want(t, exitOK)
	if !strings.Contains(st.stdout, "catalog "+src+", format v1") {
		t.Fatalf("the pointer moved at the gate: %s", st.stdout)
	}
	cli(t, "check", "--catalog", rep.Target, "--expect", "v2").want(t, exitOK)
	// The lock is held: another migration is refused before it touches anything.
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2").want(t, exitError, "MigrationInProgress", rep.MigrationID)
	msgs := sns.Messages(t, topic)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Body, "rocklake-migrate approve "+rep.MigrationID) || !strings.Contains(msgs[0].Body, "rocklake-migrate abort "+rep.MigrationID) {
		t.Fatalf("the gate's message: %+v", msgs)
	}

	cli(t, "approve", "m-unknown", "--pointer", ptr).want(t, exitError, "NotAtGate")
	cli(t, "approve", rep.MigrationID).want(t, exitUsage, "--pointer")
	r := cli(t, "approve", rep.MigrationID, "--pointer", ptr)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "approved") || !strings.Contains(r.stderr, "→ Flip") {
		t.Fatalf("approve: %s\n%s", r.stdout, r.stderr)
	}
	if st := cli(t, "status", "--pointer", ptr); !strings.Contains(st.stdout, "catalog "+rep.Target+", format v2") {
		t.Fatalf("the pointer after approve: %s", st.stdout)
	}
	cli(t, "approve", rep.MigrationID, "--pointer", ptr).want(t, exitError, "MigrationDecided", "approved")
	cli(t, "abort", rep.MigrationID, "--pointer", ptr).want(t, exitError, "MigrationDecided")

	// Back to v1, postpone again, and abort.
	cli(t, "rollback", "--pointer", ptr).want(t, exitOK)
	rep = postpone()
	r = cli(t, "abort", rep.MigrationID, "--pointer", ptr)
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "aborted at the gate") {
		t.Fatalf("abort: %s", r.stdout)
	}
	cli(t, "check", "--catalog", rep.Target).want(t, exitError)
	if st := cli(t, "status", "--pointer", ptr); !strings.Contains(st.stdout, "catalog "+src+", format v1") {
		t.Fatalf("the pointer after abort: %s", st.stdout)
	}
	cli(t, "approve", rep.MigrationID, "--pointer", ptr).want(t, exitError, "MigrationDecided", "aborted")
	// The lock is free: the next migration runs through.
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2").want(t, exitOK)
}
