package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

func init() {
	register("version", "print the catalog formats and the SlateDB engine this binary supports", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "version", "")
		if err := parse(fs, args); err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "catalog formats: %s, %s\nslatedb: %s\n", format.V1, format.V2, slatedb.EngineVersion())
		return nil
	})
}
