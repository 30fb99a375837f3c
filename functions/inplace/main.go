// Command inplace is the inplace Lambda of the migration workflow: it hosts the
// steps workflow.Functions["inplace"] lists. Wiring only (pkg/function).
package main

import "github.com/rocklake/rocklake-migrate/pkg/function"

func main() { function.Main("inplace") }
