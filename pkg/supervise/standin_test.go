package supervise_test

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The stand-in RockLake: this test binary run as `TESTBIN standin NAME
// serve --catalog … --mode … [flags]` (through a script per format, so that
// each format has its own executable). It records its name and arguments in
// $STANDIN_LOG, listens on --bind until SIGTERM, and with $STANDIN_CRASH set
// exits at once with status 3, as a RockLake that cannot start would.
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "standin" {
		os.Exit(standin(os.Args[2], os.Args[3:]))
	}
	os.Exit(m.Run())
}

// launch is one start of the stand-in, as it recorded it.
type launch struct {
	Name    string   `json:"name"`
	Args    []string `json:"args"`
	Catalog string   `json:"catalog"`
	Mode    string   `json:"mode"`
}

func standin(name string, args []string) int {
	l := launch{Name: name, Args: args}
	bind := ""
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--catalog":
			l.Catalog = args[i+1]
		case "--mode":
			l.Mode = args[i+1]
		case "--bind":
			bind = args[i+1]
		}
	}
	b, _ := json.Marshal(l)
	if err := appendLine(os.Getenv("STANDIN_LOG"), string(b)); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv("STANDIN_CRASH") != "" {
		fmt.Fprintln(os.Stderr, "stand-in: crashing as asked")
		return 3
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	usr := make(chan os.Signal, 1)
	signal.Notify(usr, syscall.SIGUSR1)
	go func() {
		for range usr {
			note(name + " got SIGUSR1")
		}
	}()
	if os.Getenv("STANDIN_IGNORE_TERM") != "" {
		// A RockLake stuck in its drain.
		term = make(chan os.Signal, 1)
	}
	var ln net.Listener
	var err error
	if bind != "" {
		// The previous server may still be closing its listener.
		for range 100 {
			if ln, err = net.Listen("tcp", bind); err == nil {
				break
			}
			select {
			case <-term:
				return 0
			default:
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				// Says who answered, for the front's tests.
				_, _ = fmt.Fprintf(c, "%s %s %s\n", name, l.Catalog, l.Mode)
				c.Close()
			}
		}()
	}
	fmt.Printf("stand-in %s serving %s as %s\n", name, l.Catalog, l.Mode)
	<-term
	return 0
}

// note records what the stand-in saw in $STANDIN_LOG.notes.
func note(s string) { _ = appendLine(os.Getenv("STANDIN_LOG")+".notes", s) }

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintln(f, line)
	return err
}

// standins writes an executable per name that runs this test binary as the
// stand-in of that name; it returns their paths and the log they write.
func standins(t *testing.T, names ...string) (map[string]string, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "launches.ndjson")
	t.Setenv("STANDIN_LOG", log)
	paths := map[string]string{}
	for _, n := range names {
		p := filepath.Join(dir, n)
		script := fmt.Sprintf("#!/bin/sh\nexec %q standin %s \"$@\"\n", self, n)
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		paths[n] = p
	}
	return paths, log
}

// launches reads the stand-ins' log.
func launches(t *testing.T, log string) []launch {
	t.Helper()
	b, err := os.ReadFile(log)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []launch
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if line == "" {
			continue
		}
		var l launch
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("launch %q: %v", line, err)
		}
		out = append(out, l)
	}
	return out
}
