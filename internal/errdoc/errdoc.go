// Package errdoc reads the named errors the tree declares from its source:
// every errname.New, errname.NewRetryable and errname.Kind call of a
// non-test file, where it is, which declaration holds it and that
// declaration's doc comment; and the names of failures no error carries
// (a package's Name* string constants beside its errors). internal/lint
// holds the declarations to the convention (pkg/errname), and
// cmd/rocklake-migrate writes docs/errors.md from them.
package errdoc

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
)

// Decl is one call of errname's constructors in the source.
type Decl struct {
	Dir     string // the package's directory, from the root: "pkg/blob"
	Package string // the Go package's name
	File    string // from the root, slash-separated
	Line    int    // the call's line
	Func    string // New, NewRetryable or Kind
	// PkgArg and NameArg are the package and name arguments when they are
	// string literals ("" when not); NameExpr is the name argument as
	// written (a constant's identifier for a class name several errors
	// share: errname.Transient, NameShardCorrupt).
	PkgArg, NameArg, NameExpr string
	// Var is the package-level variable the call initialises ("" when the
	// call is not a package-level variable's whole value), and Doc its doc
	// comment (the spec's, else its declaration's when alone).
	Var, Doc string
	// Block is where the var declaration holding the call starts
	// ("file:line"), "" when none does.
	Block string
}

// Name is a name of failures that no error carries: a documented Name*
// string constant in the file of its package's errors.
type Name struct {
	Dir, Package, File string
	Const, Value, Doc  string
}

// constructors are errname's functions that declare a named error.
var constructors = map[string]bool{"New": true, "NewRetryable": true, "Kind": true}

// Read reads every non-test Go file under root (generated and vendored
// trees left out) and returns the errors declared and the names without
// an error, in file order.
func Read(root string) ([]Decl, []Name, error) {
	fset := token.NewFileSet()
	var decls []Decl
	consts := map[string][]Name{} // by file
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "proto", "cdk.out", "node_modules", "target", "dist", "native", "testdata":
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		r := fileReader{fset: fset, file: f, rel: rel, dir: filepath.ToSlash(filepath.Dir(rel))}
		decls = append(decls, r.decls()...)
		consts[rel] = r.names()
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	// A package's names without an error are the Name* constants in the
	// file of its errors, but for the class names its errors carry.
	var names []Name
	seen := map[string]bool{}
	for _, d := range decls {
		if d.Block == "" || seen[d.File] {
			continue
		}
		seen[d.File] = true
		for _, n := range consts[d.File] {
			if !usedAsName(decls, n.Const) {
				names = append(names, n)
			}
		}
	}
	return decls, names, nil
}

// usedAsName reports whether a declaration names its error by the constant
// c (a class name).
func usedAsName(decls []Decl, c string) bool {
	for _, d := range decls {
		if d.NameExpr == c || strings.HasSuffix(d.NameExpr, "."+c) {
			return true
		}
	}
	return false
}

// fileReader reads one file.
type fileReader struct {
	fset      *token.FileSet
	file      *ast.File
	rel, dir  string
	errnameAs string // the name errname is imported as, "" when it is not
}

// decls finds the file's calls of errname's constructors.
func (r *fileReader) decls() []Decl {
	for _, imp := range r.file.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == "github.com/rocklake/rocklake-migrate/pkg/errname" {
			r.errnameAs = "errname"
			if imp.Name != nil {
				r.errnameAs = imp.Name.Name
			}
		}
	}
	if r.errnameAs == "" {
		return nil
	}
	// Every call, then the package-level variables they initialise.
	var out []Decl
	at := map[*ast.CallExpr]int{}
	ast.Inspect(r.file, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || !constructors[sel.Sel.Name] {
			return true
		}
		if x, ok := sel.X.(*ast.Ident); !ok || x.Name != r.errnameAs {
			return true
		}
		at[call] = len(out)
		out = append(out, r.decl(call, sel.Sel.Name))
		return true
	})
	for _, gd := range r.file.Decls {
		gen, ok := gd.(*ast.GenDecl)
		if !ok || gen.Tok != token.VAR {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, v := range vs.Values {
				call, ok := v.(*ast.CallExpr)
				if !ok || i >= len(vs.Names) {
					continue
				}
				j, ok := at[call]
				if !ok {
					continue
				}
				doc := vs.Doc
				if doc == nil && len(gen.Specs) == 1 {
					doc = gen.Doc
				}
				out[j].Var, out[j].Doc = vs.Names[i].Name, doc.Text()
				out[j].Block = r.rel + ":" + strconv.Itoa(r.fset.Position(gen.Pos()).Line)
			}
		}
	}
	return out
}

// decl is the call's declaration, but for where it lies.
func (r *fileReader) decl(call *ast.CallExpr, fn string) Decl {
	d := Decl{Dir: r.dir, Package: r.file.Name.Name, File: r.rel, Line: r.fset.Position(call.Pos()).Line, Func: fn}
	args := call.Args
	if fn == "Kind" && len(args) > 0 {
		args = args[1:]
	}
	if len(args) >= 2 {
		d.PkgArg = literal(args[0])
		d.NameArg = literal(args[1])
		d.NameExpr = expr(args[1])
	}
	return d
}

// names are the file's documented Name* string constants.
func (r *fileReader) names() []Name {
	var out []Name
	for _, gd := range r.file.Decls {
		gen, ok := gd.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			vs := spec.(*ast.ValueSpec)
			if len(vs.Names) != 1 || len(vs.Values) != 1 || !strings.HasPrefix(vs.Names[0].Name, "Name") {
				continue
			}
			value := literal(vs.Values[0])
			if value == "" {
				continue
			}
			doc := vs.Doc
			if doc == nil && len(gen.Specs) == 1 {
				doc = gen.Doc
			}
			out = append(out, Name{Dir: r.dir, Package: r.file.Name.Name, File: r.rel, Const: vs.Names[0].Name, Value: value, Doc: doc.Text()})
		}
	}
	return out
}

// literal is e's value when it is a string literal, else "".
func literal(e ast.Expr) string {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return ""
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return ""
	}
	return s
}

// expr is e as written, for an identifier, a selector or a literal.
func expr(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return expr(e.X) + "." + e.Sel.Name
	case *ast.BasicLit:
		return e.Value
	}
	return ""
}
