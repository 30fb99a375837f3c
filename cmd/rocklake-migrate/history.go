package main

import (
	"github.com/spf13/cobra"

	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

func newHistoryCmd(e *env) *cobra.Command {
	c := &cobra.Command{
		Use:     "history --pointer s3://… [--json] [--limit N]",
		Short:   "list the runs recorded beside the pointer (migrations, dry runs, rollbacks, ...), newest first",
		Example: `  rocklake-migrate history --pointer s3://b/rocklake/CURRENT --limit 10`,
	}
	fs := c.Flags()
	ptr := pointerFlag(fs)
	asJSON := jsonFlag(fs, "print as JSON")
	limit := fs.Int("limit", 20, "at most this many runs (0: all)")
	return setup(e, c, defaultTimeout, 0, func(ctx context.Context, args []string) error {
		if err := needPointer(*ptr); err != nil {
			return err
		}
		if *limit < 0 {
			return usagef("--limit %d: want 0 (all) or more", *limit)
		}
		store, err := blob.New(ctx)
		if err != nil {
			return err
		}
		runs, err := history.List(ctx, store, *ptr, *limit)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(e.stdout, runs)
		}
		if len(runs) == 0 {
			fmt.Fprintf(e.stdout, "no runs recorded under %s\n", layout.HistoryDir(*ptr))
			return nil
		}
		now := time.Now()
		for _, r := range runs {
			if r.ReadError != "" {
				fmt.Fprintf(e.stdout, "%s  unreadable record %s: %s\n", r.ID, r.URL, r.ReadError)
				continue
			}
			outcome := string(r.Outcome)
			if r.ErrorName != "" {
				outcome += " (" + r.ErrorName + ")"
			}
			fmt.Fprintf(e.stdout, "%s  %-8s %-20s %s  %s  by %s\n", r.Start.Format("2006-01-02 15:04:05Z"), r.Kind, outcome,
				r.Duration(now).Round(time.Millisecond), r.ID, r.Trigger)
			if r.Source != "" || r.Target != "" {
				fmt.Fprintf(e.stdout, "    %s (%s) → %s (%s)\n", r.Source, r.From, r.Target, r.To)
			}
			if r.Rows > 0 || r.Bytes > 0 {
				fmt.Fprintf(e.stdout, "    %d rows, %d shard bytes, %d shards\n", r.Rows, r.Bytes, r.Shards)
			}
			if len(r.StateSeconds) > 0 {
				fmt.Fprintf(e.stdout, "    time per state: %s\n", stateTimes(r.StateSeconds))
			}
			printOnline(e.stdout, r.Online, "    ")
			if r.Error != "" {
				fmt.Fprintf(e.stdout, "    error: %s\n", r.Error)
			}
			for _, n := range r.Notes {
				fmt.Fprintf(e.stdout, "    note: %s\n", n)
			}
		}
		return nil
	})
}

// printOnline prints an online run's rounds and write freeze (nothing for
// another run), each line after indent.
func printOnline(w io.Writer, o *history.Online, indent string) {
	if o == nil {
		return
	}
	if o.Offline != "" {
		fmt.Fprintf(w, "%sonline: migrated offline, write freeze %.2f s (fence to flip): %s\n", indent, o.FreezeSeconds, o.Offline)
		return
	}
	fmt.Fprintf(w, "%sonline: %d catch-up rounds, write freeze %.2f s (fence to flip)\n", indent, len(o.Rounds), o.FreezeSeconds)
	if b := o.Backlog; b != nil {
		fmt.Fprintf(w, "%s  fence: RockLake's WAL backlog, %d WAL SSTs (%s), fetched ahead in %.2f s\n", indent, b.WALSSTs, bytesHuman(b.Bytes), b.FetchSeconds)
	}
	for _, rd := range o.Rounds {
		when := ""
		if rd.Last {
			when = ", after the fence"
		}
		fmt.Fprintf(w, "%s  round %d: %d keys in %.2f s (%s, %d candidates%s)\n", indent, rd.Round, rd.Keys, rd.Seconds, rd.Method, rd.Candidates, when)
		if rd.Reason != "" {
			fmt.Fprintf(w, "%s    %s\n", indent, rd.Reason)
		}
	}
}

// stateTimes prints seconds per state, in name order.
func stateTimes(secs map[string]float64) string {
	names := make([]string, 0, len(secs))
	for n := range secs {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %s", n, (time.Duration(secs[n]*float64(time.Second))).Round(time.Millisecond)))
	}
	return strings.Join(parts, ", ")
}
