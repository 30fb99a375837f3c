// Package rocklake runs the real RockLake binary for tests, the demo's
// fixtures and scripts/make-fixtures.sh: `rocklake serve` on loopback against
// a catalog directory (Serve), SQL over the PostgreSQL wire through jackc/pgx's
// pgconn (Server.Query and Server.Exec with the simple-query protocol,
// Server.ExecExtended with bound parameters, which RockLake reads some
// statements from), `rocklake verify catalog` (Verify) and
// `rocklake inspect snapshot` (InspectSnapshot), DuckDB as a DuckLake client
// (DuckDB), and WriteSampleCatalog, the DuckLake-style workload that writes
// a small but complete catalog as a DuckDB client would.
//
// The binary is RockLake v0.47.11 built from ../shared/rocklake by
// scripts/install-rocklake.sh (`make tools`). Everything here is bounded by
// the caller's context, runs each child through internal/testenv/proc (its
// own process group, killed with the caller), and listens on 127.0.0.1 only.
//
// Two facts about the binary shape this package:
//   - Catalog locations are plain absolute directory paths: it takes a
//     file:///x URL as the relative path "file:/x".
//   - verify and inspect open the catalog as a SlateDB writer: run them only
//     on a catalog nobody serves (they would fence the server).
package rocklake

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
)

const (
	// User and Database are what clients send at startup. The server runs
	// without authentication (no --auth-user/--auth-password, and Serve does
	// not pass on ROCKLAKE_AUTH_*), so any user is accepted; these are
	// RockLake's conventional names.
	User     = "rocklake"
	Database = "rocklake"

	readyTimeout = 30 * time.Second
	// stopGrace bounds Stop's wait after SIGTERM: the server drains for at
	// most drainTimeout, and a little more is allowed for the exit itself.
	stopGrace    = 10 * time.Second
	drainTimeout = 3 * time.Second
	// logTail is how much of a server's stdout and stderr is kept for error
	// messages (RockLake logs every statement on stdout).
	logTail = 64 << 10
)

// Binary is the path of the rocklake binary: $ROCKLAKE_BIN, else
// $ROCKLAKE_CACHE/bin/rocklake, else rocklake on PATH. A missing binary is an
// error naming scripts/install-rocklake.sh.
func Binary() (string, error) {
	return proc.FindTool("rocklake", "ROCKLAKE_BIN", "scripts/install-rocklake.sh")
}

// childEnv is the whole environment of every child: RockLake reads its
// catalog, auth and extension settings from ROCKLAKE_* and S3 settings from
// AWS_*, and psql reads PG*; none of the caller's may leak in.
func childEnv() []string {
	return []string{
		"HOME=" + os.Getenv("HOME"),
		"TMPDIR=" + os.TempDir(),
		"PATH=" + os.Getenv("PATH"),
		"LANG=C.UTF-8",
		"NO_COLOR=1", // plain tracing lines
		"RUST_BACKTRACE=0",
	}
}

// run runs a one-shot command (DuckDB's Python, the binary's offline
// commands, psql in the test that means to run it) with the environment
// every child here gets, bounded by ctx; see proc.Run.
func run(ctx context.Context, stdin string, bin string, args ...string) (string, error) {
	return proc.Run(ctx, childEnv(), stdin, bin, args...)
}

// absDir resolves a catalog directory to the plain absolute path the binary
// needs, refusing URLs (file:///x would be taken as a relative path).
func absDir(dir string) (string, error) {
	if strings.Contains(dir, "://") {
		return "", fmt.Errorf("rocklake: catalog %q: give a directory path, not a URL", dir)
	}
	if dir == "" {
		return "", errors.New("rocklake: empty catalog directory")
	}
	return filepath.Abs(dir)
}

// Verify runs `rocklake verify catalog --catalog DIR` and returns its report.
// The binary exits 0 even when it finds errors, so Verify also fails unless
// the report says "Status: OK". It opens the catalog as a writer: never on a
// catalog being served.
func Verify(ctx context.Context, catalogDir string) (string, error) {
	out, err := Offline(ctx, catalogDir, "verify", "catalog")
	if err != nil {
		return out, err
	}
	if !strings.Contains(out, "Status: OK") {
		return out, fmt.Errorf("rocklake verify catalog %s: not OK:\n%s", catalogDir, strings.TrimSpace(out))
	}
	return out, nil
}

// InspectSnapshot runs `rocklake inspect snapshot --catalog DIR` and returns
// its report ("Catalog State:" then "  Name: value" lines; Fields parses
// them). It opens the catalog as a writer: never on a catalog being served.
func InspectSnapshot(ctx context.Context, catalogDir string) (string, error) {
	return Offline(ctx, catalogDir, "inspect", "snapshot")
}

// Offline runs `rocklake ARGS... --catalog DIR` (one of the binary's
// offline commands: verify, inspect, checkpoint, ...) on an existing catalog
// directory and returns its stdout; a failure carries its output. It opens
// the catalog as a writer: never on a catalog being served.
func Offline(ctx context.Context, catalogDir string, args ...string) (string, error) {
	dir, err := absDir(catalogDir)
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(dir); err != nil {
		// The binary would create it and report an empty catalog.
		return "", fmt.Errorf("rocklake %s: %w", strings.Join(args, " "), err)
	}
	bin, err := Binary()
	if err != nil {
		return "", err
	}
	return run(ctx, "", bin, append(args, "--catalog", dir)...)
}

// Fields parses the "  Name: value" lines of a verify or inspect report (the
// binary's log lines, which it also prints on stdout, are skipped: they do
// not start with two spaces).
func Fields(report string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(report, "\n") {
		if !strings.HasPrefix(line, "  ") {
			continue
		}
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || strings.HasPrefix(k, "-") {
			continue
		}
		m[k] = strings.TrimSpace(v)
	}
	return m
}
