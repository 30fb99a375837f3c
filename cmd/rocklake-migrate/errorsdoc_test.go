package main

//go:generate go test . -run TestErrorsDoc -args -update-errors-doc

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/errdoc"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// errorsDoc is the operators' table of error names and exit codes.
var errorsDoc = filepath.Join("..", "..", "docs", "errors.md")

var updateErrorsDoc = flag.Bool("update-errors-doc", false, "rewrite "+errorsDoc+" from the named errors the packages declare")

// docs/errors.md is what the packages declare (internal/errdoc reads it),
// with the exit code each error gives this CLI: regenerated with go
// generate ./cmd/rocklake-migrate, never edited.
func TestErrorsDoc(t *testing.T) {
	root := filepath.Join("..", "..")
	decls, names, err := errdoc.Read(root)
	if err != nil {
		t.Fatal(err)
	}
	entries, _, unmade := errdoc.Join(decls, errname.All())
	for _, d := range unmade {
		t.Errorf("%s:%d: %s.%s is not linked into the CLI: docs/errors.md would miss it", d.File, d.Line, d.Package, d.Var)
	}
	codes := make([]errdoc.ExitCode, len(exitCodes))
	for i, c := range exitCodes {
		codes[i] = errdoc.ExitCode{Code: c.code, Meaning: c.meaning}
	}
	fails, err := errdoc.Fails(map[string][]byte{"migration": statemachine.Migration, "rollback": statemachine.Rollback, "drift": statemachine.Drift})
	if err != nil {
		t.Fatal(err)
	}
	want := errdoc.Markdown(entries, names, fails, codes, func(err error) string {
		code := exitCodeOf(err)
		if serve := exitCodeOf(served(err)); serve != code {
			return strconv.Itoa(code) + "; serve: " + strconv.Itoa(serve)
		}
		return strconv.Itoa(code)
	})
	if *updateErrorsDoc {
		if err := os.WriteFile(errorsDoc, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(errorsDoc)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("%s is not what the packages declare (%s): run go generate ./cmd/rocklake-migrate and commit it", errorsDoc, firstDifference(string(got), want))
	}
}

// firstDifference is the first line where got and want differ.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d is %q, want %q", i+1, a, b)
		}
	}
	return "same lines"
}
