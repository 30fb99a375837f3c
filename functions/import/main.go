// Command import is the import Lambda of the migration workflow: it hosts the
// steps workflow.Functions["import"] lists. Wiring only (pkg/function).
package main

import "github.com/rocklake/rocklake-migrate/pkg/function"

func main() { function.Main("import") }
