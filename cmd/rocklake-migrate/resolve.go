package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/supervise"
)

func newResolveCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "resolve --pointer s3://… [--field catalog|url|format] [--json]",
		Short: "print the catalog the pointer names now, as `rocklake serve --catalog` takes it",
		Long: `resolve reads the pointer and prints the catalog it names now, checked to be
there (a SlateDB manifest), for systemd units, ECS task definitions and scripts:

  rocklake serve --catalog "$(rocklake-migrate resolve --pointer s3://b/rocklake/CURRENT)"

--field url prints the pointer's URL as written (a local catalog as file:///…,
which RockLake does not take), --field format its format (v1, v2: which binary
to run), --json all of it. A missing pointer is PointerMissing, a malformed one
BadPointer, one that cannot be read PointerUnreadable, one naming no catalog
PointerDangling (RockLake would create an empty catalog there); each exits 1.`,
		Example: `  rocklake-migrate resolve --pointer s3://b/rocklake/CURRENT --json
  rocklake serve --catalog "$(rocklake-migrate resolve --pointer s3://b/rocklake/CURRENT)" --bind 0.0.0.0:5432`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	field := fs.String("field", "catalog", "what to print: catalog (as rocklake serve takes it), url (as the pointer has it) or format")
	asJSON := jsonFlag(fs, "print the pointer's catalog, format, generation and version as JSON")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if *field != "catalog" && *field != "url" && *field != "format" {
			return usagef("--field %q: want catalog, url or format", *field)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		r, err := supervise.Resolve(ctx, store, *ptr)
		if err != nil {
			return err
		}
		switch {
		case *asJSON:
			return printJSON(e.stdout, r)
		case *field == "url":
			fmt.Fprintln(e.stdout, r.Catalog)
		case *field == "format":
			fmt.Fprintln(e.stdout, r.FormatVersion)
		default:
			fmt.Fprintln(e.stdout, r.ServeCatalog)
		}
		return nil
	})
}
