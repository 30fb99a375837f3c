package proc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// CacheDir is where `make tools` installs the rigs' tools:
// $ROCKLAKE_CACHE, else $HOME/.cache/rocklake-migrate.
func CacheDir() string {
	if c := os.Getenv("ROCKLAKE_CACHE"); c != "" {
		return c
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "rocklake-migrate")
}

// FindTool finds a tool a rig runs (versitygw, moto_server, rocklake, psql,
// aws-lambda-rie, ...): the path in envVar if set, else CacheDir()/bin/name,
// else name on PATH. A missing tool is an error that says which script
// installs it, so that a test fails (never skips) with the fix in its message.
func FindTool(name, envVar, installer string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s: %w (run `make tools`, or unset it)", envVar, err)
		}
		return p, nil
	}
	cached := filepath.Join(CacheDir(), "bin", name)
	if _, err := os.Stat(cached); err == nil {
		return cached, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s is not installed ($%s unset, no %s, none on PATH): run `make tools` (%s)", name, envVar, cached, installer)
}
