package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/progress"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// The operator's loop: migrate behind a pointer, status, rollback, drift with
// one SNS alert.
func TestMigrateRollbackDrift(t *testing.T) {
	s3server.StartWith(t, map[string]bool{"rocklake": true, "plain": false})
	sns := snsserver.Start(t)
	sns.SetEnv(t)
	topic := sns.CreateTopic(t, "rocklake-alerts")

	src, ptr := "s3://rocklake/catalogs/prod", "s3://rocklake/CURRENT"
	cli(t, "seed", "--catalog", src, "--rows", "1500").want(t, exitOK)
	cli(t, "init-pointer", "--pointer", "s3://plain/CURRENT", "--catalog", src).want(t, exitError, "PointerUnversioned")
	cli(t, "init-pointer", "--pointer", ptr, "--catalog", src).want(t, exitOK)
	cli(t, "drift", "--pointer", ptr, "--expect", "v1").want(t, exitOK)

	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "3", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("migrate --json: %q: %v", r.stdout, err)
	}
	if rep.Outcome != "migrated" || rep.PointerVersionID == "" || rep.Counts["ducklake_data_file"] == 0 || rep.StateSeconds["Verify"] == 0 {
		t.Fatalf("report = %+v", rep)
	}
	migrateEvents(t, r.stderr)
	cli(t, "check", "--catalog", rep.Target, "--expect", "v2").want(t, exitOK)
	st := cli(t, "status", "--pointer", ptr)
	st.want(t, exitOK)
	if !strings.Contains(st.stdout, rep.Target) || !strings.Contains(st.stdout, "startup check: ok") {
		t.Fatalf("status = %s", st.stdout)
	}
	// Nothing more to do at v2.
	r = cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--json")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "nothing to do") {
		t.Fatalf("second migrate: %s", r.stdout)
	}

	rb := cli(t, "rollback", "--pointer", ptr)
	rb.want(t, exitOK)
	if !strings.Contains(rb.stdout, src) {
		t.Fatalf("rollback = %s", rb.stdout)
	}
	cli(t, "check", "--catalog", src, "--expect", "v1").want(t, exitOK)

	// The release expects v2 but the pointer is back on v1: drift, one alert.
	d := cli(t, "drift", "--pointer", ptr, "--expect", "v2", "--sns-topic", topic, "--json")
	d.want(t, exitDrift)
	// Only that: the rolled-back run's staging is its audit trail, and its
	// target was named by the pointer, so neither is a leftover.
	if got := driftKinds(t, d); !slices.Equal(got, []drift.Kind{drift.KindVersionMismatch}) {
		t.Fatalf("drift after the rollback: %v\n%s", got, d.stdout)
	}
	msgs := sns.Messages(t, topic)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Body, "VersionMismatch") {
		t.Fatalf("SNS messages = %+v", msgs)
	}
}

// A stray word is a usage error (exit 2) for every command, before anything
// is touched: `migrate --pointer P --to v2 now --dry-run` once stopped
// parsing at "now" and flipped production without --dry-run.
func TestStrayArgumentsRefused(t *testing.T) {
	r := cli(t, "migrate", "--pointer", "s3://nowhere/CURRENT", "--to", "v2", "now", "--dry-run")
	r.want(t, exitUsage, "takes no arguments", `"now"`)
	for _, c := range newRoot(&env{}).Commands() {
		switch name := c.Name(); name {
		case "kv", "help", "completion":
			continue // kv: subcommands, below; help and completion take command and shell names
		case "approve", "abort":
			cli(t, name, "m-1", "stray").want(t, exitUsage, "stray") // MIGRATION-ID, then a stray word
		default:
			cli(t, name, "stray").want(t, exitUsage, "stray")
		}
	}
	for _, sub := range [][]string{{"kv", "scan", "x"}, {"kv", "get", "00", "11"}, {"kv", "put", "00"}, {"kv", "delete", "00", "11"},
		{"fleet", "plan", "x"}, {"fleet", "migrate", "x"}, {"fleet", "rollback", "x"}, {"fleet", "status", "x"}, {"fleet", "drift", "x"}} {
		cli(t, sub...).want(t, exitUsage)
	}
	// Flags after arguments are flags; after "--", arguments.
	dir := t.TempDir()
	url := "file://" + dir + "/c"
	cli(t, "seed", "--catalog", url, "--rows", "10").want(t, exitOK)
	cli(t, "kv", "get", "ff636174616c6f672d666f726d61742d76657273696f6e", "--catalog", url).want(t, exitOK)
	cli(t, "kv", "get", "--catalog", url, "--", "--force").want(t, exitUsage, "KEY")
}

// The outcome of a run is what happened to the pointer: a flip whose success
// message cannot be sent is still "migrated" (exit 0), the failed message is
// a warning, and every report, a failed run's too, names the migration.
func TestOutcomeIsThePointers(t *testing.T) {
	s3Stack(t, time.Minute)
	sns := snsserver.Start(t)
	sns.SetEnv(t)
	src, ptr := seededS3Pointer(t, 300)

	missing := "arn:aws:sns:us-east-1:123456789012:no-such-topic"
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--sns-topic", missing, "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != "migrated" || rep.MigrationID == "" || rep.NotifyError == "" || rep.PointerVersionID == "" {
		t.Fatalf("report after a flip whose message failed: %+v", rep)
	}
	cli(t, "check", "--catalog", rep.Target, "--expect", "v2").want(t, exitOK)
	if st := cli(t, "status", "--pointer", ptr); !strings.Contains(st.stdout, rep.Target) {
		t.Fatalf("the pointer does not name the new catalog: %s", st.stdout)
	}

	// A failed run (the pointer is on v2 now: asking for v1 is refused
	// after Check) still names its migration.
	cli(t, "rollback", "--pointer", ptr).want(t, exitOK)
	cli(t, "kv", "put", "--catalog", src, "--force", "3001", "00").want(t, exitOK)
	topic := sns.CreateTopic(t, "rocklake-alerts")
	r = cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--sns-topic", topic, "--json")
	r.want(t, exitError)
	rep = localrun.Report{}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Outcome != "failed" || rep.MigrationID == "" || !strings.Contains(rep.Error, "UnknownTags") {
		t.Fatalf("report of a failed run: %+v", rep)
	}
	msgs := sns.Messages(t, topic)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Body, rep.MigrationID) || !strings.Contains(msgs[0].Body, ptr) {
		t.Fatalf("the failure message does not name migration %s and pointer %s: %+v", rep.MigrationID, ptr, msgs)
	}
}

// Dropping unknown tags is never silent: the report counts what was dropped
// (and carried), per tag.
func TestMigrateReportsDroppedAndCarried(t *testing.T) {
	s3Stack(t, time.Minute)
	src, ptr := "s3://rocklake/catalogs/prod", "s3://rocklake/CURRENT"
	cli(t, "seed", "--catalog", src, "--rows", "300").want(t, exitOK)
	cli(t, "kv", "put", "--catalog", src, "--force", "f0aa", "00").want(t, exitOK)
	cli(t, "kv", "put", "--catalog", src, "--force", "f0bb", "00").want(t, exitOK)
	cli(t, "init-pointer", "--pointer", ptr, "--catalog", src).want(t, exitOK)
	r := cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--unknown-tags", "drop", "--dry-run", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Dropped["tag 0xF0"] != 2 || len(rep.Carried) != 0 {
		t.Fatalf("dropped %v, carried %v; want 2 records of tag 0xF0 dropped", rep.Dropped, rep.Carried)
	}
	r = cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--unknown-tags", "carry")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "carried 2 records of tag 0xF0") {
		t.Fatalf("migrate --unknown-tags carry does not say what it carried:\n%s", r.stdout)
	}
}

// cancelOn cancels when the CLI announces a state: a signal at that moment.
type cancelOn struct {
	state  string
	cancel context.CancelFunc
	buf    strings.Builder
}

func (c *cancelOn) Write(p []byte) (int, error) {
	c.buf.Write(p)
	if strings.Contains(c.buf.String(), "→ "+c.state) {
		c.cancel()
	}
	return len(p), nil
}

// An interrupted migrate (SIGINT, SIGTERM, SIGHUP or a closed pipe cancel
// its context) runs Abort on a fresh context: no checkpoint on the source,
// no staging, no target, and the lock is free for the next run.
func TestInterruptedMigrateCleansUp(t *testing.T) {
	ctx, _ := s3Stack(t, 2*time.Minute)
	src, ptr := seededS3Pointer(t, 3000)
	before := rawDump(t, src)

	runCtx, interrupt := context.WithCancel(ctx)
	stderr := &cancelOn{state: "Import", cancel: interrupt}
	var stdout bytes.Buffer
	code := run(runCtx, &env{stdout: &stdout, stderr: stderr}, []string{"migrate", "--pointer", ptr, "--to", "v2", "--shards", "2", "--migration-id", "m-interrupted"})
	if code == exitOK || !strings.Contains(stderr.buf.String(), "cleaned up after the interruption") {
		t.Fatalf("interrupted migrate: exit %d\n%s", code, stderr.buf.String())
	}
	if cps, err := slatedb.ListCheckpoints(ctx, src, slatedb.Options{}); err != nil || len(cps) != 0 {
		t.Fatalf("checkpoints left on the source: %v, %v", cps, err)
	}
	if after := rawDump(t, src); after != before {
		t.Fatal("the source's keys changed")
	}
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, prefix := range []string{"s3://rocklake/migrations/m-interrupted/", "s3://rocklake/catalogs/v2-m-interrupted/"} {
		if objs, err := store.List(ctx, prefix); err != nil || len(objs) != 0 {
			t.Fatalf("%s left: %d objects, %v", prefix, len(objs), err)
		}
	}
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2").want(t, exitOK)
}

// With AWS_PROFILE as the only source of credentials (no AWS_* keys), the
// engine and the pointer agree: rollback restores and checks the catalog,
// and export reads it. The engine once read only the AWS_* variables, so
// a rollback moved the pointer and then failed opening the catalog.
func TestProfileOnlyRollbackAndExport(t *testing.T) {
	_, s := s3Stack(t, time.Minute)
	src, ptr := seededS3Pointer(t, 300)
	cli(t, "migrate", "--pointer", ptr, "--to", "v2", "--shards", "2").want(t, exitOK)

	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cred := fmt.Sprintf("[ops]\naws_access_key_id = %s\naws_secret_access_key = %s\n", s.AccessKey(), s.SecretKey())
	for name, text := range map[string]string{"credentials": cred, "config": "[profile ops]\nregion = us-east-1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_PROFILE", "ops")

	rb := cli(t, "rollback", "--pointer", ptr)
	rb.want(t, exitOK)
	if !strings.Contains(rb.stdout, src) {
		t.Fatalf("rollback = %s", rb.stdout)
	}
	cli(t, "check", "--catalog", src, "--expect", "v1").want(t, exitOK)
	cli(t, "export", "--catalog", src, "--format", "v1", "--output", "s3://rocklake/staging/profile", "--shards", "2").want(t, exitOK)
}

// migrateEvents checks what --json adds to migrate's progress: the stream
// goes to stderr, one JSON event per line, ending with the terminal state Migrated. What
// the events say is localrun.Run's (TestRunMigratesAndShowsItsProgress).
func migrateEvents(t *testing.T, stderr string) {
	t.Helper()
	type event struct {
		progress.Event
		State string `json:"state"`
		Phase string `json:"phase"`
	}
	var last event
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	for _, line := range lines {
		last = event{}
		if err := json.Unmarshal([]byte(line), &last); err != nil {
			t.Fatalf("stderr line %q: %v", line, err)
		}
	}
	if len(lines) < 2 || last.Event.Event != "state" || last.State != "Migrated" || last.Phase != "end" {
		t.Fatalf("stderr: %d lines, the last %+v; want the progress events ending with Migrated", len(lines), last)
	}
}
