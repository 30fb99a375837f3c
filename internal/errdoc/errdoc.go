// Package errdoc reads the named errors the tree declares from its source:
// every errname.New, errname.NewRetryable and errname.Kind call of a
// non-test file, where it is, which declaration holds it and that
// declaration's doc comment; and the names of failures no error carries
// (a package's Name* string constants beside its errors). internal/lint
// holds the declarations to the convention (pkg/errname), and
// cmd/rocklake-migrate writes docs/errors.md from them.
package errdoc

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake-migrate/internal/gosource"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
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
	var decls []Decl
	consts := map[string][]Name{} // by file
	err := gosource.Walk(root, parser.ParseComments, func(p string, fset *token.FileSet, f *ast.File) error {
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

// Entry is a declared error and the error it made.
type Entry struct {
	Decl
	Err *errname.Error
}

// Join pairs each declaration with the error it made (errname.All's, by
// where it was made): entries in the declarations' order, the errors made
// that no declaration read made, and the package-level declarations whose
// error was not made (their package is not linked in).
func Join(decls []Decl, all []*errname.Error) (entries []Entry, undeclared []*errname.Error, unmade []Decl) {
	made := map[string]*errname.Error{}
	for _, e := range all {
		file, line := e.Declared()
		made[filepath.ToSlash(file)+":"+strconv.Itoa(line)] = e
	}
	used := map[*errname.Error]bool{}
	for _, d := range decls {
		if d.Var == "" {
			continue // not a declaration: the convention's checks say so
		}
		var e *errname.Error
		for at, m := range made {
			if strings.HasSuffix(at, "/"+d.File+":"+strconv.Itoa(d.Line)) {
				e = m
			}
		}
		if e == nil {
			unmade = append(unmade, d)
			continue
		}
		used[e] = true
		entries = append(entries, Entry{Decl: d, Err: e})
	}
	for _, e := range all {
		if !used[e] {
			undeclared = append(undeclared, e)
		}
	}
	return entries, undeclared, unmade
}

// Fail is a Fail state of a definition that names its error itself (not
// from its input, as the states that pass a step's error on do).
type Fail struct {
	Machine, State, Name, Cause string
}

// Fails reads the Fail states of the definitions (by machine) that name
// their error, sorted by machine and state.
func Fails(defs map[string][]byte) ([]Fail, error) {
	var out []Fail
	for machine, def := range defs {
		var d struct {
			States map[string]struct {
				Type, Error, Cause string
			}
		}
		if err := json.Unmarshal(def, &d); err != nil {
			return nil, fmt.Errorf("%s: %w", machine, err)
		}
		for name, st := range d.States {
			if st.Type == "Fail" && st.Error != "" {
				out = append(out, Fail{Machine: machine, State: name, Name: st.Error, Cause: st.Cause})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Machine+out[i].State < out[j].Machine+out[j].State })
	return out, nil
}

// ExitCode is one of the CLI's exit codes.
type ExitCode struct {
	Code    int
	Meaning string
}

// Markdown is docs/errors.md: the CLI's exit codes, then each named error
// (sorted by name) with whether it is retried, the exit code exit gives
// for it, where it is declared, its message and its doc comment, then the
// names without an error: the constants', then the Fail states'.
func Markdown(entries []Entry, names []Name, fails []Fail, codes []ExitCode, exit func(error) string) string {
	var b strings.Builder
	b.WriteString(header)
	b.WriteString("\n## Exit codes\n\n| code | meaning |\n|---|---|\n")
	for _, c := range codes {
		fmt.Fprintf(&b, "| %d | %s |\n", c.Code, cell(c.Meaning))
	}
	b.WriteString(namedHeader)
	sorted := append([]Entry(nil), entries...)
	sort.SliceStable(sorted, func(i, j int) bool {
		a, c := sorted[i], sorted[j]
		if a.Err.ErrorName() != c.Err.ErrorName() {
			return a.Err.ErrorName() < c.Err.ErrorName()
		}
		return a.Package+"."+a.Var < c.Package+"."+c.Var
	})
	for _, x := range sorted {
		retried := "no"
		if x.Err.Retryable() {
			retried = "yes"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | [`%s.%s`](../%s) | `%s` | %s |\n", x.Err.ErrorName(), retried, exit(x.Err),
			x.Package, x.Var, x.File, cell(x.Err.Error()), cell(meaning(x.Var, x.Doc)))
	}
	b.WriteString(namesHeader)
	for _, n := range names {
		fmt.Fprintf(&b, "| %s | [`%s.%s`](../%s) | %s |\n", n.Value, n.Package, n.Const, n.File, cell(meaning(n.Const, n.Doc)))
	}
	for _, f := range fails {
		fmt.Fprintf(&b, "| %s | the %s state of [%s.asl.json](../statemachine/%s.asl.json) | %s |\n", f.Name, f.State, f.Machine, f.Machine, cell(f.Cause))
	}
	return b.String()
}

const header = `# Error names and exit codes

<!-- Generated from the named errors the packages declare (pkg/errname)
by cmd/rocklake-migrate's TestErrorsDoc: do not edit; regenerate with
go generate ./cmd/rocklake-migrate -->

Every failure of the workflow's steps, its Lambdas and the CLI has a
stable **name** beside its message: the name the state machines' Retry and
Catch match (statemachine/*.asl.json), the history records keep
(error_name), the CLI's JSON gives and the alarms match. The names are a
contract: renaming one changes what all of those match. A message reads
"<package>: <Name>: <what happened>"; a failure wrapped in another answers
to the outermost named error in it, else to StepFailed.
`

const namedHeader = `
## Named errors

**retried**: the failure is worth retrying as it is, and the state
machines retry it (its name is one their Retry blocks match); any other
goes to the Catch. **exit**: the CLI's exit code when a command fails with
it. Several errors share a class name (Transient, CorruptCatalog,
ShardCorrupt, S3Unreachable): errors.Is tells them apart, the name does not.

| name | retried | exit | declared as | message | meaning |
|---|---|---|---|---|---|
`

const namesHeader = `
## Names without an error

Names the records, the state machines or the CLI give to failures that no
error above carries.

| name | declared as | meaning |
|---|---|---|
`

// meaning is a doc comment as one line, without the "ErrX: " it opens with.
func meaning(ident, doc string) string {
	doc = strings.Join(strings.Fields(doc), " ")
	return strings.TrimPrefix(doc, ident+": ")
}

// cell escapes s for a table cell.
func cell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
