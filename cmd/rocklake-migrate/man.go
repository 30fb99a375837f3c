package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// newManCmd writes the man pages, generated from the commands themselves
// (make man runs it).
func newManCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "man --dir DIR",
		Short:   "write the man pages (section 1), one per command, into a directory",
		Example: `  rocklake-migrate man --dir /usr/local/share/man/man1`,
	}
	dir := c.Flags().String("dir", "", "the directory to write rocklake-migrate.1 and rocklake-migrate-COMMAND.1 into (created if missing)")
	return setup(e, c, defaultTimeout, 0, func(_ context.Context, _ []string) error {
		if *dir == "" {
			return usagef("--dir is required")
		}
		if err := os.MkdirAll(*dir, 0o755); err != nil {
			return fmt.Errorf("man: %w", err)
		}
		root := c.Root()
		root.DisableAutoGenTag = true // the same commands, the same pages
		hdr := &doc.GenManHeader{Title: "ROCKLAKE-MIGRATE", Section: "1", Source: "rocklake-migrate " + toolVersion(), Manual: "rocklake-migrate manual"}
		if err := doc.GenManTree(root, hdr, *dir); err != nil {
			return fmt.Errorf("man: %w", err)
		}
		fmt.Fprintf(e.stdout, "man pages written to %s\n", *dir)
		return nil
	})
}
