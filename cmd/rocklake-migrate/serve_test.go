package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/supervise"
)

// resolve prints the pointer's catalog as `rocklake serve --catalog` takes
// it (a local catalog as its path), its URL, its format, or all as JSON;
// a missing and a dangling pointer are named errors.
func TestResolve(t *testing.T) {
	ctx, _ := s3Stack(t, time.Minute)
	ptr := "s3://rocklake/CURRENT"
	cli(t, "resolve", "--pointer", ptr).want(t, exitError, "PointerMissing")
	src := filepath.Join(t.TempDir(), "prod")
	cli(t, "seed", "--catalog", "file://"+src, "--rows", "10").want(t, exitOK)
	pointAt(t, src)
	for field, want := range map[string]string{"catalog": src, "url": "file://" + src, "format": "v1"} {
		r := cli(t, "resolve", "--pointer", ptr, "--field", field)
		r.want(t, exitOK)
		if strings.TrimSpace(r.stdout) != want {
			t.Fatalf("resolve --field %s: %q, want %q", field, r.stdout, want)
		}
	}
	r := cli(t, "resolve", "--pointer", ptr, "--json")
	r.want(t, exitOK)
	var got supervise.Resolved
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || got.ServeCatalog != src || got.FormatVersion != 1 || got.Generation != 1 || got.ETag == "" {
		t.Fatalf("resolve --json: %q %v", r.stdout, err)
	}
	cli(t, "resolve", "--pointer", ptr, "--field", "nope").want(t, exitUsage)
	// A pointer naming no catalog.
	flipTo(t, ctx, ptr, "file://"+src+"-gone", 1, "m-test")
	cli(t, "resolve", "--pointer", ptr).want(t, exitError, "PointerDangling")
}

// serve's flags: the binaries are required and checked; RockLake's flags go
// after --; a supervisor stopped while degraded (a v2 pointer, no v2
// binary: nothing to serve) exits 5, never restarting anything meanwhile.
func TestServeFlagsAndDegradedExit(t *testing.T) {
	ctx, _ := s3Stack(t, time.Minute)
	ptr := "s3://rocklake/CURRENT"
	cli(t, "serve", "--pointer", ptr).want(t, exitUsage, "--rocklake FORMAT=PATH is required")
	cli(t, "serve", "--pointer", ptr, "--rocklake", "1").want(t, exitUsage, "want FORMAT=PATH")
	cli(t, "serve", "--pointer", ptr, "--rocklake", "1=/nonexistent/rocklake").want(t, exitUsage, "not an executable file")
	cli(t, "serve", "--pointer", ptr, "--rocklake", "1=/bin/true", "stray").want(t, exitUsage, "no arguments before --")
	cli(t, "serve", "--pointer", ptr, "--rocklake", "1=/bin/true", "--", "--catalog", "/x").want(t, exitUsage, "the pointer names the catalog")
	cli(t, "serve", "--pointer", ptr, "--rocklake", "1=/bin/true").want(t, exitError, "PointerMissing")

	// The degraded supervisor says so on the topic too (moto's SNS).
	sns := snsserver.Start(t)
	sns.SetEnv(t)
	topic := sns.CreateTopic(t, "rocklake-serve")
	v2 := filepath.Join(t.TempDir(), "v2")
	cli(t, "seed", "--catalog", "file://"+v2, "--rows", "10").want(t, exitOK)
	// A format-2 pointer, as a flip to v2 leaves it.
	cli(t, "init-pointer", "--pointer", ptr, "--catalog", "file://"+v2).want(t, exitOK)
	flipTo(t, ctx, ptr, "file://"+v2, 2, "m-test")
	runCtx, stop := context.WithCancel(ctx)
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, &env{stdout: &out, stderr: &errOut}, []string{"serve", "--pointer", ptr, "--rocklake", "1=/bin/true", "--interval", "100ms", "--json", "--sns-topic", topic})
	}()
	eventually(t, "a degraded health line", func() error {
		if !strings.Contains(errOut.String(), `"state":"degraded"`) {
			return context.DeadlineExceeded
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	stop()
	select {
	case code := <-done:
		if code != exitDegraded || !strings.Contains(errOut.String(), "NoBinaryForFormat") || strings.Contains(errOut.String(), `"event":"started"`) {
			t.Fatalf("exit %d, want %d, NoBinaryForFormat and nothing started:\n%s", code, exitDegraded, errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop within 30 s")
	}
	msgs := sns.Messages(t, topic)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Subject, "degraded") || !strings.Contains(msgs[0].Subject, ptr) {
		t.Fatalf("SNS messages %+v, want one saying the supervisor of %s degraded", msgs, ptr)
	}
}
