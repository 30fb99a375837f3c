package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// front is the port the supervisor keeps for RockLake (its --bind) and
// hands each new connection to the server that serves now, on a loopback
// port of its own. A switch (a flip, a reader's fresher copy) starts
// the next server beside the one serving, points new connections at it once
// it listens, and only then stops the old one: clients never meet a closed
// port, and a connection opened while no server serves (a writer's drain, a
// restart) waits for the next one rather than fail, up to hold.
type front struct {
	ln   net.Listener
	hold time.Duration

	mu      sync.Mutex
	backend string        // host:port of the server connections go to; "" none
	ready   chan struct{} // closed when backend is set
	wg      sync.WaitGroup
	conns   map[net.Conn]string // open client connections
}

// listenFront listens on addr (RockLake's --bind).
func listenFront(addr string, hold time.Duration) (*front, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("supervise: listen on %s: %w", addr, err)
	}
	f := &front{ln: ln, hold: hold, ready: make(chan struct{}), conns: map[net.Conn]string{}}
	f.wg.Add(1)
	go f.accept()
	return f, nil
}

// Addr is where the front listens.
func (f *front) Addr() string { return f.ln.Addr().String() }

// set sends new connections to backend ("": none, they wait).
func (f *front) set(backend string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if backend == f.backend {
		return
	}
	f.backend = backend
	if backend == "" {
		f.ready = make(chan struct{})
		return
	}
	select {
	case <-f.ready:
	default:
		close(f.ready)
	}
}

// close stops accepting and closes every connection.
func (f *front) close() {
	_ = f.ln.Close()
	f.mu.Lock()
	for c := range f.conns {
		_ = c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
}

func (f *front) accept() {
	defer f.wg.Done()
	for {
		c, err := f.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(50 * time.Millisecond) // EMFILE and the like: back off
			continue
		}
		f.wg.Add(1)
		go func() {
			defer f.wg.Done()
			f.pipe(c)
		}()
	}
}

// current waits up to hold for a backend.
func (f *front) current() string {
	f.mu.Lock()
	b, ready := f.backend, f.ready
	f.mu.Unlock()
	if b != "" {
		return b
	}
	t := time.NewTimer(f.hold)
	defer t.Stop()
	select {
	case <-ready:
	case <-t.C:
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.backend
}

// pipe carries client connection c to the server that serves until either
// side closes. What the client sends before the server's first byte (its
// startup message: PostgreSQL's client speaks first) is kept, so that a
// server that goes before answering (stopped with the connection still in
// its accept queue, at a switch) is replaced by the next one, within hold,
// and the client never knows.
func (f *front) pipe(c net.Conn) {
	f.mu.Lock()
	f.conns[c] = ""
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		f.mu.Unlock()
		_ = c.Close()
	}()
	r := &relay{c: c}
	go r.fromClient()
	deadline := time.Now().Add(f.hold)
	for {
		backend := f.current()
		if backend == "" || r.isClosed() {
			break
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var d net.Dialer
		srv, err := d.DialContext(ctx, "tcp", backend)
		cancel()
		if err == nil && r.attach(srv) {
			first := make([]byte, 32<<10)
			n, _ := srv.Read(first)
			if n > 0 {
				r.answered()
				if _, err := c.Write(first[:n]); err == nil {
					_, _ = io.Copy(c, srv)
				}
				_ = srv.Close()
				break
			}
			_ = srv.Close()
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.close()
}

// relay is one client connection's way to its server: the client's bytes
// go to the server attached now, and are kept until the first answer.
type relay struct {
	c net.Conn

	mu     sync.Mutex
	srv    net.Conn
	sent   []byte
	held   bool // the server answered: nothing is kept any more
	closed bool
}

// fromClient copies the client's bytes to the attached server until the
// client closes.
func (r *relay) fromClient() {
	buf := make([]byte, 32<<10)
	for {
		n, err := r.c.Read(buf)
		if n > 0 {
			r.mu.Lock()
			if !r.held {
				r.sent = append(r.sent, buf[:n]...)
			}
			if r.srv != nil {
				_, _ = r.srv.Write(buf[:n]) // a server gone before answering gets it again from sent
			}
			r.mu.Unlock()
		}
		if err != nil {
			r.close()
			return
		}
	}
}

// attach makes srv the server, sending it what the client sent so far; false
// when the client is gone.
func (r *relay) attach(srv net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		_ = srv.Close()
		return false
	}
	r.srv = srv
	if len(r.sent) > 0 {
		if _, err := srv.Write(r.sent); err != nil {
			return false
		}
	}
	return true
}

func (r *relay) answered() {
	r.mu.Lock()
	r.held, r.sent = true, nil
	r.mu.Unlock()
}

func (r *relay) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// close ends both sides.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	srv := r.srv
	r.mu.Unlock()
	_ = r.c.Close()
	if srv != nil {
		_ = srv.Close()
	}
}

// freePort is a loopback address no one listens on now, for a server
// behind the front.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("supervise: a loopback port for RockLake: %w", err)
	}
	addr := ln.Addr().String()
	return addr, ln.Close()
}
