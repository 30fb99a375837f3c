package supervise

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/presence"
)

// neverFenced is the fence time of an online migration's lock that has
// not named its fence yet.
var neverFenced = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Defaults of Options.
const (
	DefaultInterval     = 1500 * time.Millisecond
	DefaultStopTimeout  = 10 * time.Second
	DefaultMaxRestarts  = 5
	DefaultStableAfter  = 30 * time.Second
	DefaultStartTimeout = time.Minute
	DefaultHold         = 15 * time.Second
	DefaultRefresh      = 30 * time.Second
	firstBackoff        = time.Second
	maxBackoff          = 30 * time.Second
	// readTimeout bounds one read of the pointer or the lock.
	readTimeout = 10 * time.Second
	// readerStart is what a reader's start is given before the
	// migration's fence when the writer's drain is cut short; minStop is
	// the least a drain is given.
	readerStart = 500 * time.Millisecond
	minStop     = 500 * time.Millisecond
)

// Options configure a Supervisor.
type Options struct {
	Pointer string
	// Binaries is the RockLake binary for each catalog format.
	Binaries map[format.Version]string
	// Extra are flags added to every `rocklake serve` (--bind,
	// --drain-timeout, ...); --mode reader (or --read-only) among them makes
	// this a reader of a fleet: it follows the pointer, always as a reader.
	// --catalog and --mode are the supervisor's.
	Extra []string
	// Interval between reads of the pointer and the lock (conditional
	// GETs); 0: DefaultInterval.
	Interval time.Duration
	// StopTimeout bounds a graceful stop (SIGTERM, RockLake's drain) before
	// SIGKILL; 0: DefaultStopTimeout. Give RockLake a --drain-timeout below
	// it.
	StopTimeout time.Duration
	// MaxRestarts bounds the restarts of a RockLake that keeps exiting by
	// itself (1 s, 2 s, 4 s ... 30 s apart); past it, Run returns
	// ErrServerFailing. A server that ran StableAfter resets the count.
	MaxRestarts int
	StableAfter time.Duration
	// StartTimeout bounds the first read of the pointer: an unreadable one
	// is retried until then.
	StartTimeout time.Duration
	// ListenAddr, if set, is where the server listens (host:port); health
	// lines then say when it accepts connections.
	ListenAddr string
	// Stdout and Stderr receive RockLake's output; Health a line per change.
	Stdout, Stderr io.Writer
	Health         func(Health)
	// Alert, if set, is called when the supervisor degrades or gives up
	// (an SNS message in the CLI); its error is logged, never fatal.
	Alert func(ctx context.Context, subject, body string) error
	Store *blob.Store
	// ID names this supervisor's presence record (pkg/presence) and its
	// copies; "": the host's name, the pid and a random suffix.
	ID string
	// Front, if set, is where clients connect (RockLake's --bind, taken
	// out of Extra): the supervisor listens there and hands connections to
	// the server that serves, each RockLake on a loopback port of its own
	// (front.go). A connection opened while none serves waits up to Hold
	// (0: DefaultHold).
	Front string
	Hold  time.Duration
	// Refresh is how old a reader's copy of the catalog grows
	// before a fresher one replaces it (0: DefaultRefresh): the bound on
	// what its readers miss, with the copy's own time.
	Refresh time.Duration
}

// Health is one line of the supervisor's state, written at each change.
type Health struct {
	Time    time.Time `json:"time"`
	State   State     `json:"state"`
	Event   string    `json:"event"` // started, ready, stopped, exited, restarting, unchanged, ...
	Mode    Mode      `json:"mode,omitempty"`
	Catalog string    `json:"catalog,omitempty"`
	Format  string    `json:"format,omitempty"`
	Binary  string    `json:"binary,omitempty"`
	PID     int       `json:"pid,omitempty"`
	// Generation and LockHolder are what was last read.
	Generation uint64 `json:"pointer_generation"`
	LockHolder string `json:"lock_holder,omitempty"`
	Reason     string `json:"reason,omitempty"`
	// Seconds: for ready, since the start; for stopped, the stop's.
	Seconds float64 `json:"seconds,omitempty"`
}

func (h Health) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s state=%s event=%s", h.Time.UTC().Format(time.RFC3339Nano), h.State, h.Event)
	if h.Mode != "" {
		fmt.Fprintf(&b, " mode=%s catalog=%s format=%s pid=%d", h.Mode, h.Catalog, h.Format, h.PID)
	}
	fmt.Fprintf(&b, " pointer_generation=%d", h.Generation)
	if h.LockHolder != "" {
		fmt.Fprintf(&b, " lock=%s", h.LockHolder)
	}
	if h.Seconds != 0 {
		fmt.Fprintf(&b, " seconds=%.3f", h.Seconds)
	}
	if h.Reason != "" {
		fmt.Fprintf(&b, " reason=%q", h.Reason)
	}
	return b.String()
}

// Supervisor runs RockLake on the pointer's catalog; see the package doc.
type Supervisor struct {
	opts        Options
	readersOnly bool
	extra       []string

	obs      Observation
	ptrETag  string
	lockETag string
	lock     lock.Lock
	checked  map[string]bool // catalogs found there
	cur      *process        // running, or exited and not restarted yet
	last     *Child          // the last server that ran
	// served is the last server that ran on a catalog the pointer named
	// (not a migration's read replica, which goes with the migration):
	// what a degraded supervisor falls back to.
	served    *Child
	decision  Decision
	failures  int
	restartAt time.Time
	signals   chan os.Signal

	// The presence record last written, and until when the workflow may
	// still count this supervisor by it (a heartbeat before it goes
	// stale); past it, nothing is started.
	present      presence.Record
	presentAt    time.Time
	presentUntil time.Time

	front  *front
	copies int // copies made, for their names
	// notCopied: when a copy last failed; a reader tries again a
	// Refresh later, not every interval.
	notCopied time.Time
}

// New checks opts and makes a Supervisor.
func New(opts Options) (*Supervisor, error) {
	if opts.Pointer == "" || opts.Store == nil || len(opts.Binaries) == 0 {
		return nil, errors.New("supervise: a pointer, a store and at least one binary are required")
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.StopTimeout <= 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	if opts.MaxRestarts <= 0 {
		opts.MaxRestarts = DefaultMaxRestarts
	}
	if opts.StableAfter <= 0 {
		opts.StableAfter = DefaultStableAfter
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = DefaultStartTimeout
	}
	if opts.Stdout == nil {
		opts.Stdout = io.Discard
	}
	if opts.Stderr == nil {
		opts.Stderr = io.Discard
	}
	extra, readersOnly, err := splitMode(opts.Extra)
	if err != nil {
		return nil, err
	}
	if opts.ID == "" {
		opts.ID = presenceID()
	}
	if opts.Hold <= 0 {
		opts.Hold = DefaultHold
	}
	if opts.Refresh <= 0 {
		opts.Refresh = DefaultRefresh
	}
	return &Supervisor{opts: opts, extra: extra, readersOnly: readersOnly, checked: map[string]bool{}, signals: make(chan os.Signal, 4)}, nil
}

// splitMode takes --mode and --read-only out of RockLake's extra flags (the
// supervisor sets the mode) and says whether they asked for a reader;
// --catalog is refused: the pointer names it.
func splitMode(extra []string) (rest []string, reader bool, err error) {
	for i := 0; i < len(extra); i++ {
		a := extra[i]
		switch {
		case a == "--catalog" || a == "-c" || strings.HasPrefix(a, "--catalog="):
			return nil, false, errors.New("supervise: --catalog among RockLake's flags: the pointer names the catalog")
		case a == "--read-only":
			reader = true
		case a == "--mode" && i+1 < len(extra):
			reader = extra[i+1] == string(Reader)
			i++
		case strings.HasPrefix(a, "--mode="):
			reader = strings.TrimPrefix(a, "--mode=") == string(Reader)
		default:
			rest = append(rest, a)
		}
	}
	return rest, reader, nil
}

// ListenAddr is where RockLake listens with extra flags, from its --bind
// (its default, 0.0.0.0:5432, otherwise), as an address to probe
// (Options.ListenAddr).
func ListenAddr(extra []string) string {
	bind := "0.0.0.0:5432"
	for i, a := range extra {
		switch {
		case (a == "--bind" || a == "-b") && i+1 < len(extra):
			bind = extra[i+1]
		case strings.HasPrefix(a, "--bind="):
			bind = strings.TrimPrefix(a, "--bind=")
		}
	}
	return strings.Replace(bind, "0.0.0.0:", "127.0.0.1:", 1)
}

// TakeBind takes RockLake's --bind out of extra, for the supervisor's
// front to listen there (Options.Front): RockLake's default, 0.0.0.0:5432,
// when extra names none.
func TakeBind(extra []string) (bind string, rest []string) {
	bind = "0.0.0.0:5432"
	for i := 0; i < len(extra); i++ {
		a := extra[i]
		switch {
		case (a == "--bind" || a == "-b") && i+1 < len(extra):
			bind = extra[i+1]
			i++
		case strings.HasPrefix(a, "--bind="):
			bind = strings.TrimPrefix(a, "--bind=")
		default:
			rest = append(rest, a)
		}
	}
	return bind, rest
}

// StoppedDegraded reports whether Run stopped while degraded: no RockLake binary
// for the pointer's format, or no catalog where it points, the last good
// server having been kept in reader mode; or a pointer it could no longer
// read, what ran kept running.
func StoppedDegraded(err error) bool {
	switch errname.Of(err) {
	case ErrNoBinary.ErrorName(), ErrPointerDangling.ErrorName(), ErrPointerUnreadable.ErrorName():
		return true
	}
	return false
}

// Signal forwards sig to the running server (SIGHUP, SIGUSR1, ...); SIGTERM
// and SIGINT are the caller's to turn into a cancelled ctx.
func (s *Supervisor) Signal(sig os.Signal) {
	select {
	case s.signals <- sig:
	default:
	}
}

// Run supervises until ctx ends, then stops the server gracefully. It
// returns nil after a stop while healthy, an error wrapping ErrNoBinary or
// ErrPointerDangling after a stop while degraded, ErrServerFailing when
// RockLake kept exiting, and the read's error when the pointer could not be
// read within StartTimeout at the start.
func (s *Supervisor) Run(ctx context.Context) error {
	if s.opts.Front != "" {
		f, err := listenFront(s.opts.Front, s.opts.Hold)
		if err != nil {
			return err
		}
		s.front = f
		defer f.close()
	}
	if err := s.first(ctx); err != nil {
		return err
	}
	tick := time.NewTicker(s.opts.Interval)
	defer tick.Stop()
	for {
		if err := s.step(ctx); err != nil {
			s.shutdown()
			return err
		}
		s.publish(ctx)
		select {
		case <-ctx.Done():
			s.shutdown()
			if s.decision.Err != nil {
				return fmt.Errorf("supervise: stopped while degraded: %w (%s)", s.decision.Err, s.decision.Reason)
			}
			return nil
		case sig := <-s.signals:
			if s.cur != nil {
				s.cur.signal(sig)
			}
		case <-s.exitedChan():
		case <-tick.C:
			s.observe(ctx)
		}
	}
}

// first reads the pointer and the lock until both are known, within
// StartTimeout; a missing or malformed pointer fails at once.
func (s *Supervisor) first(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	wait := firstBackoff
	for {
		err := s.observe(ctx)
		if err == nil {
			// Seen before anything is started: a holder that names its
			// fence from now on waits for this supervisor. The lock is
			// read again after the record is written, so that what is
			// started is decided on a lock read no holder's wait missed.
			s.publish(ctx)
			if s.counted() {
				return s.observe(ctx)
			}
			err = errors.New("supervise: the presence record could not be written")
		}
		if errors.Is(err, pointer.ErrPointerMissing) || errors.Is(err, pointer.ErrBadPointer) {
			return err
		}
		// Said at once, retried until StartTimeout.
		s.report(Health{State: Degraded, Event: "pointer-unreadable", Reason: err.Error()})
		select {
		case <-ctx.Done():
			return fmt.Errorf("supervise: no pointer read within %s: %w", s.opts.StartTimeout, err)
		case <-time.After(wait):
		}
		wait = min(2*wait, maxBackoff)
	}
}

// exitedChan is closed when the running server exits; nil (never ready)
// when none runs.
func (s *Supervisor) exitedChan() <-chan struct{} {
	if s.cur == nil || !s.cur.alive() {
		return nil
	}
	return s.cur.exited
}

// observe reads the pointer and the lock (conditional GETs), and checks a
// catalog not seen before. A pointer that cannot be read keeps the last
// one; a lock that cannot be read is unknown.
func (s *Supervisor) observe(ctx context.Context) error {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	p, ref, err := pointer.ReadIfChanged(rctx, s.opts.Store, s.opts.Pointer, s.ptrETag)
	switch {
	case errors.Is(err, pointer.ErrNotModified):
	case err != nil && ctx.Err() != nil:
		// Stopping: a read cut short says nothing about the pointer.
		return ctx.Err()
	case err != nil:
		err = readError(err)
		if s.ptrETag == "" {
			return err
		}
		s.obs.PointerErr = err
	default:
		s.obs.Pointer, s.ptrETag, s.obs.PointerErr = p, ref.ETag, nil
	}
	l, etag, lerr := lock.Read(rctx, s.opts.Store, s.opts.Pointer, s.lockETag)
	switch {
	case errors.Is(lerr, blob.ErrNotModified):
		s.obs.LockKnown = true
	case lerr != nil:
		s.obs.LockKnown, s.lockETag = false, ""
	default:
		s.obs.LockKnown, s.lock, s.lockETag = true, l, etag
	}
	s.obs.Now = time.Now()
	s.obs.LockHolder, s.obs.LockDryRun, s.obs.FenceAt, s.obs.Replica, s.obs.LockWritesGoOn = "", false, time.Time{}, "", false
	if s.obs.LockKnown && s.lock.Held(s.obs.Now) {
		s.obs.LockHolder, s.obs.LockDryRun, s.obs.FenceAt = s.lock.MigrationID, s.lock.DryRun, s.lock.FenceAt
		s.obs.LockWritesGoOn = s.lock.WritesGoOn()
		switch {
		case s.obs.LockWritesGoOn:
			// Not fenced before it names when: the servers stay writers.
			s.obs.FenceAt = neverFenced
		case s.obs.FenceAt.IsZero():
			// A lock that names no fence time may fence at once.
			s.obs.FenceAt = s.lock.AcquiredAt
		}
	}
	if h := s.obs.LockHolder; h != "" && !s.obs.LockDryRun && s.obs.Pointer.MigrationID != h && !s.obs.Now.Before(s.obs.FenceAt) {
		s.obs.Replica = s.replica(rctx, h)
	}
	c := s.obs.Pointer.Catalog
	s.obs.OnSource = s.cur != nil && s.cur.alive() && s.cur.child.Catalog == c
	s.obs.OnCopy = s.obs.OnSource && s.cur.child.Copy && s.cur.served != c
	if !s.counted() {
		// The workflow may no longer see this supervisor: it must not
		// open anything a fence could come after.
		s.obs.LockKnown = false
	}
	if !s.checked[c] {
		switch cerr := catalogThere(rctx, s.opts.Store, c); {
		case cerr == nil:
			s.checked[c] = true
			s.obs.CatalogMissing = false
		case errors.Is(cerr, ErrPointerDangling):
			s.obs.CatalogMissing = true
		default:
			// Cannot tell: start nothing new on it this round.
			s.obs.LockKnown = false
		}
	} else {
		s.obs.CatalogMissing = false
	}
	return nil
}

// replica is the read replica of migration id, which froze the pointer's
// catalog: layout.Replica, once its manifest (copied last) is there; ""
// until then, or when the run makes none. The name is derived, so that
// the supervisor needs no more rights than it has (the lock, and a list of
// the catalogs) and Freeze none on the lock.
func (s *Supervisor) replica(ctx context.Context, id string) string {
	url, err := layout.Replica(s.obs.Pointer.Catalog, id)
	if err != nil {
		return ""
	}
	if s.checked[url] {
		return url
	}
	if catalogThere(ctx, s.opts.Store, url) != nil {
		return ""
	}
	s.checked[url] = true
	return url
}

// step brings the running server in line with the last observation.
func (s *Supervisor) step(ctx context.Context) error {
	d := s.decide(ctx)
	if d.Hold || s.keep(d) {
		return nil
	}
	old := s.makeRoom(ctx, d)
	if wait, err := s.backoff(ctx, d); wait || err != nil {
		return err
	}
	if d.Child == nil {
		s.retire(ctx, s.cur)
		s.cur = nil
		return nil
	}
	want := *d.Child
	if want.Mode == Writer && !s.writerMayStartNow(ctx) {
		// The lock was taken (or its fence named) since the last read: a
		// writer now would fence the migration. The next round decides
		// again.
		s.retire(ctx, s.cur)
		s.cur = nil
		return nil
	}
	if !d.OpenBy.IsZero() && time.Now().After(d.OpenBy) {
		// The stop took too long: a reader opened now could come after the
		// fence and move the frozen source.
		s.report(Health{Event: "not-started", Reason: fmt.Sprintf("too close to the migration's fence (%s) to open %s", d.OpenBy.Add(OpenMargin).UTC().Format(time.RFC3339), want.Catalog)})
		s.retire(ctx, s.cur)
		s.cur = nil
		return nil
	}
	return s.start(ctx, want, d, old)
}

// decide is Decide on the last observation, said when it changed (and
// alerted when degraded); it marks a server on a source past its fence as
// fenced.
func (s *Supervisor) decide(ctx context.Context) Decision {
	d := Decide(s.obs, s.served, s.opts.Binaries, s.readersOnly)
	changed := d.State != s.decision.State || d.Reason != s.decision.Reason
	s.decision = d
	if changed {
		s.report(Health{Event: "decided", Reason: d.Reason})
		if d.Err != nil {
			s.alert(ctx, "RockLake supervisor degraded: "+s.opts.Pointer, d.Reason)
		}
	}
	o := s.obs
	if s.cur != nil && o.LockHolder != "" && !o.LockDryRun && o.Pointer.MigrationID != o.LockHolder &&
		s.cur.served == o.Pointer.Catalog && !o.Now.Before(o.FenceAt) {
		s.cur.frozen = true
	}
	return d
}

// keep reports whether what runs is what d wants, and fresh: a server
// Freeze fenced is restarted once the migration is over, a reader's
// copy once it is Refresh old.
func (s *Supervisor) keep(d Decision) bool {
	o := s.obs
	refresh := s.cur != nil && s.cur.frozen && o.LockKnown && o.LockHolder == "" || s.copyDue()
	return !refresh && s.cur != nil && d.Child != nil && *d.Child == s.cur.child && s.cur.alive()
}

// makeRoom stops what runs before the next server starts, or, behind the
// front, returns it to stop once the next listens: a reader on another
// catalog (a copy, a replica, a fenced source) holds nothing the next one
// opens.
func (s *Supervisor) makeRoom(ctx context.Context, d Decision) (old *process) {
	if s.cur == nil || !s.cur.alive() {
		return nil
	}
	if s.front != nil && d.Child != nil && s.cur.child.Mode == Reader && (d.Child.Copy || d.Child.Catalog != s.cur.served) {
		return s.cur
	}
	timeout := s.opts.StopTimeout
	if !d.OpenBy.IsZero() {
		// The writer is fenced at the migration's fence anyway: its drain
		// may not keep the reader from opening before it.
		timeout = min(timeout, max(time.Until(d.OpenBy)-readerStart, minStop))
	}
	if s.cur.frozen {
		timeout = minStop // fenced: nothing it drains can succeed
	}
	s.stopCurrent("stopped", timeout)
	s.retire(ctx, s.cur)
	s.cur = nil // stopped on purpose: no restart backoff
	return nil
}

// backoff paces the restarts of a server that exited by itself (1, 2, 4
// ... 30 s apart): wait is true until its time; past MaxRestarts in a row,
// ErrServerFailing.
func (s *Supervisor) backoff(ctx context.Context, d Decision) (wait bool, err error) {
	if s.cur == nil || s.cur.alive() || d.Child == nil || *d.Child != s.cur.child {
		s.restartAt = time.Time{}
		return false, nil
	}
	if s.restartAt.IsZero() {
		if time.Since(s.cur.started) >= s.opts.StableAfter {
			s.failures = 0
		}
		s.failures++
		s.report(Health{Event: "exited", Mode: s.cur.child.Mode, Catalog: s.cur.served, Reason: s.cur.cmd.ProcessState.String()})
		if s.failures > s.opts.MaxRestarts {
			err := fmt.Errorf("%w: %s exited %d times in a row (last: %s)", ErrServerFailing, s.cur.child, s.failures, s.cur.cmd.ProcessState)
			s.alert(ctx, "RockLake supervisor gave up: "+s.opts.Pointer, err.Error())
			return true, err
		}
		s.restartAt = time.Now().Add(min(firstBackoff<<(s.failures-1), maxBackoff))
		s.report(Health{Event: "restarting", Reason: fmt.Sprintf("restart %d of at most %d at %s", s.failures, s.opts.MaxRestarts, s.restartAt.UTC().Format(time.RFC3339))})
	}
	if time.Now().Before(s.restartAt) {
		return true, nil
	}
	s.restartAt = time.Time{}
	return false, nil
}

// start starts want (on a copy of its catalog made now, if it asks for
// one) and, behind the front, sends new connections to it once it listens
// and stops old.
func (s *Supervisor) start(ctx context.Context, want Child, d Decision, old *process) error {
	served := want.Catalog
	if want.Copy {
		if s.readersOnly && time.Since(s.notCopied) < s.opts.Refresh && (old != nil || s.cur == nil) {
			return nil // the last copy failed: the next try a Refresh later
		}
		url, err := s.makeCopy(ctx, want.Catalog, d.OpenBy)
		if err != nil {
			s.notCopied = time.Now()
		}
		switch {
		case err != nil && old != nil:
			// The reader that serves goes on; the next round tries again.
			s.report(Health{Event: "not-copied", Catalog: want.Catalog, Reason: err.Error()})
			return nil
		case err != nil && !d.OpenBy.IsZero() && !s.readersOnly:
			// Before a fence, the reader goes on the source itself (the
			// fence stops its reads until the replica or the flip).
			s.report(Health{Event: "not-copied", Catalog: want.Catalog, Reason: err.Error() + ": a reader on the source instead"})
		case err != nil:
			s.report(Health{Event: "not-copied", Catalog: want.Catalog, Reason: err.Error()})
			s.cur = nil
			return nil
		default:
			served = url
		}
	}
	addr := ""
	if s.front != nil {
		var err error
		if addr, err = freePort(); err != nil {
			return err
		}
	}
	p, err := start(want, served, s.extra, addr, s.opts.Stdout, s.opts.Stderr)
	if err != nil {
		return err
	}
	if s.last == nil || *s.last != want {
		s.failures = 0
	}
	prev := s.cur
	s.cur, s.last = p, &want
	if s.obs.Replica == "" || want.Catalog != s.obs.Replica {
		s.served = &want
	}
	s.report(Health{Event: "started"})
	listen := s.opts.ListenAddr
	if addr != "" {
		listen = addr
	}
	if listen != "" {
		rctx, cancel := context.WithTimeout(ctx, s.opts.StableAfter)
		ok := p.waitListening(rctx, listen)
		cancel()
		if ok {
			s.report(Health{Event: "ready", Seconds: time.Since(p.started).Seconds()})
		}
	}
	if s.front != nil {
		s.front.set(addr)
	}
	if old != nil {
		// New connections go to the new server: the old one gets a
		// moment for the statements it runs, no more (what it serves is
		// no longer what the pointer names, or staler than the new one).
		s.cur = old
		s.stopCurrent("stopped", switchStop)
		s.cur = p
	}
	if prev != p {
		s.retire(ctx, prev)
	}
	return nil
}

// switchStop is what a server replaced behind the front gets to finish.
const switchStop = time.Second

// retire drops what a stopped server leaves: its copy.
func (s *Supervisor) retire(ctx context.Context, p *process) {
	if p == nil || p.alive() || !p.child.Copy || p.served == p.child.Catalog {
		return
	}
	s.dropCopy(ctx, p.served)
}

// copyDue reports whether a reader's copy is due for a refresh: it
// has served Refresh, and the lock lets a copy be taken (no holder, or
// one whose writes go on: a view writes a checkpoint to the catalog).
func (s *Supervisor) copyDue() bool {
	o := s.obs
	return s.readersOnly && s.cur != nil && s.cur.alive() && s.cur.child.Copy && s.cur.child.Catalog == o.Pointer.Catalog &&
		time.Since(s.cur.started) >= s.opts.Refresh && o.LockKnown && (o.LockHolder == "" || o.LockDryRun || o.LockWritesGoOn)
}

// writerMayStartNow reads the lock unconditionally right before a writer
// starts: one may when the lock is free, or its holder says writes go on
// (a dry run, or an online run, a rollback's too, that has not named its
// fence): a supervisor started, or a RockLake that crashed, during such a
// run's copy gets its writer back rather than refusing writes until the
// flip.
func (s *Supervisor) writerMayStartNow(ctx context.Context) bool {
	rctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	l, etag, err := lock.Read(rctx, s.opts.Store, s.opts.Pointer, "")
	if err != nil {
		s.obs.LockKnown, s.lockETag = false, ""
		return false
	}
	s.lock, s.lockETag = l, etag
	return !l.Held(time.Now()) || l.DryRun || l.WritesGoOn()
}

func (s *Supervisor) stopCurrent(event string, timeout time.Duration) {
	t := time.Now()
	killed := s.cur.stop(timeout)
	h := Health{Event: event, Mode: s.cur.child.Mode, Catalog: s.cur.served, Format: s.cur.child.Format.String(), Binary: s.cur.child.Binary, PID: s.cur.cmd.Process.Pid, Seconds: time.Since(t).Seconds()}
	if killed {
		h.Reason = fmt.Sprintf("it did not stop within %s of SIGTERM: killed", timeout)
	}
	s.report(h)
}

// shutdown stops the server gracefully, then removes the presence
// record: nothing of this supervisor is left to wait for.
func (s *Supervisor) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	if s.cur != nil && s.cur.alive() {
		s.stopCurrent("stopped", s.opts.StopTimeout)
	}
	s.retire(ctx, s.cur)
	if err := presence.Remove(ctx, s.opts.Store, s.opts.Pointer, s.opts.ID); err != nil {
		s.report(Health{Event: "presence-unwritten", Reason: err.Error()})
	}
}

func (s *Supervisor) report(h Health) {
	if s.opts.Health == nil {
		return
	}
	h.Time = time.Now()
	if h.State == "" {
		h.State = s.decision.State
	}
	if h.State == "" {
		h.State = Undecided
	}
	h.Generation, h.LockHolder = s.obs.Pointer.Generation, s.obs.LockHolder
	if h.Mode == "" && s.cur != nil && slices.Contains([]string{"started", "ready"}, h.Event) {
		c := s.cur.child
		h.Mode, h.Catalog, h.Format, h.Binary, h.PID = c.Mode, s.cur.served, c.Format.String(), c.Binary, s.cur.cmd.Process.Pid
	}
	s.opts.Health(h)
}

func (s *Supervisor) alert(ctx context.Context, subject, body string) {
	if s.opts.Alert == nil {
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	defer cancel()
	if err := s.opts.Alert(actx, subject, body); err != nil {
		s.report(Health{Event: "alert-failed", Reason: err.Error()})
	}
}

// presenceID is a supervisor's default presence id: host, pid, and a
// random suffix (two supervisors in one container share host and pid 1).
func presenceID() string {
	host, _ := os.Hostname()
	host = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' {
			return '-'
		}
		return r
	}, host)
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}

// counted reports whether the workflow still counts this supervisor: its
// record was written less than a heartbeat short of going stale ago.
func (s *Supervisor) counted() bool { return time.Now().Before(s.presentUntil) }

// acked is the lock holder whose fence this supervisor acknowledges (""
// none): the lock holds a fence (not a dry run, not writes going on), and
// its server is no writer on the holder's source. Decide opens nothing on
// the source from then on (OnSource only keeps what runs).
func (s *Supervisor) acked() string {
	o := s.obs
	if !o.LockKnown || o.LockHolder == "" || o.LockDryRun || o.LockWritesGoOn {
		return ""
	}
	if o.Pointer.MigrationID != o.LockHolder && s.cur != nil && s.cur.alive() &&
		s.cur.child.Mode == Writer && s.cur.child.Catalog == o.Pointer.Catalog {
		return ""
	}
	return o.LockHolder
}

// publish writes the presence record when it changed or a heartbeat is
// due; a failed write is reported, and past presentUntil the supervisor
// starts nothing (observe).
func (s *Supervisor) publish(ctx context.Context) {
	r := presence.Record{ID: s.opts.ID, PID: os.Getpid(), Role: presence.Follower, Acked: s.acked()}
	r.Host, _ = os.Hostname()
	if s.readersOnly {
		r.Role = presence.Reader
	}
	if s.cur != nil && s.cur.alive() {
		r.Catalog, r.Mode = s.cur.served, string(s.cur.child.Mode)
	}
	if r == s.present && time.Since(s.presentAt) < presence.Heartbeat {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, readTimeout)
	defer cancel()
	t := time.Now()
	if err := presence.Put(wctx, s.opts.Store, s.opts.Pointer, r); err != nil {
		s.report(Health{Event: "presence-unwritten", Reason: err.Error()})
		return
	}
	if r.Acked != "" && r.Acked != s.present.Acked {
		s.report(Health{Event: "acknowledged", Reason: "the fence of " + r.Acked})
	}
	s.present, s.presentAt, s.presentUntil = r, t, t.Add(presence.StaleAfter-presence.Heartbeat)
}
