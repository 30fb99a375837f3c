package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

func newStatusCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "status --pointer s3://…",
		Short:   "show the pointer, the catalog it names and the pointer's history",
		Example: `  rocklake-migrate status --pointer s3://b/rocklake/CURRENT`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	asJSON := jsonFlag(fs, "print as JSON")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		p, ref, err := pointer.Read(ctx, store, *ptr)
		if err != nil {
			return err
		}
		hist, err := pointer.History(ctx, store, *ptr)
		if err != nil {
			return err
		}
		check := "ok"
		if c, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: p.FormatVersion}); err != nil {
			check = err.Error()
		} else {
			c.Close()
		}
		if *asJSON {
			return printJSON(e.stdout, map[string]any{"pointer": p, "ref": ref, "check": check, "history": hist})
		}
		fmt.Fprintf(e.stdout, "pointer %s (version %s)\n  catalog %s, format %s, migration %s, updated %s\n  startup check: %s\n",
			*ptr, ref.VersionID, p.Catalog, p.FormatVersion, p.MigrationID, p.UpdatedAt.Format("2006-01-02 15:04:05Z07:00"), check)
		fmt.Fprintln(e.stdout, "history (newest first):")
		for _, h := range hist {
			line := fmt.Sprintf("  %s %s", h.LastModified.Format("2006-01-02 15:04:05"), h.VersionID)
			if h.Pointer != nil {
				line += fmt.Sprintf("  %s (%s) by %s", h.Pointer.Catalog, h.Pointer.FormatVersion, h.Pointer.MigrationID)
			}
			if h.Current {
				line += "  [current]"
			}
			fmt.Fprintln(e.stdout, line)
		}
		return nil
	})
}
