// Command export is the export Lambda of the migration workflow: it hosts the
// steps workflow.Functions["export"] lists. Wiring only (pkg/function).
package main

import "github.com/rocklake/rocklake-migrate/pkg/function"

func main() { function.Main("export") }
