// Package lint holds the tree's own checks that no linter makes: tests that
// read the source, not the product.
package lint

import (
	"go/ast"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/gosource"
)

// maxFuncLines is the longest a non-test function may be (issue 38: a
// function does one thing; split it by what it does).
const maxFuncLines = 120

// No non-test function of the tree, the CDK module's included, is longer
// than maxFuncLines; generated code (proto/) is left out.
func TestNoLongFunctions(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	err := gosource.Walk(root, 0, func(p string, fset *token.FileSet, f *ast.File) error {
		n++
		for _, decl := range f.Decls {
			fd, ok := decl.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if lines := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; lines > maxFuncLines {
				t.Errorf("%s: %s is %d lines, over %d: split it by what it does", p, fd.Name.Name, lines, maxFuncLines)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 100 {
		t.Fatalf("read %d Go files: not the tree", n)
	}
}
