package main

import (
	"bufio"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

func newInspectCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:   "inspect --catalog URL [--table NAME[,NAME...]|all] [--json]",
		Short: "print a catalog's row counts per table, counters and system keys, or a table's rows",
		Example: `  rocklake-migrate inspect --catalog s3://b/catalogs/prod
  rocklake-migrate inspect --catalog s3://b/catalogs/prod --table ducklake_data_file,ducklake_snapshot`,
	}
	fs := c.Flags()
	url := catalogFlag(fs)
	table := fs.String("table", "", "print these tables' decoded rows, one JSON object per line: NAME[,NAME...] (e.g. ducklake_data_file), or all")
	asJSON := jsonFlag(fs, "print one JSON document that depends only on the catalog's contents")
	return setup(e, c, time.Hour, 0, func(ctx context.Context, args []string) error {
		if err := needCatalog(*url); err != nil {
			return err
		}
		tags, err := parseTables(*table)
		if err != nil {
			return err
		}
		c, err := catalog.Open(ctx, *url, catalog.Options{})
		if err != nil {
			return err
		}
		defer c.Close()
		if *asJSON {
			return c.InspectJSON(ctx, e.stdout, tags...)
		}
		if len(tags) > 0 {
			return printRows(ctx, e, c, tags)
		}
		s, err := c.Summary(ctx)
		if err != nil {
			return err
		}
		printSummary(e, s)
		return nil
	})
}

// parseTables parses --table: names of known tags, comma-separated, or
// "all" for every one of them.
func parseTables(arg string) ([]format.Tag, error) {
	if arg == "" {
		return nil, nil
	}
	if arg == "all" {
		return format.KnownTags(), nil
	}
	var tags []format.Tag
	for _, name := range strings.Split(arg, ",") {
		t, ok := format.TagByName(name)
		if !ok {
			var names []string
			for _, t := range format.KnownTags() {
				names = append(names, t.Name())
			}
			return nil, usagef("--table: unknown table %q (known: all, %s)", name, strings.Join(names, ", "))
		}
		tags = append(tags, t)
	}
	// Key order, each once: the order InspectJSON uses.
	slices.Sort(tags)
	return slices.Compact(tags), nil
}

func printRows(ctx context.Context, e *env, c *catalog.Catalog, tags []format.Tag) error {
	w := bufio.NewWriter(e.stdout)
	for _, t := range tags {
		for row, err := range c.Scan(ctx, t) {
			if err != nil {
				return err
			}
			line, err := row.MarshalJSON()
			if err != nil {
				return err
			}
			w.Write(line)
			w.WriteByte('\n')
		}
	}
	return w.Flush()
}

func printSummary(e *env, s *catalog.Summary) {
	fmt.Fprintf(e.stdout, "catalog format version %d (%s)\n\nrows per table:\n", s.FormatVersion, s.FormatVersion)
	var total uint64
	for _, t := range format.KnownTags() {
		if n, ok := s.Tables[t.Name()]; ok {
			fmt.Fprintf(e.stdout, "  %-40s %10d\n", t.Name(), n)
			total += n
		}
	}
	fmt.Fprintf(e.stdout, "  %-40s %10d\n", "total", total)
	if len(s.UnknownTags) > 0 {
		fmt.Fprintf(e.stdout, "\nkeys of tags unknown to this binary (skipped by readers):\n")
		printValues(e, s.UnknownTags)
	}
	fmt.Fprintf(e.stdout, "\ncounters:\n")
	printValues(e, s.Counters)
	fmt.Fprintf(e.stdout, "\nsystem keys:\n")
	printSorted(e.stdout, "  %-40s %s\n", s.System)
}

func printValues(e *env, m map[string]uint64) {
	printSorted(e.stdout, "  %-40s %10d\n", m)
}
