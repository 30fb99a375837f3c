// Package gosource walks the tree's own Go source: every non-test file
// below a root, parsed, with generated and foreign trees (proto/, native/,
// testdata/, build outputs, dot directories) left out. The tree's own
// checks (internal/lint) and the docs it generates from its source
// (internal/errdoc) read the same files through it.
package gosource

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
)

// skipped are the directories whose Go files are not the tree's own.
var skipped = map[string]bool{"proto": true, "cdk.out": true, "node_modules": true, "target": true, "dist": true, "native": true, "testdata": true}

// Walk calls fn with every non-test Go file below root, parsed with mode,
// in lexical order; fn's error stops the walk and is Walk's.
func Walk(root string, mode parser.Mode, fn func(path string, fset *token.FileSet, f *ast.File) error) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (skipped[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, mode)
		if err != nil {
			return err
		}
		return fn(p, fset, f)
	})
}
