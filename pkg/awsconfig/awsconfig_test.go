package awsconfig_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
)

// isolate clears every AWS_* and ROCKLAKE_S3_* variable for the test and points the shared
// files at an empty directory, so the host's configuration plays no part.
func isolate(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "ROCKLAKE_S3_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
	dir := t.TempDir()
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return dir
}

func load(t *testing.T) *awsconfig.Config {
	t.Helper()
	c, err := awsconfig.Load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestEndpointRegionAndStyle(t *testing.T) {
	isolate(t)
	c := load(t)
	if c.Endpoint != "" || c.PathStyle || c.Region != awsconfig.DefaultRegion || c.Describe() != "AWS S3 (us-east-1)" {
		t.Fatalf("no configuration: endpoint %q, path style %v, region %q", c.Endpoint, c.PathStyle, c.Region)
	}
	if load(t) != c {
		t.Fatal("an unchanged environment must give the configuration resolved before")
	}

	// Most specific first: AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL, then
	// object_store's AWS_ENDPOINT.
	t.Setenv("AWS_REGION", "eu-west-1")
	t.Setenv("AWS_ENDPOINT", "http://127.0.0.1:3")
	if c := load(t); c.Endpoint != "http://127.0.0.1:3" || !c.PathStyle || c.Region != "eu-west-1" {
		t.Fatalf("AWS_ENDPOINT: endpoint %q, path style %v, region %q", c.Endpoint, c.PathStyle, c.Region)
	}
	t.Setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:2")
	if c := load(t); c.Endpoint != "http://127.0.0.1:2" {
		t.Fatalf("AWS_ENDPOINT_URL: endpoint %q", c.Endpoint)
	}
	t.Setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")
	if c := load(t); c.Endpoint != "http://127.0.0.1:1" || c.Describe() != "http://127.0.0.1:1" {
		t.Fatalf("AWS_ENDPOINT_URL_S3: endpoint %q", c.Endpoint)
	}
}

func TestProfileGivesCredentialsAndRegion(t *testing.T) {
	dir := isolate(t)
	if err := os.WriteFile(filepath.Join(dir, "config"), []byte("[profile p]\nregion = ap-south-1\nendpoint_url = http://127.0.0.1:9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "credentials"), []byte("[p]\naws_access_key_id = AKIDP\naws_secret_access_key = SECRETP\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_PROFILE", "p")
	c := load(t)
	creds, err := c.Credentials(context.Background())
	if err != nil || creds.AccessKeyID != "AKIDP" || creds.SecretAccessKey != "SECRETP" {
		t.Fatalf("credentials = %+v, %v", creds, err)
	}
	if c.Region != "ap-south-1" || c.Endpoint != "http://127.0.0.1:9" || !c.PathStyle {
		t.Fatalf("profile: region %q, endpoint %q, path style %v", c.Region, c.Endpoint, c.PathStyle)
	}
}

func TestNoCredentialsNamesWhatWasTried(t *testing.T) {
	isolate(t)
	_, err := load(t).Credentials(context.Background())
	var nc *awsconfig.NoCredentialsError
	if !errors.Is(err, awsconfig.ErrNoCredentials) || !errors.As(err, &nc) {
		t.Fatalf("err = %v, want ErrNoCredentials", err)
	}
	for _, s := range []string{"AWS_ACCESS_KEY_ID", `profile "default"`, os.Getenv("AWS_CONFIG_FILE"), "web identity", "container role", "instance role"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%q does not name %s", err, s)
		}
	}
	// The caller's own deadline is not a missing credential.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := load(t).Refresh(ctx); errors.Is(err, awsconfig.ErrNoCredentials) {
		t.Fatalf("canceled: err = %v, want the cancellation", err)
	}
}

func TestRefreshAt(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name  string
		life  time.Duration
		renew time.Duration // after now
	}{
		{"an hour: 5 min before", time.Hour, 55 * time.Minute},
		{"15 min: 5 min before", 15 * time.Minute, 10 * time.Minute},
		{"4 s: at half", 4 * time.Second, 2 * time.Second},
		{"already expired: now", -time.Second, -time.Second},
	}
	for _, c := range cases {
		at, ok := awsconfig.RefreshAt(aws.Credentials{CanExpire: true, Expires: now.Add(c.life)}, now)
		if !ok || !at.Equal(now.Add(c.renew)) {
			t.Errorf("%s: renew at %v (%v), want %v", c.name, at, ok, now.Add(c.renew))
		}
	}
	if _, ok := awsconfig.RefreshAt(aws.Credentials{}, now); ok {
		t.Error("credentials that do not expire need no renewal")
	}
}

// The default limits name a dead endpoint within about a minute, far inside
// the CLI's shortest deadline (5 min): every attempt bounded, few of them.
func TestDefaultLimitsAreBounded(t *testing.T) {
	isolate(t)
	l := load(t).Limits
	if l != awsconfig.DefaultLimits() {
		t.Fatalf("no ROCKLAKE_S3_* variables: limits %+v, want the defaults %+v", l, awsconfig.DefaultLimits())
	}
	if l.Connect <= 0 || l.FirstByte <= 0 || l.Stall <= 0 || l.Attempts < 1 {
		t.Fatalf("a limit is unbounded: %+v", l)
	}
	// Each silent attempt waits at most for its connection and its first
	// byte; the SDK's backoff between attempts is under a few seconds.
	if worst := time.Duration(l.Attempts) * (l.Connect + l.FirstByte); worst > time.Minute {
		t.Fatalf("a dead endpoint takes up to %s to name, want about a minute at most", worst)
	}
}

func TestLimitsFromEnvironment(t *testing.T) {
	isolate(t)
	t.Setenv(awsconfig.EnvConnectTimeout, "2s")
	t.Setenv(awsconfig.EnvFirstByteTimeout, "1500ms")
	t.Setenv(awsconfig.EnvStallTimeout, "3s")
	t.Setenv(awsconfig.EnvAttempts, "4")
	want := awsconfig.Limits{Connect: 2 * time.Second, FirstByte: 1500 * time.Millisecond, Stall: 3 * time.Second, Attempts: 4}
	if l := load(t).Limits; l != want {
		t.Fatalf("limits %+v, want %+v", l, want)
	}
	// A value that is not a positive duration or count is refused, never
	// silently replaced by a default.
	for env, v := range map[string]string{
		awsconfig.EnvFirstByteTimeout: "10",
		awsconfig.EnvStallTimeout:     "-1s",
		awsconfig.EnvConnectTimeout:   "0s",
		awsconfig.EnvAttempts:         "0",
	} {
		t.Run(env, func(t *testing.T) {
			t.Setenv(env, v)
			if _, err := awsconfig.Load(context.Background()); err == nil || !strings.Contains(err.Error(), env) {
				t.Fatalf("%s=%q: err = %v, want a refusal naming it", env, v, err)
			}
		})
	}
}
