package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/rocklake/rocklake-migrate/pkg/progress"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A mistyped command is a usage error that suggests the right one.
func TestTypoSuggestions(t *testing.T) {
	cli(t, "migrat", "--pointer", "s3://b/CURRENT").want(t, exitUsage, `unknown command "migrat"`, "Did you mean this?", "\tmigrate\n")
	cli(t, "rolback").want(t, exitUsage, "Did you mean this?", "\trollback\n")
	cli(t, "kv", "gett", "00").want(t, exitUsage, `unknown subcommand "gett"`, "did you mean get?")
	cli(t, "kv").want(t, exitUsage, "kv needs a subcommand")
	cli(t, "check", "--catalgo", "file:///x").want(t, exitUsage, "unknown flag: --catalgo", "rocklake-migrate check --help")
	// No command at all: the help, on stderr, and a usage error.
	r := cli(t)
	r.want(t, exitUsage, "a command is required", "Available Commands:")
	if r.stdout != "" {
		t.Fatalf("stdout = %q", r.stdout)
	}
}

// every command of the tree, subcommands included, but cobra's own.
func allCommands(c *cobra.Command) []*cobra.Command {
	var out []*cobra.Command
	for _, sub := range c.Commands() {
		out = append(out, sub)
		out = append(out, allCommands(sub)...)
	}
	return out
}

// --help goes to stdout, exits 0, and every command's has an example.
func TestHelpOnStdoutWithExamples(t *testing.T) {
	cmds := allCommands(newRoot(&env{}))
	if len(cmds) < 20 {
		t.Fatalf("only %d commands", len(cmds))
	}
	for _, c := range cmds {
		args := append(strings.Fields(strings.TrimPrefix(c.CommandPath(), "rocklake-migrate ")), "--help")
		r := cli(t, args...)
		r.want(t, exitOK)
		// A command that runs has --timeout; kv only groups its subcommands.
		if r.stderr != "" || !strings.Contains(r.stdout, "Examples:\n  rocklake-migrate "+strings.Join(args[:len(args)-1], " ")) ||
			(!c.HasSubCommands() && !strings.Contains(r.stdout, "--timeout")) {
			t.Errorf("%s --help: stdout %q, stderr %q: want an example of the command and its flags on stdout", c.CommandPath(), r.stdout, r.stderr)
		}
	}
	r := cli(t, "--help")
	r.want(t, exitOK)
	for _, want := range []string{"Exit codes:", "  3  FormatVersionMismatch", "migrate", "completion"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("root help lacks %q:\n%s", want, r.stdout)
		}
	}
	// Flags may follow arguments; help is help wherever it stands.
	cli(t, "kv", "get", "00", "--help").want(t, exitOK)
}

// --timeout must be a positive duration, refused before anything runs.
func TestTimeoutFlag(t *testing.T) {
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "0s").want(t, exitUsage, "--timeout 0s: want a positive duration")
	cli(t, "status", "--pointer", "s3://b/CURRENT", "--timeout", "soon").want(t, exitUsage, `invalid argument "soon" for "--timeout"`)
}

// lateCtx is a context whose deadline is past while its timer has not run
// yet: a busy machine, the engine's own timer first.
type lateCtx struct {
	context.Context
	dl time.Time
}

func (c lateCtx) Deadline() (time.Time, bool) { return c.dl, true }

// A command's deadline is over when the clock says so, before its
// context's timer ran: the engine's timeout is then the command's
// --timeout, named as such.
func TestDeadlinePassed(t *testing.T) {
	past, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	for ctx, want := range map[context.Context]bool{
		context.Background(): false,
		past:                 true,
		lateCtx{context.Background(), time.Now().Add(-time.Millisecond)}: true,
		lateCtx{context.Background(), time.Now().Add(time.Hour)}:         false,
	} {
		if got := deadlinePassed(ctx); got != want {
			t.Errorf("deadlinePassed(%v) = %v, want %v", ctx, got, want)
		}
	}
}

// --version and version print the tool's version and build, the SlateDB
// engine linked and the catalog formats.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		r := cli(t, args...)
		r.want(t, exitOK)
		want := "rocklake-migrate " + toolVersion() + "\nbuild: " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH +
			"\nslatedb: " + slatedb.EngineVersion() + "\ncatalog formats: 1 (v1), 2 (v2)\n"
		if r.stdout != want {
			t.Errorf("%v printed %q, want %q", args, r.stdout, want)
		}
	}
	if toolVersion() == "" || slatedb.EngineVersion() != "0.13.1" {
		t.Fatalf("version %q, engine %q", toolVersion(), slatedb.EngineVersion())
	}
	old := version
	version = "v1.2.3-4-gabcdef"
	defer func() { version = old }()
	if r := cli(t, "version"); !strings.HasPrefix(r.stdout, "rocklake-migrate v1.2.3-4-gabcdef\n") {
		t.Fatalf("the -ldflags version is not the one printed: %q", r.stdout)
	}
}

// completion writes each shell's script, naming the commands.
func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash": "# bash completion V2 for rocklake-migrate",
		"zsh":  "#compdef rocklake-migrate",
		"fish": "complete -c rocklake-migrate",
	} {
		r := cli(t, "completion", shell)
		r.want(t, exitOK)
		if !strings.Contains(r.stdout, marker) {
			t.Errorf("completion %s: no %q in %.200q", shell, marker, r.stdout)
		}
	}
	// What the scripts call: the commands, completed from a prefix, and
	// the values of flags that take a fixed set.
	r := cli(t, "__complete", "mi")
	r.want(t, exitOK)
	if !strings.Contains(r.stdout, "migrate\t") {
		t.Fatalf("__complete mi = %q", r.stdout)
	}
	for args, want := range map[[3]string]string{
		{"export", "--format", ""}:          "v1\nv2\n:4\n",
		{"transform", "--unknown-tags", ""}: "fail\ncarry\ndrop\n:4\n",
	} {
		r := cli(t, "__complete", args[0], args[1], args[2])
		r.want(t, exitOK)
		if !strings.HasPrefix(r.stdout, want) {
			t.Errorf("__complete %v = %q, want %q", args, r.stdout, want)
		}
	}
}

// man writes one page per command, generated from the commands: their
// flags and examples.
func TestManPages(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "man1")
	cli(t, "man", "--dir", dir).want(t, exitOK)
	for _, c := range allCommands(newRoot(&env{})) {
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(dir, name))
		if c.Hidden {
			// The rigs (seed): no page, they are not the operator's.
			if err == nil {
				t.Errorf("a man page for the hidden %s", c.CommandPath())
			}
			continue
		}
		if err != nil {
			t.Errorf("no man page for %s: %v", c.CommandPath(), err)
			continue
		}
		page := string(b)
		if !strings.HasPrefix(page, ".nh\n.TH \"ROCKLAKE-MIGRATE\" \"1\"") || !strings.Contains(page, ".SH EXAMPLE") ||
			(!c.HasSubCommands() && !strings.Contains(page, "timeout")) {
			t.Errorf("%s: %.300q", name, page)
		}
	}
	root, err := os.ReadFile(filepath.Join(dir, "rocklake-migrate.1"))
	if err != nil || !strings.Contains(string(root), "FormatVersionMismatch") {
		t.Fatalf("the root page lacks the exit codes: %v", err)
	}
	cli(t, "man").want(t, exitUsage, "--dir is required")
}

// The README's exit-code table is the code's.
func TestExitCodeTable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^ *\\| `?(\\d)`? \\| (.+?) \\|$")
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		got = append(got, m[1]+" "+strings.ReplaceAll(m[2], "`", ""))
	}
	var want []string
	seen := map[int]bool{}
	for _, c := range exitCodes {
		if seen[c.code] {
			t.Fatalf("exit code %d documented twice", c.code)
		}
		seen[c.code] = true
		want = append(want, strconv.Itoa(c.code)+" "+c.meaning)
	}
	for _, code := range []int{exitOK, exitError, exitUsage, exitMismatch, exitDrift} {
		if !seen[code] {
			t.Errorf("exit code %d is not documented", code)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("README's exit codes:\n%s\nthe code's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Progress, not on a terminal: plain lines without escape codes; with
// --json, one event per line, the last one final with done equal to total
// (the records exported), and the report on stdout still one document.
func TestStageProgress(t *testing.T) {
	dir := t.TempDir()
	src := "file://" + dir + "/src"
	cli(t, "seed", "--catalog", src, "--rows", "3000").want(t, exitOK)
	r := cli(t, "export", "--catalog", src, "--format", "v1", "--output", filepath.Join(dir, "plain"), "--shards", "3")
	r.want(t, exitOK, "export: done, ")
	if strings.ContainsAny(r.stderr, "\x1b\r") {
		t.Fatalf("escape codes on a non-terminal: %q", r.stderr)
	}

	r = cli(t, "export", "--catalog", src, "--format", "v1", "--output", filepath.Join(dir, "json"), "--shards", "3", "--json")
	r.want(t, exitOK)
	var rep struct{ Records uint64 }
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Records == 0 {
		t.Fatalf("report %q: %v", r.stdout, err)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	var last progress.Event
	for _, l := range lines {
		if err := json.Unmarshal([]byte(l), &last); err != nil {
			t.Fatalf("stderr line %q: %v", l, err)
		}
	}
	if last.Event != "done" || !last.Final || last.Stage != "export" || last.Done != rep.Records || last.Total != last.Done || last.ShardsDone != 3 {
		t.Fatalf("last event %+v, exported %d", last, rep.Records)
	}
}
