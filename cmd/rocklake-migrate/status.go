package main

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

func init() {
	register("status", "show the pointer, the catalog it names and the pointer's history", func(ctx context.Context, e *env, args []string) error {
		fs := flags(e, "status", "--pointer s3://…")
		ptr := pointerFlag(fs)
		asJSON := fs.Bool("json", false, "print as JSON")
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
