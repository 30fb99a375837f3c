package main

import (
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// The linters are installed by scripts/install-cfn-lint.sh and
// scripts/install-asl-validator.sh under $ROCKLAKE_CACHE. Without them these
// tests skip, unless ROCKLAKE_REQUIRE_LINT=1 (make test-infra sets it).
func tool(t *testing.T, rel string) string {
	t.Helper()
	cache := os.Getenv("ROCKLAKE_CACHE")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache", "rocklake-migrate")
	}
	p := filepath.Join(cache, rel)
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("ROCKLAKE_REQUIRE_LINT") == "1" {
			t.Fatalf("%s not installed (scripts/install-*.sh)", p)
		}
		t.Skipf("%s not installed; run scripts/install-cfn-lint.sh and scripts/install-asl-validator.sh", p)
	}
	return p
}

func TestCfnLint(t *testing.T) {
	bin := tool(t, "cfn-lint/bin/cfn-lint")
	// Both stacks: on new buckets and on existing ones.
	dir := t.TempDir()
	var paths []string
	for name, template := range map[string]map[string]any{"template.json": tj, "existing.json": existingTJ} {
		b, err := json.MarshalIndent(template, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	// Errors fail; warnings (W) and informational (I) findings are shown.
	out, err := exec.Command(bin, append([]string{"--format", "parseable", "--regions", "eu-west-1", "--"}, paths...)...).CombinedOutput()
	var errs []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if f := strings.Split(l, ":"); len(f) > 5 && strings.HasPrefix(f[5], "E") {
			errs = append(errs, l)
		} else if l != "" {
			t.Log(l)
		}
	}
	if len(errs) > 0 {
		t.Errorf("cfn-lint errors:\n%s", strings.Join(errs, "\n"))
	}
	if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode()&2 != 0 {
		t.Errorf("cfn-lint exit %d (errors):\n%s", ee.ExitCode(), out)
	} else if err != nil && !ok {
		t.Fatal(err)
	}
}

func TestASLValidator(t *testing.T) {
	bin := tool(t, "asl-validator/node_modules/.bin/asl-validator")
	dummy := map[string]string{
		"CheckFunctionArn":         "arn:aws:lambda:eu-west-1:123456789012:function:rlm-check",
		"ExportFunctionArn":        "arn:aws:lambda:eu-west-1:123456789012:function:rlm-export",
		"ImportFunctionArn":        "arn:aws:lambda:eu-west-1:123456789012:function:rlm-import",
		"InPlaceFunctionArn":       "arn:aws:lambda:eu-west-1:123456789012:function:rlm-inplace",
		"TopicArn":                 "arn:aws:sns:eu-west-1:123456789012:rlm-alerts",
		"Region":                   "eu-west-1",
		"MigrationStateMachineArn": "arn:aws:states:eu-west-1:123456789012:stateMachine:rlm-migration",
		"RollbackStateMachineArn":  "arn:aws:states:eu-west-1:123456789012:stateMachine:rlm-rollback",
	}
	migration, err := MigrationDefinition(testCfg)
	if err != nil {
		t.Fatal(err)
	}
	// Every definition (statemachine.Definitions), each as deployed.
	defs := maps.Clone(statemachine.Definitions)
	defs["migration"] = migration
	if len(defs) < 4 {
		t.Fatalf("definitions %v: the fleet's is missing", slices.Collect(maps.Keys(defs)))
	}
	for name, def := range defs {
		s := string(def)
		for _, p := range Placeholders(def) {
			v, ok := dummy[p]
			if !ok {
				t.Fatalf("%s: no dummy ARN for ${%s}", name, p)
			}
			s = strings.ReplaceAll(s, "${"+p+"}", v)
		}
		path := filepath.Join(t.TempDir(), name+".asl.json")
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(bin, "--json-path", path).CombinedOutput()
		if err != nil {
			t.Errorf("asl-validator %s: %v\n%s", name, err, out)
		} else {
			t.Logf("asl-validator %s: %s", name, strings.TrimSpace(string(out)))
		}
	}
}
