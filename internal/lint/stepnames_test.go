package lint

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/gosource"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Each step's name is spelled once in the product's Go code
// (statemachine/steps.go): no other non-test file of pkg/, cmd/ or
// functions/ has a string literal equal to a step's name, so renaming a
// step in the definitions is one change here, held by the step table's
// test. Struct tags and named errors' names are other words.
func TestStepNamesAreSpelledOnce(t *testing.T) {
	names := map[string]bool{}
	for _, st := range workflow.StepTable {
		names[st.Name] = true
	}
	root := filepath.Join("..", "..")
	for _, dir := range []string{"pkg", "cmd", "functions"} {
		err := gosource.Walk(filepath.Join(root, dir), 0, func(p string, fset *token.FileSet, f *ast.File) error {
			ast.Inspect(f, func(n ast.Node) bool {
				switch n := n.(type) {
				case *ast.Field:
					return false // a struct tag
				case *ast.CallExpr:
					if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "New" {
						if id, ok := sel.X.(*ast.Ident); ok && id.Name == "errname" {
							return false // an error's name
						}
					}
				case *ast.BasicLit:
					if s, err := strconv.Unquote(n.Value); n.Kind == token.STRING && err == nil && names[s] {
						t.Errorf("%s: the step name %q spelled again: use statemachine.Step%s", fset.Position(n.Pos()), s, s)
					}
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
