package progress_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rocklake/rocklake-migrate/pkg/progress"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// syncBuffer is a writer the test reads while the display writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until cond holds on the output, failing after 5 s.
func waitFor(t *testing.T, out *syncBuffer, what string, cond func(string) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(out.String()) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s in %q", what, out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Not on a terminal: one plain line per Step of the work (the Interval
// being far off), each with percent, rows/s and an ETA, a final line, and
// no escape codes or carriage returns.
func TestLinesEveryStep(t *testing.T) {
	var out syncBuffer
	d := progress.New(&out, progress.Options{Mode: progress.Lines, Interval: time.Hour, Step: 0.25, Tick: 5 * time.Millisecond})
	var p shard.Progress
	p.RecordsTotal.Store(400)
	p.ShardsTotal.Store(4)
	st := d.Stage("export", "rows", &p)
	for i := 1; i <= 4; i++ {
		time.Sleep(10 * time.Millisecond) // some time passes: a rate
		p.Records.Store(uint64(100 * i))
		p.ShardsDone.Store(int64(i))
		waitFor(t, &out, "line for step "+string(rune('0'+i)), func(s string) bool { return strings.Count(s, "\n") == i })
	}
	st.Stop(nil)
	d.Close()
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 5 {
		t.Fatalf("want 4 progress lines and a final one, got %q", lines)
	}
	for i, want := range []string{"export: 25% (100 of 400 rows)", "export: 50% (200 of 400 rows)", "export: 75% (300 of 400 rows)", "export: 100% (400 of 400 rows)"} {
		if !strings.HasPrefix(lines[i], want) || !strings.Contains(lines[i], "rows/s") || !strings.Contains(lines[i], "ETA ") || !strings.Contains(lines[i], "shards") {
			t.Errorf("line %d = %q, want %q…, rows/s, ETA and shards", i, lines[i], want)
		}
	}
	if !strings.HasPrefix(lines[4], "export: done, 400 rows in ") || !strings.Contains(lines[4], "shards 4/4") {
		t.Errorf("final line = %q", lines[4])
	}
	if strings.ContainsAny(out.String(), "\x1b\r") {
		t.Errorf("escape codes in plain lines: %q", out.String())
	}
}

// Not on a terminal and nothing moving: a line every Interval still.
func TestLinesEveryInterval(t *testing.T) {
	var out syncBuffer
	d := progress.New(&out, progress.Options{Mode: progress.Lines, Interval: 20 * time.Millisecond, Tick: 5 * time.Millisecond})
	var p shard.Progress
	p.Records.Store(7) // total unknown
	st := d.Stage("verify", "rows", &p)
	waitFor(t, &out, "two lines", func(s string) bool { return strings.Count(s, "verify: 7 rows, ") >= 2 })
	st.Stop(errors.New("boom"))
	d.Close()
	if !strings.HasSuffix(out.String(), "verify: failed after 7 rows in "+lastField(out.String())) {
		t.Fatalf("output %q does not end with the failure", out.String())
	}
}

func lastField(s string) string {
	f := strings.Fields(s)
	return f[len(f)-1] + "\n"
}

// --json: every line is one object; a stage's events end with a final
// "done" whose done equals its total, and states have start and end events.
func TestJSONEvents(t *testing.T) {
	var out syncBuffer
	d := progress.New(&out, progress.Options{Mode: progress.JSON, Interval: time.Hour, Step: 0.5, Tick: 5 * time.Millisecond})
	start := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	d.State("Import", false, start, 0)
	var p shard.Progress
	p.RecordsTotal.Store(1000) // an estimate: the stage does 900
	st := d.Stage("export", "rows", &p)
	time.Sleep(10 * time.Millisecond)
	p.Records.Store(600)
	waitFor(t, &out, "a progress event", func(s string) bool { return strings.Contains(s, `"event":"progress"`) })
	p.Records.Store(900)
	st.Stop(nil)
	d.State("Import", true, start.Add(1500*time.Millisecond), 1500*time.Millisecond)
	d.Close()

	var events []progress.Event
	var states []progress.StateEvent
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var kind struct{ Event string }
		if err := json.Unmarshal([]byte(line), &kind); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		if kind.Event == "state" {
			var s progress.StateEvent
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatal(err)
			}
			states = append(states, s)
			continue
		}
		var e progress.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	if len(events) != 2 {
		t.Fatalf("events = %+v", events)
	}
	if e := events[0]; e.Event != "progress" || e.Done != 600 || e.Total != 1000 || e.Percent != 60 || e.Rate <= 0 || e.ETASeconds <= 0 || e.Final {
		t.Errorf("progress event = %+v", e)
	}
	if e := events[1]; e.Event != "done" || !e.Final || e.Done != 900 || e.Total != e.Done || e.Stage != "export" || e.Unit != "rows" {
		t.Errorf("final event = %+v", e)
	}
	if len(states) != 2 || states[0].Phase != "start" || states[1].Phase != "end" || states[1].Seconds != 1.5 || states[0].State != "Import" {
		t.Errorf("state events = %+v", states)
	}
}

// On a terminal mpb draws the bar: percent, rows/s, and at the end 100 %.
// ForceTTY makes mpb treat the buffer as one.
func TestBarsOnTerminal(t *testing.T) {
	var out syncBuffer
	d := progress.New(&out, progress.Options{Mode: progress.Bars, ForceTTY: true, Tick: 5 * time.Millisecond})
	d.State("Shards", false, time.Now(), 0)
	var p shard.Progress
	p.RecordsTotal.Store(200)
	st := d.Stage("import", "rows", &p)
	time.Sleep(10 * time.Millisecond)
	p.Records.Store(100)
	waitFor(t, &out, "the bar at 50 %", func(s string) bool { return strings.Contains(s, "50 %") })
	p.Records.Store(200)
	st.Stop(nil)
	d.Close()
	s := out.String()
	for _, want := range []string{"import", "100 %", "200 rows", "rows/s", "→ Shards", "\x1b["} {
		if !strings.Contains(s, want) {
			t.Errorf("bar output lacks %q: %q", want, s)
		}
	}
}

// The mode follows the writer: a buffer or a file is not a terminal; a
// pseudo-terminal is one once it has a width (mpb draws nothing at width
// 0); --json wins over all.
func TestModeFor(t *testing.T) {
	var b bytes.Buffer
	if progress.ModeFor(&b, false) != progress.Lines || progress.ModeFor(&b, true) != progress.JSON {
		t.Fatal("a buffer must get plain lines, or JSON when asked")
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if progress.ModeFor(f, false) != progress.Lines {
		t.Fatal("a file must get plain lines")
	}

	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	pts, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer pts.Close()
	if progress.ModeFor(pts, false) != progress.Lines {
		t.Fatal("a pseudo-terminal without a size must get plain lines")
	}
	if err := unix.IoctlSetWinsize(int(pts.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 24, Col: 100}); err != nil {
		t.Fatal(err)
	}
	if progress.ModeFor(pts, false) != progress.Bars || progress.ModeFor(pts, true) != progress.JSON {
		t.Fatal("a terminal 100 columns wide must get bars, or JSON when asked")
	}
}
