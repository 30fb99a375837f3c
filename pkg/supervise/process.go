package supervise

import (
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is one running RockLake server.
type process struct {
	child Child
	// served is the catalog it opened: child.Catalog, or a copy of it
	// (child.Copy), which goes when the process does.
	served string
	// addr is its loopback --bind behind the front ("" without one).
	addr    string
	cmd     *exec.Cmd
	started time.Time
	exited  chan struct{}
	// frozen: it ran on a migration's source past the fence, so Freeze
	// fenced it (RockLake then fails every statement): it is restarted
	// once the migration ends.
	frozen bool
}

// args is the command line of c serving catalog: `serve --catalog CATALOG
// --mode MODE`, the operator's extra flags, and the loopback --bind behind
// the front.
func args(c Child, catalog string, extra []string, addr string) []string {
	a := append([]string{"serve", "--catalog", ServeCatalog(catalog), "--mode", string(c.Mode)}, extra...)
	if addr != "" {
		a = append(a, "--bind", addr)
	}
	return a
}

// start runs c with its output passed through. The child has its own
// process group (a terminal's Ctrl-C reaches the supervisor, which stops it
// gracefully) and is killed if the supervisor dies.
func start(c Child, served string, extra []string, addr string, stdout, stderr io.Writer) (*process, error) {
	cmd := exec.Command(c.Binary, args(c, served, extra, addr)...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("supervise: start %s: %w", c.Binary, err)
	}
	p := &process{child: c, served: served, addr: addr, cmd: cmd, started: time.Now(), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// alive reports whether the process still runs.
func (p *process) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// signal sends sig to the process unless it has been reaped (its pid may
// then be someone else's).
func (p *process) signal(sig os.Signal) {
	if p.alive() {
		_ = p.cmd.Process.Signal(sig)
	}
}

// stop ends the process gracefully: SIGTERM (RockLake stops listening and
// drains its sessions for its --drain-timeout), then SIGKILL after timeout.
// It reports whether it had to kill.
func (p *process) stop(timeout time.Duration) bool {
	p.signal(syscall.SIGTERM)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-p.exited:
		return false
	case <-t.C:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.exited
	return true
}

// waitListening waits until addr accepts TCP connections, the process
// exits or ctx ends; it reports whether the server listens.
func (p *process) waitListening(ctx context.Context, addr string) bool {
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var d net.Dialer
	for {
		attempt, cancel := context.WithTimeout(ctx, time.Second)
		c, err := d.DialContext(attempt, "tcp", addr)
		cancel()
		if err == nil {
			c.Close()
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-p.exited:
			return false
		case <-tick.C:
		}
	}
}
