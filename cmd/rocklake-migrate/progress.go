package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// isTerminal reports whether w is a character device: progress lines are
// for people watching, not for logs or pipes.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// showProgress redraws one status line on stderr every half second while
// work runs, when stderr is a terminal; it returns a stop function that
// clears the line.
func showProgress(ctx context.Context, e *env, what string, p *shard.Progress) func() {
	if !isTerminal(e.stderr) {
		return func() {}
	}
	start := time.Now()
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(e.stderr, "\r\033[K")
				return
			case <-ctx.Done():
				return
			case <-t.C:
				n := p.Records.Load()
				rate := float64(n) / time.Since(start).Seconds()
				fmt.Fprintf(e.stderr, "\r\033[K%s: %d records (%.0f/s), shards %d/%d",
					what, n, rate, p.ShardsDone.Load(), p.ShardsTotal.Load())
			}
		}
	}()
	return func() { close(done); <-stopped }
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
