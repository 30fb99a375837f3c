// Package progress owns how the CLI shows its long stages (export,
// transform, import, verify, and migrate's workflow states) while they run:
// on a terminal, a bar with percent done, rows/s and an ETA, drawn by mpb;
// elsewhere (a log, a pipe), a plain line every Interval or every Step of
// the work; with --json, one JSON object per line (Event, StateEvent).
// Whatever the mode, a stage ends with one final line or event.
package progress

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/sys/unix"

	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// Mode is how progress is shown.
type Mode int

const (
	// Bars draws live bars (a terminal).
	Bars Mode = iota
	// Lines prints plain lines, no escape codes (a log, a pipe).
	Lines
	// JSON prints one Event or StateEvent object per line.
	JSON
)

// ModeFor is the mode for w: JSON when asked for, bars on a terminal,
// lines otherwise.
func ModeFor(w io.Writer, asJSON bool) Mode {
	switch {
	case asJSON:
		return JSON
	case IsTerminal(w):
		return Bars
	}
	return Lines
}

// IsTerminal reports whether w is a terminal that bars can be drawn on: one
// that says how wide it is (mpb draws nothing on a terminal of width 0, as
// a pseudo-terminal whose size was never set reports).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	return err == nil && ws.Col > 0
}

// Options tune a Display.
type Options struct {
	Mode Mode
	// Interval: Lines and JSON print at least this often (default 10 s).
	Interval time.Duration
	// Step: ... and each time this fraction more of the work is done
	// (default 0.1).
	Step float64
	// Tick is how often a stage's counts are read (default 200 ms).
	Tick time.Duration
	// ForceTTY draws bars on a writer that is not a terminal (tests).
	ForceTTY bool
}

// Display shows the stages of one command on one writer.
type Display struct {
	w    io.Writer
	opts Options
	mu   sync.Mutex // one line at a time
	bars *mpb.Progress
}

// New makes a Display writing to w; Close it when the command is done.
func New(w io.Writer, opts Options) *Display {
	if opts.Interval <= 0 {
		opts.Interval = 10 * time.Second
	}
	if opts.Step <= 0 {
		opts.Step = 0.1
	}
	if opts.Tick <= 0 {
		opts.Tick = 200 * time.Millisecond
	}
	d := &Display{w: w, opts: opts}
	if opts.Mode == Bars {
		mo := []mpb.ContainerOption{mpb.WithOutput(w), mpb.WithRefreshRate(opts.Tick)}
		if opts.ForceTTY {
			mo = append(mo, mpb.ForceTTY(), mpb.WithAutoRefresh(), mpb.WithWidth(100))
		}
		d.bars = mpb.New(mo...)
	}
	return d
}

// Close waits for the bars to finish drawing.
func (d *Display) Close() {
	if d.bars != nil {
		d.bars.Wait()
	}
}

// Event is one JSON progress line of a stage.
type Event struct {
	Event string `json:"event"` // "progress"; "done" or "failed" for the final one
	Stage string `json:"stage"`
	Unit  string `json:"unit"`
	Done  uint64 `json:"done"`
	// Total is 0 while unknown; in the "done" event it equals Done.
	Total          uint64  `json:"total"`
	ShardsDone     int64   `json:"shards_done"`
	ShardsTotal    int64   `json:"shards_total"`
	Percent        float64 `json:"percent"`
	Rate           float64 `json:"rate"`        // Unit per second since the stage began
	ETASeconds     float64 `json:"eta_seconds"` // -1 while unknown
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Error          string  `json:"error,omitempty"` // "failed" only
	Final          bool    `json:"final"`           // the stage's last event
	Time           string  `json:"time"`            // RFC 3339
}

// StateEvent is one JSON line for a workflow state starting or ending.
type StateEvent struct {
	Event   string  `json:"event"` // "state"
	State   string  `json:"state"`
	Phase   string  `json:"phase"` // "start" or "end"
	Time    string  `json:"time"`
	Seconds float64 `json:"seconds,omitempty"` // "end": how long it ran
}

// State shows a workflow state starting (took 0) or ending.
func (d *Display) State(name string, end bool, at time.Time, took time.Duration) {
	switch d.opts.Mode {
	case JSON:
		ev := StateEvent{Event: "state", State: name, Phase: "start", Time: at.UTC().Format(time.RFC3339Nano)}
		if end {
			ev.Phase, ev.Seconds = "end", took.Seconds()
		}
		d.json(ev)
	default:
		line := fmt.Sprintf("%s → %s\n", at.Format("15:04:05"), name)
		if end {
			line = fmt.Sprintf("%s ← %s (%s)\n", at.Format("15:04:05"), name, took.Round(time.Millisecond))
		}
		d.print(line)
	}
}

func (d *Display) print(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.bars != nil {
		// Above the bars, which mpb redraws below.
		fmt.Fprint(d.bars, s)
		return
	}
	fmt.Fprint(d.w, s)
}

func (d *Display) json(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return // plain fields always marshal
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.w.Write(append(b, '\n'))
}

// Stage shows one stage's progress, read from p, until Stop.
type Stage struct {
	d     *Display
	name  string
	unit  string
	p     *shard.Progress
	start time.Time
	bar   *mpb.Bar

	stop    chan struct{}
	stopped chan struct{}
	once    sync.Once

	lastLine time.Time
	lastFrac float64
	shown    atomic.Pointer[snapshot] // bars: what the bar shows
}

// Stage starts showing the stage name, whose work p counts in unit. What
// it returns (a *Stage) only stops: an unnamed interface, so that a run
// that shows its stages (pkg/workflow's local run) takes a Display without
// importing this package.
func (d *Display) Stage(name, unit string, p *shard.Progress) interface{ Stop(err error) } {
	return d.stage(name, unit, p)
}

func (d *Display) stage(name, unit string, p *shard.Progress) *Stage {
	s := &Stage{d: d, name: name, unit: unit, p: p, start: time.Now(), stop: make(chan struct{}), stopped: make(chan struct{})}
	s.lastLine = s.start
	s.shown.Store(&snapshot{unit: unit})
	if d.bars != nil {
		s.bar = d.bars.AddBar(1000,
			mpb.PrependDecorators(
				decor.Name(name, decor.WCSyncSpaceR),
				decor.Percentage(decor.WCSyncSpace),
			),
			mpb.AppendDecorators(
				// The counts the bar was last set to, so that rows and
				// percent agree.
				decor.Any(func(decor.Statistics) string { return s.shown.Load().rateText() }, decor.WCSyncSpace),
				decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO, decor.WCSyncSpace), "done"),
			),
		)
	}
	go s.run()
	return s
}

// snapshot is a stage's counts at one moment.
type snapshot struct {
	unit                    string
	done, total             uint64
	shardsDone, shardsTotal int64
	elapsed                 time.Duration
}

func (s *Stage) counts() snapshot {
	return snapshot{
		unit: s.unit, done: s.p.Records.Load(), total: s.p.RecordsTotal.Load(),
		shardsDone: s.p.ShardsDone.Load(), shardsTotal: s.p.ShardsTotal.Load(),
		elapsed: time.Since(s.start),
	}
}

// fraction is how much of the work is done, by records when their total
// is known, else by shards; ok false when neither is.
func (n snapshot) fraction() (f float64, ok bool) {
	switch {
	case n.total > 0:
		return min(1, float64(n.done)/float64(n.total)), true
	case n.shardsTotal > 0:
		return min(1, float64(n.shardsDone)/float64(n.shardsTotal)), true
	}
	return 0, false
}

func (n snapshot) rate() float64 {
	if n.elapsed <= 0 {
		return 0
	}
	return float64(n.done) / n.elapsed.Seconds()
}

func (n snapshot) rateText() string {
	return fmt.Sprintf("%d %s, %.0f %s/s", n.done, n.unit, n.rate(), n.unit)
}

// eta is the time left at the average pace so far, -1 while unknown.
func (n snapshot) eta() time.Duration {
	f, ok := n.fraction()
	if !ok || f <= 0 {
		return -1
	}
	return time.Duration(float64(n.elapsed) * (1 - f) / f)
}

func (s *Stage) run() {
	defer close(s.stopped)
	t := time.NewTicker(s.d.opts.Tick)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.show()
		}
	}
}

func (s *Stage) show() {
	n := s.counts()
	f, known := n.fraction()
	if s.bar != nil {
		s.shown.Store(&n)
		s.bar.SetCurrent(int64(f * 1000))
		return
	}
	due := time.Since(s.lastLine) >= s.d.opts.Interval || (known && f >= s.lastFrac+s.d.opts.Step)
	if !due {
		return
	}
	s.lastLine, s.lastFrac = time.Now(), f
	s.emit(n, "progress", nil)
}

// Stop ends the stage: a final line or event, the bar completed (err nil:
// its total is then what was done) or aborted. Only the first Stop counts;
// a nil Stage does nothing.
func (s *Stage) Stop(err error) {
	if s == nil {
		return
	}
	s.once.Do(func() {
		close(s.stop)
		<-s.stopped
		n := s.counts()
		if err == nil {
			n.total, n.shardsDone = n.done, n.shardsTotal
		}
		if s.bar != nil {
			s.shown.Store(&n)
			if err == nil {
				s.bar.SetCurrent(1000)
			} else {
				s.bar.Abort(false)
			}
			s.bar.Wait()
			return
		}
		ev := "done"
		if err != nil {
			ev = "failed"
		}
		s.emit(n, ev, err)
	})
}

func (s *Stage) emit(n snapshot, event string, err error) {
	f, known := n.fraction()
	if s.d.opts.Mode == JSON {
		ev := Event{
			Event: event, Stage: s.name, Unit: n.unit, Done: n.done, Total: n.total,
			ShardsDone: n.shardsDone, ShardsTotal: n.shardsTotal,
			Rate: n.rate(), ETASeconds: -1, ElapsedSeconds: n.elapsed.Seconds(),
			Final: event != "progress", Time: time.Now().UTC().Format(time.RFC3339Nano),
		}
		if known {
			ev.Percent = 100 * f
		}
		if eta := n.eta(); eta >= 0 {
			ev.ETASeconds = eta.Seconds()
		}
		if err != nil {
			ev.Error = err.Error()
		}
		s.d.json(ev)
		return
	}
	var line string
	switch event {
	case "done":
		line = fmt.Sprintf("%s: done, %d %s in %s (%.0f %s/s)", s.name, n.done, n.unit, n.elapsed.Round(time.Millisecond), n.rate(), n.unit)
	case "failed":
		line = fmt.Sprintf("%s: failed after %d %s in %s", s.name, n.done, n.unit, n.elapsed.Round(time.Millisecond))
	default:
		line = fmt.Sprintf("%s: %s", s.name, n.rateText())
		if known {
			of := ""
			if n.total > 0 {
				of = fmt.Sprintf(" of %d", n.total)
			}
			line = fmt.Sprintf("%s: %.0f%% (%d%s %s), %.0f %s/s", s.name, 100*f, n.done, of, n.unit, n.rate(), n.unit)
			if eta := n.eta(); eta >= 0 {
				line += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
			}
		}
	}
	if n.shardsTotal > 0 {
		line += fmt.Sprintf(", shards %d/%d", n.shardsDone, n.shardsTotal)
	}
	s.d.print(line + "\n")
}
