package integration

import (
	"strings"
	"testing"
)

// A missing tool or binary fails the suite with the make target to run; it
// never skips.
func TestMissingToolsNameMakeTargets(t *testing.T) {
	t.Setenv("ROCKLAKE_LAMBDA_RIE", t.TempDir()+"/no-such-rie")
	if _, err := findRIE(); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("findRIE with a missing emulator: %v", err)
	}
	t.Setenv("ROCKLAKE_LAMBDA_RIE", "")
	t.Setenv("ROCKLAKE_CACHE", t.TempDir())
	t.Setenv("PATH", t.TempDir())
	if _, err := findRIE(); err == nil || !strings.Contains(err.Error(), "install-lambda-rie.sh") {
		t.Fatalf("findRIE with no emulator anywhere: %v", err)
	}
	if _, err := localStepFunctionsModules(); err == nil || !strings.Contains(err.Error(), "make tools") {
		t.Fatalf("no aws-local-stepfunctions: %v", err)
	}
	if _, err := findBootstraps(t.TempDir()); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Fatalf("no dist/: %v", err)
	}
}
