package rocklake

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Server is a running `rocklake serve` on 127.0.0.1. Stop it with Stop.
type Server struct {
	port   int
	dir    string
	cmd    *exec.Cmd
	stdout *tail
	stderr *tail
	exited chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// Client is a handle on a RockLake server this package did not start, on
// 127.0.0.1:port (one that rocklake-migrate serve runs): Query, Exec,
// ExecExtended and AddSchema work on it; Stop, Done and Logs are not for it.
func Client(port int) *Server {
	return &Server{port: port, stdout: &tail{max: logTail}, stderr: &tail{max: logTail}, exited: make(chan struct{})}
}

// Port is the PostgreSQL port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// Addr is host:port of the server.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// CatalogDir is the absolute catalog directory the server serves.
func (s *Server) CatalogDir() string { return s.dir }

// ConnString is a libpq connection string for the server (no password: the
// server runs without authentication).
func (s *Server) ConnString() string {
	return fmt.Sprintf("host=127.0.0.1 port=%d user=%s dbname=%s sslmode=disable connect_timeout=10", s.port, User, Database)
}

// Logs is the tail of the server's stderr and stdout (RockLake logs each
// statement it executes on stdout).
func (s *Server) Logs() string {
	return "stderr:\n" + s.stderr.String() + "\nstdout:\n" + s.stdout.String()
}

var errPortTaken = errors.New("port already in use")

// Serve starts `rocklake serve --catalog DIR --bind 127.0.0.1:PORT` on a
// free port (writer mode, no TLS, no authentication, no metrics listener) and
// returns once it completes a PostgreSQL startup handshake, within 30 s and
// ctx. The directory is created if missing; an empty one becomes a fresh
// catalog (format version 1, counters at 1). If the binary refuses the
// catalog (FormatVersionMismatch, SQLSTATE 0A000, for a catalog of another
// format version), or exits for any other reason, the error carries its
// stderr. ctx bounds the start only: the server runs until Stop.
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
	const attempts = 3
	for attempt := 1; ; attempt++ {
		s, err := serveOnce(ctx, bin, dir)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == attempts {
			return s, err
		}
	}
}

func serveOnce(ctx context.Context, bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("rocklake serve: pick a port: %w", err)
	}
	s := &Server{
		port:   port,
		dir:    dir,
		stdout: &tail{max: logTail},
		stderr: &tail{max: logTail},
		exited: make(chan struct{}),
	}
	s.cmd = exec.Command(bin, "serve",
		"--catalog", dir,
		"--bind", s.Addr(),
		"--mode", "writer",
		"--max-sessions", "16",
		"--drain-timeout", strconv.Itoa(int(drainTimeout/time.Second)),
	)
	s.cmd.Env = childEnv()
	s.cmd.Stdout, s.cmd.Stderr = s.stdout, s.stderr
	s.cmd.SysProcAttr = procAttr()
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("rocklake serve: start %s: %w", bin, err)
	}
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	if err := s.waitReady(ctx); err != nil {
		s.kill()
		if strings.Contains(strings.ToLower(s.stderr.String()+s.stdout.String()), "address already in use") {
			err = fmt.Errorf("%w: %w", err, errPortTaken)
		}
		return nil, fmt.Errorf("rocklake serve --catalog %s on %s: %w\nstderr:\n%s", dir, s.Addr(), err,
			strings.TrimSpace(s.stderr.String()))
	}
	return s, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// waitReady polls until a PostgreSQL startup handshake succeeds, the process
// exits, or the bound runs out.
func (s *Server) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		select {
		case <-s.exited:
			return fmt.Errorf("exited before serving (%s)", s.cmd.ProcessState)
		default:
		}
		attempt, cancelAttempt := context.WithTimeout(ctx, 2*time.Second)
		c, err := dialPG(attempt, s.Addr())
		cancelAttempt()
		if err == nil {
			c.Close()
			return nil
		}
		lastErr = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last attempt: %v)", ctx.Err(), lastErr)
		case <-s.exited:
			return fmt.Errorf("exited before serving (%s)", s.cmd.ProcessState)
		case <-tick.C:
		}
	}
}

// Stop ends the server: SIGTERM to its process group (RockLake drains
// sessions for up to 3 s and exits), then SIGKILL after 10 s. It waits for the
// process and is safe to call more than once. The error says if the server
// had to be killed or had already exited on its own.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.exited:
			s.stopErr = fmt.Errorf("rocklake serve had exited by itself (%s)\n%s", s.cmd.ProcessState, s.Logs())
			return
		default:
		}
		s.signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(stopGrace):
			s.kill()
			s.stopErr = fmt.Errorf("rocklake serve ignored SIGTERM for %s: killed", stopGrace)
		}
	})
	return s.stopErr
}

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.exited }

func (s *Server) kill() {
	s.signal(syscall.SIGKILL)
	<-s.exited
}

// signal signals the process group unless the process has been reaped (its
// pid, and so the group id, may then belong to someone else).
func (s *Server) signal(sig syscall.Signal) {
	select {
	case <-s.exited:
	default:
		_ = syscall.Kill(-s.cmd.Process.Pid, sig)
	}
}

// Exec runs SQL through psql (`psql -X -q -v ON_ERROR_STOP=1 -At -f -`, the
// SQL on standard input, so that psql sends each statement by itself as the
// simple-query protocol does) and returns psql's stdout: one line per row,
// columns separated by |. A failing statement stops the script; the error
// then carries psql's stderr, which names the statement and the server's
// message. Use it for writes: psql shows RockLake's integer columns as empty
// strings (they come in binary) and warns "could not interpret result from
// server: SELECT 1 1" about its command tags; Query reads. Bounded by ctx.
func (s *Server) Exec(ctx context.Context, sql string) (string, error) {
	psql, err := PSQL()
	if err != nil {
		return "", err
	}
	if !strings.HasSuffix(strings.TrimSpace(sql), ";") {
		sql += ";"
	}
	return run(ctx, sql+"\n", psql, "-X", "-q", "-v", "ON_ERROR_STOP=1", "-At", "-d", s.ConnString(), "-f", "-")
}

// Row is one result row by column name (NULL reads as "").
type Row map[string]string

// Query runs one SELECT with the simple-query protocol, as psql would, and
// returns its rows by column name, every value as text. It does not use
// psql: RockLake sends integer columns in binary (saying so in the row
// description) even to text clients, and psql prints those as empty
// strings; this client decodes them. Bounded by ctx.
func (s *Server) Query(ctx context.Context, sql string) ([]Row, error) {
	c, err := dialPG(ctx, s.Addr())
	if err != nil {
		return nil, fmt.Errorf("rocklake: connect %s: %w", s.Addr(), err)
	}
	defer c.Close()
	results, err := c.simpleQuery(ctx, sql)
	if err != nil {
		return nil, fmt.Errorf("rocklake: %s: %w", oneLine(sql), err)
	}
	if len(results) != 1 {
		return nil, fmt.Errorf("rocklake: %s: %d results, want 1", oneLine(sql), len(results))
	}
	return results[0].Map(), nil
}

// Stmt is one statement for ExecExtended: SQL with $1, $2, ... and their
// values, sent as text.
type Stmt struct {
	SQL  string
	Args []string
}

// Result is what one statement returned: its column names, its rows (as
// text; NULL as "") and its command tag ("INSERT 0 1", "BEGIN", ...).
type Result struct {
	Columns []string
	Rows    [][]string
	Tag     string
}

// Map returns the rows by column name.
func (r Result) Map() []Row {
	rows := make([]Row, 0, len(r.Rows))
	for _, values := range r.Rows {
		row := make(Row, len(values))
		for k, v := range values {
			if k < len(r.Columns) {
				row[r.Columns[k]] = v
			}
		}
		rows = append(rows, row)
	}
	return rows
}

// ExecExtended runs statements in order on one connection, each over the
// extended query protocol (Parse, Bind with text parameters, Execute, Sync)
// as DuckDB's PostgreSQL connector sends them; BEGIN and COMMIT among them
// make one transaction, hence one snapshot. RockLake reads some statements
// only from bound parameters (INSERT INTO ducklake_delete_file, the author
// and message of INSERT INTO ducklake_snapshot), which psql 15 cannot send.
// It stops at the first error, which names the statement. Bounded by ctx.
func (s *Server) ExecExtended(ctx context.Context, stmts ...Stmt) ([]Result, error) {
	c, err := dialPG(ctx, s.Addr())
	if err != nil {
		return nil, fmt.Errorf("rocklake: connect %s: %w", s.Addr(), err)
	}
	defer c.Close()
	results := make([]Result, 0, len(stmts))
	for _, st := range stmts {
		cols, rows, tag, err := c.execParams(ctx, st.SQL, st.Args)
		if err != nil {
			return results, fmt.Errorf("rocklake: %s: %w", oneLine(st.SQL), err)
		}
		results = append(results, Result{Columns: cols, Rows: rows, Tag: tag})
	}
	return results, nil
}

func oneLine(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
