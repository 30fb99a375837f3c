package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func init() {
	register("rollback", "make the pointer's previous version current again, and check the restored catalog", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "rollback", "--pointer s3://…")
		ptr := pointerFlag(fs)
		asJSON := fs.Bool("json", false, "print the result as JSON")
		if err := parse(fs, args); err != nil {
			return err
		}
		if err := needPointer(*ptr); err != nil {
			return err
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		out, err := workflow.Rollback(ctx, workflow.Env{Store: store}, workflow.RollbackInput{Pointer: *ptr})
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, out)
		}
		fmt.Fprintf(e.stdout, "rolled back: the pointer names %s (format %s) again, pointer version %s; startup check ok\n",
			out.Catalog, out.FormatVersion, out.PointerVersionID)
		return nil
	})
}
