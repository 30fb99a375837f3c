// Command check is the check Lambda of the migration workflow: it hosts the
// steps workflow.Functions["check"] lists. Wiring only (pkg/function).
package main

import "github.com/rocklake/rocklake-migrate/pkg/function"

func main() { function.Main("check") }
