// Command run-local-s3 runs the local S3 stack (versitygw on 127.0.0.1, with
// versioning; internal/testenv/s3server) in the foreground for `make demo`
// and manual work: it creates the given buckets, writes the AWS_* settings
// to an env file, and stops the gateway on SIGINT or SIGTERM. It is a test
// rig, not part of the product.
//
//	run-local-s3 --buckets rocklake,rocklake-staging --env-file /tmp/stack.env &
//	. /tmp/stack.env   # once the file exists
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "run-local-s3:", err)
		os.Exit(1)
	}
}

func run() error {
	dir := flag.String("dir", "", "data directory (default: a temporary one, removed on exit)")
	buckets := flag.String("buckets", "rocklake", "comma-separated buckets to create, all versioned")
	envFile := flag.String("env-file", "", "write `export K=V` lines here once the stack answers")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	s, err := s3server.Launch(startCtx, s3server.Options{Dir: *dir})
	if err != nil {
		return err
	}
	defer s.Stop()
	for _, b := range strings.Split(*buckets, ",") {
		if b = strings.TrimSpace(b); b == "" {
			continue
		}
		if err := s.CreateBucket(startCtx, b, true); err != nil {
			return fmt.Errorf("create bucket %s: %w", b, err)
		}
	}
	if *envFile != "" {
		var sb strings.Builder
		for _, kv := range s.Env() {
			k, v, _ := strings.Cut(kv, "=")
			fmt.Fprintf(&sb, "export %s='%s'\n", k, v)
		}
		// Written whole, then renamed: a reader polling for the file never
		// sees half of it.
		tmp := *envFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(sb.String()), 0o600); err != nil {
			return err
		}
		if err := os.Rename(tmp, *envFile); err != nil {
			return err
		}
	}
	slog.Info("local S3 stack running", "endpoint", s.Endpoint(), "buckets", *buckets)
	<-ctx.Done()
	slog.Info("stopping local S3 stack")
	return s.Stop()
}
