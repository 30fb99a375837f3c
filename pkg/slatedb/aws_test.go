package slatedb_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// unsetAWS clears the AWS_* variables that would give credentials, for the
// rest of the test, and points the shared files at dir (nothing there yet).
// Endpoint and region stay those of the package's local S3.
func unsetAWS(t *testing.T, dir string) {
	t.Helper()
	for _, k := range []string{
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI", "AWS_CONTAINER_AUTHORIZATION_TOKEN",
	} {
		t.Setenv(k, "") // restored after the test
		os.Unsetenv(k)
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "config"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "credentials"))
	// Off EC2 the instance role endpoint only times out: not a source here.
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

func writeFile(t *testing.T, path, text string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), mode); err != nil {
		t.Fatal(err)
	}
}

// roundTrip writes keys through a writer on url, reads them back through a
// reader, and puts and gets one object through pkg/blob beside it.
func roundTrip(t *testing.T, url string) {
	t.Helper()
	ctx := testenv.Context(t)
	w := openWriter(t, ctx, url)
	put(t, ctx, w, "k1", "v1", "k2", "v2")
	if err := w.Close(); err != nil {
		t.Fatalf("close writer: %v", err)
	}
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	if err != nil {
		t.Fatalf("open reader %s: %v", url, err)
	}
	defer r.Close()
	if v, err := r.Get(ctx, []byte("k2")); err != nil || string(v) != "v2" {
		t.Fatalf("reader get k2 = %q, %v", v, err)
	}
	bs, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	obj := url + "-object"
	if _, err := bs.Put(ctx, obj, []byte("through blob")); err != nil {
		t.Fatalf("blob put: %v", err)
	}
	if body, _, err := bs.Get(ctx, obj); err != nil || string(body) != "through blob" {
		t.Fatalf("blob get = %q, %v", body, err)
	}
}

// With only AWS_PROFILE naming a profile in the shared files (no key
// variables), the engine and pkg/blob both work: the engine once read only
// AWS_* variables, so a rollback moved the pointer and then failed.
func TestProfileCredentialsReachTheEngine(t *testing.T) {
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	dir := t.TempDir()
	unsetAWS(t, dir)
	writeFile(t, filepath.Join(dir, "credentials"),
		fmt.Sprintf("[migrator]\naws_access_key_id = %s\naws_secret_access_key = %s\n", key, secret), 0o600)
	writeFile(t, filepath.Join(dir, "config"), "[profile migrator]\nregion = us-east-1\n", 0o600)
	t.Setenv("AWS_PROFILE", "migrator")
	roundTrip(t, fmt.Sprintf("s3://%s/profile-%d", bucket, seq.Add(1)))
}

// A profile whose credential_process hands out credentials that expire
// within seconds: the engine keeps writing and reading across several
// renewals. The engine refuses expired credentials (it waits briefly for
// new ones, then fails), so without renewal the writes past the first
// expiry would fail; the script counts its runs to show the renewals.
func TestShortLivedCredentialsAreRenewed(t *testing.T) {
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	dir := t.TempDir()
	unsetAWS(t, dir)
	const lifetime = 4 // seconds
	count := filepath.Join(dir, "runs")
	script := filepath.Join(dir, "creds.sh")
	writeFile(t, script, fmt.Sprintf(`#!/bin/sh
echo run >> %q
printf '{"Version":1,"AccessKeyId":"%s","SecretAccessKey":"%s","Expiration":"%%s"}' "$(date -u -d '+%d seconds' +%%Y-%%m-%%dT%%H:%%M:%%SZ)"
`, count, key, secret, lifetime), 0o700)
	writeFile(t, filepath.Join(dir, "config"),
		fmt.Sprintf("[profile shortlived]\nregion = us-east-1\ncredential_process = %s\n", script), 0o600)
	t.Setenv("AWS_PROFILE", "shortlived")
	runs := func() int {
		b, err := os.ReadFile(count)
		if errors.Is(err, os.ErrNotExist) {
			return 0
		}
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "run\n")
	}

	ctx := testenv.Context(t)
	url := fmt.Sprintf("s3://%s/shortlived-%d", bucket, seq.Add(1))
	w := openWriter(t, ctx, url)
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Options: slatedb.Options{PollInterval: 100 * time.Millisecond}})
	if err != nil {
		t.Fatalf("open reader: %v", err)
	}
	defer r.Close()
	first := runs()
	if first < 1 {
		t.Fatalf("credential_process ran %d times before the first open", first)
	}
	// Past two lifetimes, so the first credentials expired long before.
	end := time.Now().Add(2*lifetime*time.Second + 2*time.Second)
	for i := 0; time.Now().Before(end); i++ {
		k := "k" + strconv.Itoa(i)
		put(t, ctx, w, k, "v") // durable: a WAL object on S3
		if v, err := w.Get(ctx, []byte(k)); err != nil || string(v) != "v" {
			t.Fatalf("writer get %s = %q, %v", k, v, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err := w.Close(); err != nil {
		t.Fatalf("close writer: %v", err)
	}
	if _, err := r.Get(ctx, []byte("k0")); err != nil {
		t.Fatalf("reader get k0 after the renewals: %v", err)
	}
	n := runs()
	t.Logf("credential_process ran %d times: %d before the first open, %d renewals in %s", n, first, n-first, 2*lifetime*time.Second+2*time.Second)
	if n < first+2 {
		t.Fatalf("credential_process ran %d times, %d at open: the credentials were not renewed", n, first)
	}
}

// No credentials from any source: the engine and pkg/blob fail with the same
// named error and the same message, naming what was tried; file:// needs
// no credentials.
func TestNoCredentialsIsOneClearError(t *testing.T) {
	unsetAWS(t, t.TempDir())
	ctx := testenv.Context(t)
	url := fmt.Sprintf("s3://%s/nocreds-%d", bucket, seq.Add(1))
	before := slatedb.LiveHandles()

	_, werr := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	_, rerr := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{})
	_, cerr := slatedb.ListCheckpoints(ctx, url, slatedb.Options{})
	bs, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, _, berr := bs.Get(ctx, url+"/object")
	var want string
	for name, err := range map[string]error{"open writer": werr, "open reader": rerr, "list checkpoints": cerr, "blob get": berr} {
		if !errors.Is(err, slatedb.ErrNoCredentials) || !errors.Is(err, blob.ErrNoCredentials) {
			t.Fatalf("%s: err = %v, want ErrNoCredentials", name, err)
		}
		var nc *awsconfig.NoCredentialsError
		if !errors.As(err, &nc) {
			t.Fatalf("%s: %v is no *awsconfig.NoCredentialsError", name, err)
		}
		if want == "" {
			want = nc.Error()
		}
		if nc.Error() != want {
			t.Fatalf("%s: message %q, another side said %q", name, nc.Error(), want)
		}
		for _, tried := range []string{"AWS_ACCESS_KEY_ID", "profile \"default\"", "web identity", "container", "instance"} {
			if !strings.Contains(err.Error(), tried) {
				t.Fatalf("%s: %q does not name %s", name, err, tried)
			}
		}
	}
	if after := slatedb.LiveHandles(); after != before {
		t.Fatalf("failed opens leaked handles: %d → %d", before, after)
	}

	w := openWriter(t, ctx, "file://"+t.TempDir()+"/db")
	put(t, ctx, w, "k", "v")
}
