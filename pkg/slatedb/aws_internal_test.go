package slatedb

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The renewer runs only for credentials that expire, and stops when the
// configuration it renews is superseded.
func TestRenewerStopsWhenSuperseded(t *testing.T) {
	dir := t.TempDir()
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	script := filepath.Join(dir, "creds.sh")
	body := `#!/bin/sh
printf '{"Version":1,"AccessKeyId":"a","SecretAccessKey":"s","Expiration":"%s"}' "$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)"
`
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("[profile p]\ncredential_process = %s\n", script)), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AWS_CONFIG_FILE", config)
	t.Setenv("AWS_PROFILE", "p")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	if err := useS3(ctx, "open writer", "s3://b/db"); err != nil {
		t.Fatal(err)
	}
	engineAWS.mu.Lock()
	stop, renew := engineAWS.stop, engineAWS.renew
	engineAWS.mu.Unlock()
	if stop == nil || time.Until(renew) < 50*time.Minute || time.Until(renew) > 56*time.Minute {
		t.Fatalf("credentials for an hour: renewer running %v, renewal in %s (want about 55 min)", stop != nil, time.Until(renew))
	}

	// Static keys: the old renewer stops and none replaces it.
	t.Setenv("AWS_PROFILE", "")
	os.Unsetenv("AWS_PROFILE")
	t.Setenv("AWS_ACCESS_KEY_ID", "a")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "s")
	if err := useS3(ctx, "open writer", "s3://b/db"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stop:
	default:
		t.Fatal("the superseded configuration's renewer was not stopped")
	}
	engineAWS.mu.Lock()
	defer engineAWS.mu.Unlock()
	if engineAWS.stop != nil || !engineAWS.renew.IsZero() {
		t.Fatalf("static credentials: renewer running %v, renewal at %v", engineAWS.stop != nil, engineAWS.renew)
	}
}
