package proc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// listener is a child that serves TCP on its address; with ignoreTERM it
// also ignores SIGTERM, as a server stuck in its shutdown would.
func listener(t *testing.T, ignoreTERM bool) Spec {
	t.Helper()
	py, err := exec.LookPath("python3") // on the machine image, as the rigs' tools need
	if err != nil {
		t.Fatal(err)
	}
	script := `import signal, socket, sys, time
host, port = sys.argv[1].rsplit(":", 1)
if sys.argv[2] == "1":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
s = socket.socket()
s.bind((host, int(port)))
s.listen()
print("serving", flush=True)
while True:
    time.sleep(1)
`
	return Spec{
		Name: "listener",
		Path: py,
		Args: func(addr string) ([]string, error) {
			flag := "0"
			if ignoreTERM {
				flag = "1"
			}
			return []string{"-c", script, addr, flag}, nil
		},
		Env:       []string{"PATH=" + os.Getenv("PATH")},
		StopGrace: 500 * time.Millisecond,
	}
}

func TestStartServesAndStops(t *testing.T) {
	p, err := Start(t.Context(), listener(t, false))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(p.Addr(), "127.0.0.1:") {
		t.Errorf("addr %s is not on loopback", p.Addr())
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned with the child running")
	}
	if c, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", p.Addr())
	}
	if err := p.Stop(); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	p, err := Start(t.Context(), listener(t, true))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(); !errors.Is(err, ErrKilled) {
		t.Fatalf("Stop: %v, want ErrKilled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stop took %s with a grace of 500ms", d)
	}
}

func TestExitBeforeServingCarriesTheOutput(t *testing.T) {
	_, err := Start(t.Context(), Spec{
		Name: "sh",
		Path: "/bin/sh",
		Args: func(string) ([]string, error) { return []string{"-c", "echo refusing this catalog; exit 3"}, nil },
	})
	if !errors.Is(err, ErrExitedEarly) || !strings.Contains(err.Error(), "refusing this catalog") {
		t.Fatalf("Start: %v, want ErrExitedEarly with the child's output", err)
	}
}

// A child that could not bind its port is started again on another one.
func TestPortTakenIsTriedAgain(t *testing.T) {
	spec := listener(t, false)
	attempts := 0
	serve := spec.Args
	py := spec.Path
	spec.Path = "/bin/sh"
	spec.Args = func(addr string) ([]string, error) {
		attempts++
		if attempts == 1 {
			return []string{"-c", "echo 'bind: Address already in use'; exit 1"}, nil
		}
		args, err := serve(addr)
		return append([]string{"-c", `exec "$0" "$@"`, py}, args...), err
	}
	p, err := Start(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	if attempts != 2 {
		t.Errorf("%d attempts, want 2", attempts)
	}
}

// Run ends the whole process group when ctx ends, grandchildren included.
func TestRunEndsWithItsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Run(ctx, nil, "", "/bin/sh", "-c", "sleep 30 & sleep 30")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run: %v, want DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %s after its context ended", d)
	}
}
