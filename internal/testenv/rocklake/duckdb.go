package rocklake

import (
	"bufio"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/proc"
)

//go:embed duckdb_client.py
var duckdbClient string

// DuckDBPython is the Python with DuckDB 1.5.3 and its DuckLake, postgres
// and parquet extension wheels: $ROCKLAKE_DUCKDB_PYTHON, else the tool
// cache's duckdb-python, else on PATH.
func DuckDBPython() (string, error) {
	return proc.FindTool("duckdb-python", "ROCKLAKE_DUCKDB_PYTHON", "scripts/install-duckdb.sh")
}

// DuckDB runs DuckDB as the DuckLake client of srv: it attaches the catalog
// (DATA_PATH dataPath, no inlining: RockLake v0.47.11 does not serve inlined
// rows again after a restart), runs stmts, then queries, and returns each
// query's rows with every value as text (NULL as nil).
func DuckDB(ctx context.Context, srv *Server, dataPath string, stmts, queries []string) ([][][]*string, error) {
	py, err := DuckDBPython()
	if err != nil {
		return nil, err
	}
	req, err := json.Marshal(map[string]any{"port": srv.Port(), "data_path": dataPath, "statements": stmts, "queries": queries})
	if err != nil {
		return nil, err
	}
	// The script goes in a file so that errors name it instead of quoting it.
	script, err := os.CreateTemp("", "rocklake-duckdb-*.py")
	if err != nil {
		return nil, err
	}
	defer os.Remove(script.Name())
	_, err = script.WriteString(duckdbClient)
	if cerr := script.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("rocklake: duckdb client script: %w", err)
	}
	out, err := run(ctx, string(req), py, script.Name())
	if err != nil {
		return nil, fmt.Errorf("rocklake: duckdb: %w", err)
	}
	var res struct {
		Results [][][]*string `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		return nil, fmt.Errorf("rocklake: duckdb output %q: %w", out, err)
	}
	if len(res.Results) != len(queries) {
		return nil, fmt.Errorf("rocklake: duckdb answered %d of %d queries", len(res.Results), len(queries))
	}
	return res.Results, nil
}

// DuckDBWorkload is what a DuckDB user does to a DuckLake catalog served by
// RockLake (attached as "lake"): schemas, tables, inserts, deletes, schema changes and drops
// (UPDATE and non-ASCII names fail in this RockLake release; they are left
// out). DuckDBQueries read it all back, in a fixed order.
var (
	DuckDBWorkload = []string{
		"CREATE SCHEMA lake.sales",
		"CREATE TABLE lake.sales.orders (id BIGINT, customer VARCHAR, amount DECIMAL(18,3), placed TIMESTAMP)",
		"INSERT INTO lake.sales.orders SELECT i, 'c' || (i % 17), i * 1.25, TIMESTAMP '2025-01-01' + INTERVAL (i) MINUTE FROM range(500) r(i)",
		"INSERT INTO lake.sales.orders VALUES (10000, 'late', 1.5, TIMESTAMP '2025-06-01 12:00:00')",
		"DELETE FROM lake.sales.orders WHERE id % 50 = 0",
		"ALTER TABLE lake.sales.orders ADD COLUMN note VARCHAR",
		"INSERT INTO lake.sales.orders VALUES (10001, 'noted', 2.5, TIMESTAMP '2025-06-02 08:00:00', 'with a note')",
		"CREATE TABLE lake.main.customers (id INTEGER, name VARCHAR)",
		"INSERT INTO lake.main.customers SELECT i, 'customer ' || i FROM range(40) r(i)",
		"CREATE TABLE lake.main.scratch (x INTEGER)",
		"INSERT INTO lake.main.scratch VALUES (1), (2)",
		"DROP TABLE lake.main.scratch",
	}
	DuckDBQueries = []string{
		"SELECT count(*), sum(id), sum(amount), min(placed), max(placed), count(note) FROM lake.sales.orders",
		"SELECT customer, count(*), sum(amount) FROM lake.sales.orders GROUP BY customer ORDER BY customer",
		"SELECT * FROM lake.sales.orders ORDER BY id DESC LIMIT 3",
		"SELECT count(*), max(name) FROM lake.main.customers",
		"SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY ALL",
		"SELECT table_name, column_name, data_type FROM duckdb_columns() WHERE database_name = 'lake' ORDER BY ALL",
	}
)

// SessionEvent is one statement of a DuckDBSession.
type SessionEvent struct {
	Op    string  `json:"op"` // write, read, final
	ID    int64   `json:"id"`
	At    float64 `json:"at"` // Unix seconds
	OK    bool    `json:"ok"`
	Error string  `json:"error,omitempty"`
	Count int64   `json:"count"`
	IDs   []int64 `json:"ids,omitempty"`
}

// Time is when the statement started.
func (e SessionEvent) Time() time.Time {
	return time.Unix(0, int64(e.At*float64(time.Second)))
}

// Session is DuckDB holding one connection to RockLake, inserting an id and
// reading the count every so often (duckdb_client.py's session mode).
type Session struct {
	cmd    *exec.Cmd
	stop   string
	mu     sync.Mutex
	events []SessionEvent
	done   chan error
}

// DuckDBSession starts DuckDB attached to the RockLake on port (a table
// lake.main.acks made if missing) and returns once it is attached.
func DuckDBSession(ctx context.Context, port int, dataPath string, every time.Duration) (*Session, error) {
	py, err := DuckDBPython()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "rocklake-duckdb-session-*")
	if err != nil {
		return nil, err
	}
	script := filepath.Join(dir, "duckdb_client.py")
	if err := os.WriteFile(script, []byte(duckdbClient), 0o644); err != nil {
		return nil, err
	}
	req, _ := json.Marshal(map[string]any{"port": port, "data_path": dataPath, "every": every.Seconds()})
	s := &Session{stop: filepath.Join(dir, "stop"), done: make(chan error, 1)}
	s.cmd = exec.CommandContext(ctx, py, script, "session", s.stop)
	s.cmd.Stdin = strings.NewReader(string(req) + "\n")
	s.cmd.Stderr = os.Stderr
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("rocklake: duckdb session: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		once := false
		for sc.Scan() {
			var e SessionEvent
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue
			}
			if e.Op == "ready" && !once {
				once = true
				close(ready)
				continue
			}
			s.mu.Lock()
			s.events = append(s.events, e)
			s.mu.Unlock()
		}
		s.done <- s.cmd.Wait()
		os.RemoveAll(dir)
	}()
	select {
	case <-ready:
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("rocklake: duckdb session ended before it attached: %v", err)
	case <-time.After(time.Minute):
		_ = s.cmd.Process.Kill()
		return nil, errors.New("rocklake: duckdb session did not attach within a minute")
	}
}

// Events is what the session did so far.
func (s *Session) Events() []SessionEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.events)
}

// Stop ends the loop, reads every id back through the same connection and
// returns all events, the final read's last.
func (s *Session) Stop() ([]SessionEvent, error) {
	if err := os.WriteFile(s.stop, nil, 0o644); err != nil {
		return nil, err
	}
	select {
	case err := <-s.done:
		if err != nil {
			return s.Events(), fmt.Errorf("rocklake: duckdb session: %w", err)
		}
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		return s.Events(), errors.New("rocklake: duckdb session did not stop within 2 minutes")
	}
	return s.Events(), nil
}
