package lint

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/errdoc"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/statemachine"

	// Every package that declares named errors, for errname.All to hold
	// them: TestNamedErrorsAreDeclared fails naming one missing here.
	_ "github.com/rocklake/rocklake-migrate/pkg/asl"
	_ "github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	_ "github.com/rocklake/rocklake-migrate/pkg/blob"
	_ "github.com/rocklake/rocklake-migrate/pkg/catalog"
	_ "github.com/rocklake/rocklake-migrate/pkg/claim"
	_ "github.com/rocklake/rocklake-migrate/pkg/format"
	_ "github.com/rocklake/rocklake-migrate/pkg/inplace"
	_ "github.com/rocklake/rocklake-migrate/pkg/lock"
	_ "github.com/rocklake/rocklake-migrate/pkg/migration"
	_ "github.com/rocklake/rocklake-migrate/pkg/ndjson"
	_ "github.com/rocklake/rocklake-migrate/pkg/notify"
	_ "github.com/rocklake/rocklake-migrate/pkg/operator"
	_ "github.com/rocklake/rocklake-migrate/pkg/pointer"
	_ "github.com/rocklake/rocklake-migrate/pkg/presence"
	_ "github.com/rocklake/rocklake-migrate/pkg/shard"
	_ "github.com/rocklake/rocklake-migrate/pkg/slatedb"
	_ "github.com/rocklake/rocklake-migrate/pkg/supervise"
	_ "github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// The convention of pkg/errname, read from the source: each package
// declares its named errors in one var declaration, each a package-level
// variable with a doc comment, its message after its package ("<package>:
// <Name>..."); a name written as a literal is one error's, and a class name
// several errors share is a constant; a name without an error is a
// documented Name* constant beside the errors.
func TestNamedErrorsFollowTheConvention(t *testing.T) {
	decls, names := readDecls(t)
	blocks := packageBlocks(decls)
	literals := map[string]string{}
	classes := map[string]int{}
	for _, d := range decls {
		at := fmt.Sprintf("%s:%d", d.File, d.Line)
		switch {
		case d.Block == "" || d.Var == "":
			t.Errorf("%s: errname.%s outside a package-level var declaration (its whole value): declare it in %s's errors", at, d.Func, d.Package)
			continue
		case d.Block != blocks[d.Dir]:
			t.Errorf("%s: %s is declared apart from %s's other named errors (%s): one var block per package", at, d.Var, d.Package, blocks[d.Dir])
		}
		if strings.TrimSpace(d.Doc) == "" {
			t.Errorf("%s: %s has no doc comment: say what failed, for docs/errors.md", at, d.Var)
		}
		if d.PkgArg != d.Package {
			t.Errorf("%s: %s is declared as package %q, not %q: its message must start with its package", at, d.Var, d.PkgArg, d.Package)
		}
		switch {
		case d.NameArg != "" && literals[d.NameArg] != "":
			t.Errorf("%s: %s takes the name %s, %s's already: a name several errors share is a documented class constant", at, d.Var, d.NameArg, literals[d.NameArg])
		case d.NameArg != "":
			literals[d.NameArg] = d.Package + "." + d.Var
		case d.NameExpr == "":
			t.Errorf("%s: %s's name is neither a literal nor a constant", at, d.Var)
		case strings.Contains(d.NameExpr, "."):
			classes[d.NameExpr]++
		default:
			classes[d.Package+"."+d.NameExpr]++
		}
	}
	for c, n := range classes {
		if n < 2 {
			t.Errorf("the class name %s names one error: write the name in its declaration", c)
		}
	}
	for _, n := range names {
		if strings.TrimSpace(n.Doc) == "" {
			t.Errorf("%s: %s, a name without an error, has no doc comment", n.File, n.Const)
		}
	}
	if len(blocks) < 10 {
		t.Fatalf("found the named errors of %d packages: not the tree", len(blocks))
	}
}

// packageBlocks is each package's block of named errors: the var
// declaration that holds most of them.
func packageBlocks(decls []errdoc.Decl) map[string]string {
	count := map[string]map[string]int{}
	for _, d := range decls {
		if d.Block == "" || d.Var == "" {
			continue
		}
		if count[d.Dir] == nil {
			count[d.Dir] = map[string]int{}
		}
		count[d.Dir][d.Block]++
	}
	blocks := map[string]string{}
	for dir, n := range count {
		for b := range n {
			if best := blocks[dir]; best == "" || n[b] > n[best] || (n[b] == n[best] && b < best) {
				blocks[dir] = b
			}
		}
	}
	return blocks
}

// errname.All, the errors the process made, is what the source declares:
// every declaration is made (its package is imported above), every error
// made is declared, and no two say the same.
func TestNamedErrorsAreDeclared(t *testing.T) {
	decls, _ := readDecls(t)
	entries, undeclared, unmade := errdoc.Join(decls, errname.All())
	for _, e := range undeclared {
		file, line := e.Declared()
		t.Errorf("%s (%s:%d) is made but declared nowhere errdoc reads", e, file, line)
	}
	for _, d := range unmade {
		t.Errorf("%s:%d: %s.%s is not in errname.All: import %s in this test", d.File, d.Line, d.Package, d.Var, d.Dir)
	}
	said := map[string]string{}
	for _, x := range entries {
		if x.Err.Package() != x.Package || (x.NameArg != "" && x.Err.ErrorName() != x.NameArg) {
			t.Errorf("%s:%d: %s.%s reads %q", x.File, x.Line, x.Package, x.Var, x.Err)
		}
		if other, dup := said[x.Err.Error()]; dup {
			t.Errorf("%s.%s and %s both say %q: tell them apart by their text", x.Package, x.Var, other, x.Err)
		}
		said[x.Err.Error()] = x.Package + "." + x.Var
	}
	if len(entries) < 50 {
		t.Fatalf("%d named errors: not the tree's", len(entries))
	}
}

// Retryability and the state machines' Retry agree: the names a Retry
// matches (but Step Functions' States.* and Lambda.*) are those of the
// retryable errors, and no error that is not retryable carries one.
func TestRetriedNamesAreTheRetryableErrors(t *testing.T) {
	retried := map[string]bool{}
	for file, def := range map[string][]byte{"migration": statemachine.Migration, "rollback": statemachine.Rollback, "drift": statemachine.Drift} {
		var v any
		if err := json.Unmarshal(def, &v); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		for _, name := range retryNames(v) {
			if !strings.HasPrefix(name, "States.") && !strings.HasPrefix(name, "Lambda.") {
				retried[name] = true
			}
		}
	}
	if len(retried) == 0 {
		t.Fatal("the definitions retry no error of the steps")
	}
	carried := map[string]bool{}
	var wrong []string
	for _, e := range errname.All() {
		if e.Retryable() != retried[e.ErrorName()] {
			wrong = append(wrong, fmt.Sprintf("%q (retryable %v, its name retried %v)", e, e.Retryable(), retried[e.ErrorName()]))
		}
		if e.Retryable() {
			carried[e.ErrorName()] = true
		}
	}
	sort.Strings(wrong)
	for _, w := range wrong {
		t.Errorf("%s: declare a retried failure with errname.NewRetryable and a name the Retry blocks match, any other with a name they do not", w)
	}
	for name := range retried {
		if !carried[name] {
			t.Errorf("the definitions retry %s, which no retryable error carries", name)
		}
	}
}

// readDecls reads the tree's declarations.
func readDecls(t *testing.T) ([]errdoc.Decl, []errdoc.Name) {
	t.Helper()
	decls, names, err := errdoc.Read(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return decls, names
}

// retryNames collects the ErrorEquals entries of every Retry in a
// definition.
func retryNames(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if k != "Retry" {
				out = append(out, retryNames(x)...)
				continue
			}
			for _, r := range x.([]any) {
				for _, n := range r.(map[string]any)["ErrorEquals"].([]any) {
					out = append(out, n.(string))
				}
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, retryNames(x)...)
		}
	}
	return out
}
