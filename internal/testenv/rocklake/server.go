package rocklake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
)

// Server is a running `rocklake serve` on 127.0.0.1. Stop it with Stop.
type Server struct {
	port int
	dir  string
	proc *proc.Process // nil for a Client
}

// Client is a handle on a RockLake server this package did not start, on
// 127.0.0.1:port (one that rocklake-migrate serve runs): Query, Exec,
// ExecExtended and AddSchema work on it; Stop, Done and Logs are not for it.
func Client(port int) *Server { return &Server{port: port} }

// Port is the PostgreSQL port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// CatalogDir is the absolute catalog directory the server serves.
func (s *Server) CatalogDir() string { return s.dir }

// ConnString is a libpq connection string for the server (no password: the
// server runs without authentication).
func (s *Server) ConnString() string {
	return connString(s.Addr())
}

func connString(addr string) string {
	host, port, _ := net.SplitHostPort(addr)
	return fmt.Sprintf("host=%s port=%s user=%s dbname=%s sslmode=disable connect_timeout=10", host, port, User, Database)
}

// Logs is the tail of the server's stderr and stdout (RockLake logs each
// statement it executes on stdout).
func (s *Server) Logs() string { return s.proc.Logs() }

// Serve starts `rocklake serve --catalog DIR --bind 127.0.0.1:PORT` on a
// free port (writer mode, no TLS, no authentication, no metrics listener) and
// returns once it completes a PostgreSQL startup handshake, within 30 s and
// ctx. The directory is created if missing; an empty one becomes a fresh
// catalog (format version 1, counters at 1). If the binary refuses the
// catalog (FormatVersionMismatch, SQLSTATE 0A000, for a catalog of another
// format version), or exits for any other reason, the error carries its
// output. ctx bounds the start only: the server runs until Stop.
func Serve(ctx context.Context, catalogDir string) (*Server, error) {
	dir, err := absDir(catalogDir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("rocklake serve: %w", err)
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	p, err := proc.Start(ctx, proc.Spec{
		Name: "rocklake serve --catalog " + dir,
		Path: bin,
		Args: func(addr string) ([]string, error) {
			return []string{"serve",
				"--catalog", dir,
				"--bind", addr,
				"--mode", "writer",
				"--max-sessions", "16",
				"--drain-timeout", strconv.Itoa(int(drainTimeout / time.Second)),
			}, nil
		},
		Env:          childEnv(),
		LogTail:      logTail,
		Ready:        handshake,
		ReadyTimeout: readyTimeout,
		StopGrace:    stopGrace,
	})
	if err != nil {
		return nil, err
	}
	_, port, err := net.SplitHostPort(p.Addr())
	if err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	s := &Server{dir: dir, proc: p}
	if s.port, err = strconv.Atoi(port); err != nil {
		return nil, errors.Join(err, p.Stop())
	}
	return s, nil
}

// handshake: the server is ready once a PostgreSQL startup completes.
func handshake(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := connect(ctx, addr)
	if err != nil {
		return err
	}
	return c.Close(ctx)
}

// Stop ends the server: SIGTERM to its process group (RockLake drains
// sessions for up to 3 s and exits), then SIGKILL after 10 s. It waits for the
// process and is safe to call more than once. The error says if the server
// had to be killed or had already exited on its own (with its output).
func (s *Server) Stop() error {
	err := s.proc.Stop()
	if errors.Is(err, proc.ErrExitedEarly) {
		return fmt.Errorf("%w\n%s", err, s.Logs())
	}
	return err
}

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.proc.Done() }
