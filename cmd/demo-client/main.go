// Command demo-client is `make demo`'s RockLake client: it commits a new
// schema through the RockLake server on 127.0.0.1:PORT every interval until
// SIGINT or SIGTERM, one line per acknowledged commit in --acked, and
// prints what it saw; with --check it verifies instead that every schema
// named in --acked is in the catalog the server serves. It is a test rig
// (internal/testenv/rocklake), not part of the product.
//
//	demo-client --port 5433 --acked /tmp/acked &   # commit until stopped
//	demo-client --port 5433 --acked /tmp/acked --check
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo-client:", err)
		os.Exit(1)
	}
}

func run() error {
	port := flag.Int("port", 0, "RockLake's port on 127.0.0.1")
	acked := flag.String("acked", "", "file of the acknowledged commits' schema names")
	every := flag.Duration("every", 200*time.Millisecond, "time between commits")
	check := flag.Bool("check", false, "verify that every acknowledged commit is in the served catalog, then exit")
	flag.Parse()
	if *port == 0 || *acked == "" {
		return fmt.Errorf("--port and --acked are required")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cl := rocklake.Client(*port)
	if *check {
		return checkAll(ctx, cl, *acked)
	}
	f, err := os.Create(*acked)
	if err != nil {
		return err
	}
	defer f.Close()
	ok, refused := 0, 0
	t := time.NewTicker(*every)
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			fmt.Printf("demo-client: %d commits acknowledged, %d refused (retried by the next one)\n", ok, refused)
			return f.Sync()
		case <-t.C:
		}
		name := fmt.Sprintf("demo_%05d", i)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := rocklake.AddSchema(cctx, cl, name)
		cancel()
		if err != nil {
			refused++
			continue
		}
		ok++
		if _, err := fmt.Fprintln(f, name); err != nil {
			return err
		}
	}
}

// checkAll reads the names in path and finds each among the served
// catalog's schemas, retrying for a while (the server may be restarting).
func checkAll(ctx context.Context, cl *rocklake.Server, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var want []string
	for s := bufio.NewScanner(strings.NewReader(string(b))); s.Scan(); {
		if n := strings.TrimSpace(s.Text()); n != "" {
			want = append(want, n)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		rows, err := cl.Query(ctx, "SELECT schema_name FROM ducklake_schema")
		if err == nil {
			have := map[string]bool{}
			for _, r := range rows {
				have[r["schema_name"]] = true
			}
			var missing []string
			for _, n := range want {
				if !have[n] {
					missing = append(missing, n)
				}
			}
			if len(missing) > 0 {
				return fmt.Errorf("%d of %d acknowledged commits are not in the served catalog: %v", len(missing), len(want), missing)
			}
			fmt.Printf("demo-client: all %d acknowledged commits are in the catalog the pointer names\n", len(want))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("reading the served catalog: %w", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
