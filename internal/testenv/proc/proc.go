// Package proc runs the test rigs' child processes, written once for all of
// them: servers (versitygw, moto_server, rocklake serve, aws-lambda-rie;
// Start) and one-shot commands (rocklake verify, DuckDB, psql; Run). It
// finds the tool, picks a free port on 127.0.0.1 (again when another process
// takes it first), puts the child in a process group that dies with the
// caller, waits until it serves, keeps the tail of its output, and stops it
// with a grace period before SIGKILL.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Defaults for a Spec's zero fields.
const (
	defaultReadyTimeout = 30 * time.Second
	defaultStopGrace    = 5 * time.Second
	defaultLogTail      = 16 << 10
	// portAttempts: another process may take the port between our probe
	// and the child binding it.
	portAttempts = 3
	pollInterval = 50 * time.Millisecond
	// waitDelay bounds how long Wait waits for the output to close after
	// the process exited (a grandchild outside the group may hold it).
	waitDelay = 5 * time.Second
)

// Named errors of Start and Stop.
var (
	// ErrPortTaken: the child could not bind its port, after every attempt.
	ErrPortTaken = errors.New("port already in use")
	// ErrExitedEarly: the child exited before it served, or before Stop.
	ErrExitedEarly = errors.New("exited by itself")
	// ErrKilled: the child ignored SIGTERM for the grace period.
	ErrKilled = errors.New("ignored SIGTERM: killed")
)

// Spec describes a server child.
type Spec struct {
	// Name names the child in errors ("versitygw").
	Name string
	// Path is the binary (FindTool finds it).
	Path string
	// Args are the arguments, given the 127.0.0.1:port the child must
	// serve on (a fresh one each attempt).
	Args func(addr string) ([]string, error)
	// Env is the child's whole environment: none of the caller's leaks in.
	Env []string
	// Dir is the working directory (empty: the caller's).
	Dir string
	// LogFile, when set, receives stdout and stderr (appended, so that the
	// starts of a restarted child are all kept); when empty, the output is
	// kept in memory.
	LogFile string
	// LogTail is how much of the output Logs returns (default 16 KiB).
	LogTail int
	// Ready says whether the child serves on addr; nil dials TCP. It is
	// called every 50 ms, each call bounded by ctx.
	Ready func(ctx context.Context, addr string) error
	// ReadyTimeout bounds the wait for Ready (default 30 s).
	ReadyTimeout time.Duration
	// StopGrace is how long Stop waits after SIGTERM (default 5 s).
	StopGrace time.Duration
}

// Process is a running child, in a process group of its own.
type Process struct {
	spec   Spec
	addr   string
	cmd    *exec.Cmd
	mem    *tail // output when no LogFile
	exited chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// Start starts the child on a free 127.0.0.1 port and returns once Ready
// says it serves, within ReadyTimeout and ctx. The process outlives ctx:
// only Stop or Kill ends it. A child that fails to bind its port is started
// again on another one; any other failure is returned at once, with the
// tail of the child's output.
func Start(ctx context.Context, spec Spec) (*Process, error) {
	if spec.ReadyTimeout == 0 {
		spec.ReadyTimeout = defaultReadyTimeout
	}
	if spec.StopGrace == 0 {
		spec.StopGrace = defaultStopGrace
	}
	if spec.LogTail == 0 {
		spec.LogTail = defaultLogTail
	}
	for attempt := 1; ; attempt++ {
		p, err := startOnce(ctx, spec)
		if err == nil || !errors.Is(err, ErrPortTaken) || attempt == portAttempts {
			return p, err
		}
	}
}

func startOnce(ctx context.Context, spec Spec) (*Process, error) {
	addr, err := FreeAddr()
	if err != nil {
		return nil, fmt.Errorf("%s: pick a port: %w", spec.Name, err)
	}
	args, err := spec.Args(addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", spec.Name, err)
	}
	cmd := exec.Command(spec.Path, args...)
	cmd.Env = spec.Env
	cmd.Dir = spec.Dir
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = groupAttr()
	p := &Process{spec: spec, addr: addr, cmd: cmd, exited: make(chan struct{})}
	if spec.LogFile != "" {
		f, err := os.OpenFile(spec.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Name, err)
		}
		defer f.Close() // the child keeps its own descriptor
		cmd.Stdout, cmd.Stderr = f, f
	} else {
		p.mem = &tail{max: spec.LogTail}
		cmd.Stdout, cmd.Stderr = p.mem, p.mem
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", spec.Name, spec.Path, err)
	}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	if err := p.waitReady(ctx); err != nil {
		p.Kill()
		logs := p.Logs()
		if strings.Contains(strings.ToLower(logs), "address already in use") {
			err = fmt.Errorf("%w: %w", err, ErrPortTaken)
		}
		return nil, fmt.Errorf("%s on %s: %w\n%s output (tail):\n%s", spec.Name, addr, err, spec.Name, strings.TrimSpace(logs))
	}
	return p, nil
}

// groupAttr puts a child in a process group of its own, so that signals
// reach everything it started, and kills it if the caller dies without
// stopping it (a test timeout panics and exits): no child lingers holding a
// port or a catalog.
func groupAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// Run runs a one-shot command bounded by ctx, in a process group of its own
// that is killed whole when ctx ends, with env as its whole environment and
// stdin (if not empty) on its standard input, and returns its stdout. On a
// non-zero exit or an ended ctx, the error carries stderr and stdout.
func Run(ctx context.Context, env []string, stdin string, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = env
	cmd.SysProcAttr = groupAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = fmt.Errorf("%w (%w)", ctxErr, err)
		}
		return stdout.String(), fmt.Errorf("%s %s: %w%s", filepath.Base(bin), strings.Join(args, " "), err,
			outputs(stderr.String(), stdout.String()))
	}
	return stdout.String(), nil
}

func outputs(stderr, stdout string) string {
	var b strings.Builder
	if s := strings.TrimSpace(stderr); s != "" {
		b.WriteString("\nstderr:\n" + s)
	}
	if s := strings.TrimSpace(stdout); s != "" {
		b.WriteString("\nstdout:\n" + s)
	}
	return b.String()
}

// waitReady polls Ready until it succeeds, the child exits, or the bound
// runs out.
func (p *Process) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.spec.ReadyTimeout)
	defer cancel()
	ready := p.spec.Ready
	if ready == nil {
		ready = dialTCP
	}
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("%w before serving (%s)", ErrExitedEarly, p.cmd.ProcessState)
		default:
		}
		if lastErr = ready(ctx, p.addr); lastErr == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w before serving (%s)", ErrExitedEarly, p.cmd.ProcessState)
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last attempt: %w)", ctx.Err(), lastErr)
		case <-tick.C:
		}
	}
}

func dialTCP(ctx context.Context, addr string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	return c.Close()
}

// FreeAddr is a 127.0.0.1:port nobody listens on at the time of the call.
func FreeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Addr is the 127.0.0.1:port the child serves on.
func (p *Process) Addr() string { return p.addr }

// Pid is the child's process id (and its process group's).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.exited }

// Logs is the tail of the child's stdout and stderr, for diagnostics.
func (p *Process) Logs() string {
	if p.mem != nil {
		return p.mem.String()
	}
	f, err := os.Open(p.spec.LogFile)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > int64(p.spec.LogTail) {
		_, _ = f.Seek(-int64(p.spec.LogTail), io.SeekEnd)
	}
	var b bytes.Buffer
	_, _ = b.ReadFrom(f)
	return b.String()
}

// Stop ends the child and everything in its process group: SIGTERM, then
// SIGKILL after the grace period. It waits for the child and is safe to
// call more than once. The error says if the child had exited by itself
// (ErrExitedEarly) or had to be killed (ErrKilled).
func (p *Process) Stop() error {
	p.stopOnce.Do(func() {
		select {
		case <-p.exited:
			p.stopErr = fmt.Errorf("%s %w (%s)", p.spec.Name, ErrExitedEarly, p.cmd.ProcessState)
			return
		default:
		}
		p.signal(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(p.spec.StopGrace):
			p.Kill()
			p.stopErr = fmt.Errorf("%s %w after %s", p.spec.Name, ErrKilled, p.spec.StopGrace)
		}
	})
	return p.stopErr
}

// Kill SIGKILLs the process group at once, as a crash would, and waits for
// the child to be reaped.
func (p *Process) Kill() {
	p.signal(syscall.SIGKILL)
	<-p.exited
}

// signal signals the child's process group, unless the child has been
// reaped: its pid, and so the group id, may then belong to someone else.
func (p *Process) signal(sig syscall.Signal) {
	select {
	case <-p.exited:
	default:
		_ = syscall.Kill(-p.cmd.Process.Pid, sig)
	}
}

// tail keeps the last max bytes written to it; safe for concurrent use.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// HTTPReady is a Spec's Ready check: a GET of path at the process's
// address answers within 2 s, with a status ok accepts (nil: any).
func HTTPReady(path string, ok func(status int) bool) func(ctx context.Context, addr string) error {
	return func(ctx context.Context, addr string) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if ok != nil && !ok(resp.StatusCode) {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return nil
	}
}
