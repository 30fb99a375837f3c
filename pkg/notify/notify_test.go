package notify_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/notify"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
)

func newPublisher(t *testing.T) *notify.Publisher {
	t.Helper()
	p, err := notify.NewPublisher(testenv.Context(t), notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestDriftAlerts runs drift checks against a real S3 (versitygw) and sends
// their alerts to a real SNS emulator, both on loopback: S3 is found through
// AWS_ENDPOINT_URL, SNS through AWS_ENDPOINT_URL_SNS, in one environment.
func TestDriftAlerts(t *testing.T) {
	s3 := s3server.Start(t)
	s3server.SetEnv(t, s3)
	emu := snsserver.Start(t)
	emu.SetEnv(t)
	ctx := testenv.Context(t)
	if err := s3.CreateBucket(ctx, "rocklake", true); err != nil {
		t.Fatal(err)
	}
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cat, ptr := "s3://rocklake/catalogs/v1", "s3://rocklake/CURRENT"
	if _, err := seed.Seed(ctx, cat, seed.Options{Rows: 20, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Create(ctx, store, ptr, pointer.Pointer{Catalog: cat, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	topic := emu.CreateTopic(t, "rocklake-drift")
	pub := newPublisher(t)

	// A release expecting v2 finds the v1 catalog: one message.
	r, err := drift.Find(ctx, store, drift.Options{Pointer: ptr, Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Healthy || len(r.Findings) != 1 || r.Findings[0].Kind != drift.KindVersionMismatch {
		t.Fatalf("drift report: %+v", r)
	}
	id, err := pub.PublishDrift(ctx, topic, r)
	if err != nil {
		t.Fatal(err)
	}
	msgs := emu.Messages(t, topic)
	if len(msgs) != 1 {
		t.Fatalf("%d messages after one check with findings, want 1: %+v", len(msgs), msgs)
	}
	m := msgs[0]
	if m.ID != id || !strings.Contains(m.Subject, "VersionMismatch") || !strings.Contains(m.Subject, "1 finding") {
		t.Fatalf("message %+v (id %s)", m, id)
	}
	var got drift.Report
	if err := json.Unmarshal([]byte(m.Body), &got); err != nil {
		t.Fatalf("body is not a report: %v\n%s", err, m.Body)
	}
	if len(got.Findings) != 1 || got.Findings[0].Kind != drift.KindVersionMismatch || got.Findings[0].Found != format.V1 ||
		got.Findings[0].Expected != format.V2 || got.Catalog != cat || got.Pointer != ptr || got.Healthy {
		t.Fatalf("report in the message: %+v", got)
	}

	// A release expecting v1: healthy, and nothing is sent.
	r, err = drift.Find(ctx, store, drift.Options{Pointer: ptr, Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Healthy {
		t.Fatalf("expected healthy: %s", r.Text())
	}
	if id, err := pub.PublishDrift(ctx, topic, r); err != nil || id != "" {
		t.Fatalf("healthy report published: %q, %v", id, err)
	}
	if msgs := emu.Messages(t, topic); len(msgs) != 1 {
		t.Fatalf("%d messages after a healthy check, want still 1", len(msgs))
	}

	// A second check with findings: one more message, not more.
	r, err = drift.Find(ctx, store, drift.Options{Pointer: "s3://rocklake/NO-POINTER", Expect: format.V2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.PublishDrift(ctx, topic, r); err != nil {
		t.Fatal(err)
	}
	if msgs := emu.Messages(t, topic); len(msgs) != 2 || !strings.Contains(msgs[1].Subject, "PointerMissing") {
		t.Fatalf("messages after a second check: %+v", msgs)
	}

	// A topic that does not exist is an error, not a silent drop.
	if _, err := pub.PublishDrift(ctx, strings.TrimSuffix(topic, "rocklake-drift")+"nope", r); err == nil {
		t.Fatal("publish to a missing topic succeeded")
	}
}

func TestPublishOutcome(t *testing.T) {
	emu := snsserver.Start(t)
	emu.SetEnv(t)
	// S3's endpoint elsewhere must not capture SNS: the closed port would
	// fail the publish.
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
	topic := emu.CreateTopic(t, "rocklake-migrations")
	pub := newPublisher(t)
	ctx := testenv.Context(t)

	id, err := pub.PublishOutcome(ctx, topic, "Migration mig-7 succeeded:\ns3://b/c → v2", `{"migration_id":"mig-7","outcome":"succeeded"}`)
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", notify.MaxBody) // twice MaxBody bytes
	if _, err := pub.PublishOutcome(ctx, topic, "Migration mig-8 failed", long); err != nil {
		t.Fatal(err)
	}
	msgs := emu.Messages(t, topic)
	if len(msgs) != 2 {
		t.Fatalf("%d messages, want 2", len(msgs))
	}
	if msgs[0].ID != id || msgs[0].Subject != "Migration mig-7 succeeded: s3://b/c ? v2" || msgs[0].Body != `{"migration_id":"mig-7","outcome":"succeeded"}` {
		t.Fatalf("outcome message %+v", msgs[0])
	}
	if len(msgs[1].Body) > notify.MaxBody || !strings.HasSuffix(msgs[1].Body, "bytes left out]") {
		t.Fatalf("long body not cut: %d bytes, ends %q", len(msgs[1].Body), msgs[1].Body[len(msgs[1].Body)-40:])
	}

	if _, err := pub.PublishOutcome(ctx, topic, "x", " "); err == nil {
		t.Fatal("empty body accepted")
	}
	if _, err := pub.PublishOutcome(ctx, "", "x", "y"); err == nil {
		t.Fatal("no topic accepted")
	}
}

func TestExplicitEndpoint(t *testing.T) {
	emu := snsserver.Start(t)
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_SNS"} {
		t.Setenv(k, "http://127.0.0.1:1") // both wrong: Options win
	}
	t.Setenv("AWS_REGION", snsserver.Region)
	t.Setenv("AWS_ACCESS_KEY_ID", snsserver.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", snsserver.SecretKey)
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	topic := emu.CreateTopic(t, "t")
	pub, err := notify.NewPublisher(testenv.Context(t), notify.Options{Endpoint: emu.Endpoint()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pub.PublishOutcome(testenv.Context(t), topic, "s", "b"); err != nil {
		t.Fatal(err)
	}
	if n := len(emu.Messages(t, topic)); n != 1 {
		t.Fatalf("%d messages", n)
	}
}

func TestSubject(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                      "plain",
		"  two\nlines\t ":            "two lines",
		"café ✓":                     "caf? ?",
		strings.Repeat("a", 150):     strings.Repeat("a", 97) + "...",
		strings.Repeat("a", 100):     strings.Repeat("a", 100),
		"\x00control\x7f":            "?control?",
		"RockLake drift on s3://b/k": "RockLake drift on s3://b/k",
	} {
		if got := notify.Subject(in); got != want || len(got) > notify.MaxSubject {
			t.Errorf("Subject(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDriftBodyTrimmed(t *testing.T) {
	r := drift.Report{Pointer: "s3://b/CURRENT", Expected: format.V2, CheckedAt: time.Now().UTC()}
	for i := range 3000 {
		r.Findings = append(r.Findings, drift.Finding{Kind: drift.KindLeftoverStaging,
			Message: fmt.Sprintf("staging %d: %s", i, strings.Repeat("x", 200))})
	}
	b, err := notify.DriftBody(r)
	if err != nil {
		t.Fatal(err)
	}
	var got drift.Report
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(b) > notify.MaxBody || got.FindingsOmitted == 0 || len(got.Findings)+got.FindingsOmitted != 3000 || len(got.Findings) < 500 {
		t.Fatalf("trimmed body %d bytes: %d findings kept, %d omitted", len(b), len(got.Findings), got.FindingsOmitted)
	}
	if s := notify.DriftSubject(got); !strings.Contains(s, "3000 findings") {
		t.Fatalf("subject %q should count the omitted findings", s)
	}
}

// An SNS endpoint that accepts connections and never answers is named
// (ErrUnreachable, the limit it ran into) within the same limits as S3's
// (awsconfig.Limits), not after an HTTP client's own 30 s per attempt
// (issue 40 item 3).
func TestSilentSNSIsNamed(t *testing.T) {
	hole := s3server.StartBlackHole(t)
	hole.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_SNS", hole.URL)
	t.Setenv(awsconfig.EnvFirstByteTimeout, "1s")
	t.Setenv(awsconfig.EnvAttempts, "2")
	ctx := testenv.Context(t)
	pub, err := notify.NewPublisher(ctx, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = pub.PublishOutcome(ctx, "arn:aws:sns:us-east-1:123456789012:t", "s", "b")
	took := time.Since(start)
	t.Logf("publish to a silent endpoint: %s: %v", took.Round(time.Millisecond), err)
	if !errors.Is(err, notify.ErrUnreachable) || !strings.Contains(err.Error(), "no response within 1s") || took > 10*time.Second {
		t.Fatalf("publish: %v after %s, want ErrUnreachable naming the limit within the limits' bound", err, took)
	}
	if n := hole.Accepted(); n != 2 {
		t.Errorf("%d attempts, want %s=2", n, awsconfig.EnvAttempts)
	}
}
