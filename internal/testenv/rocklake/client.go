package rocklake

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// SQL over the PostgreSQL wire, through jackc/pgx's pgconn: each call opens
// one connection, runs its statements in order on it (BEGIN and COMMIT
// among them make one transaction, hence one snapshot), and closes it.
// Values come back as text whatever their format code: RockLake sends
// integer columns in binary (and says so in the row description) even when
// text was asked for. A statement the server refuses fails with a
// *pgconn.PgError (its SQLSTATE in Code), wrapped with the statement.

// defaultTimeout bounds a call whose context has no deadline.
const defaultTimeout = 60 * time.Second

// Row is one result row by column name (NULL reads as "").
type Row map[string]string

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

// Query runs one SELECT with the simple-query protocol and returns its rows
// by column name, every value as text. Bounded by ctx.
func (s *Server) Query(ctx context.Context, sql string) ([]Row, error) {
	results, err := s.Exec(ctx, sql)
	if err != nil {
		return nil, err
	}
	if len(results) != 1 {
		return nil, fmt.Errorf("rocklake: %s: %d results, want 1", oneLine(sql), len(results))
	}
	return results[0].Map(), nil
}

// Exec runs statements in order on one connection, each by itself over the
// simple-query protocol (as psql sends a script's statements), and returns
// what each returned. It stops at the first error, which names the
// statement. Bounded by ctx.
func (s *Server) Exec(ctx context.Context, stmts ...string) ([]Result, error) {
	return s.each(ctx, len(stmts), func(ctx context.Context, c *pgconn.PgConn, i int) (string, []Result, error) {
		results, err := readAll(c.Exec(ctx, stmts[i]))
		return stmts[i], results, err
	})
}

// ExecExtended runs statements in order on one connection, each over the
// extended query protocol (Parse, Bind with text parameters, Describe,
// Execute, Sync) as DuckDB's PostgreSQL connector sends them. RockLake reads
// some statements only from bound parameters (INSERT INTO
// ducklake_delete_file, the author and message of INSERT INTO
// ducklake_snapshot). It stops at the first error, which names the
// statement. Bounded by ctx.
func (s *Server) ExecExtended(ctx context.Context, stmts ...Stmt) ([]Result, error) {
	return s.each(ctx, len(stmts), func(ctx context.Context, c *pgconn.PgConn, i int) (string, []Result, error) {
		args := make([][]byte, len(stmts[i].Args))
		for k, a := range stmts[i].Args {
			args[k] = []byte(a)
		}
		r, err := read(c.ExecParams(ctx, stmts[i].SQL, args, nil, nil, nil))
		return stmts[i].SQL, []Result{r}, err
	})
}

// each connects, runs n statements with do, and closes the connection.
func (s *Server) each(ctx context.Context, n int, do func(context.Context, *pgconn.PgConn, int) (string, []Result, error)) ([]Result, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, defaultTimeout)
		defer cancel()
	}
	c, err := connect(ctx, s.Addr())
	if err != nil {
		return nil, fmt.Errorf("rocklake: connect %s: %w", s.Addr(), err)
	}
	// The results are read: a Terminate that fails changes nothing.
	defer func() { _ = c.Close(ctx) }()
	var results []Result
	for i := 0; i < n; i++ {
		sql, rs, err := do(ctx, c, i)
		if err != nil {
			return results, fmt.Errorf("rocklake: %s: %w", oneLine(sql), err)
		}
		results = append(results, rs...)
	}
	return results, nil
}

func connect(ctx context.Context, addr string) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(connString(addr))
	if err != nil {
		return nil, err
	}
	cfg.RuntimeParams["application_name"] = "rocklake-migrate"
	return pgconn.ConnectConfig(ctx, cfg)
}

// readAll reads every statement's result of a simple query.
func readAll(mrr *pgconn.MultiResultReader) ([]Result, error) {
	var results []Result
	var firstErr error
	for mrr.NextResult() {
		r, err := read(mrr.ResultReader())
		if err != nil && firstErr == nil {
			firstErr = err
		}
		results = append(results, r)
	}
	if err := mrr.Close(); err != nil && firstErr == nil {
		firstErr = err
	}
	return results, firstErr
}

// read reads one statement's result, every value as text by its column's
// format code and type.
func read(rr *pgconn.ResultReader) (Result, error) {
	var r Result
	types := pgtype.NewMap() // not safe for concurrent use: one a result
	fields := rr.FieldDescriptions()
	for _, f := range fields {
		r.Columns = append(r.Columns, f.Name)
	}
	var decodeErr error
	for rr.NextRow() {
		values := rr.Values()
		row := make([]string, len(values))
		for k, v := range values {
			if k >= len(fields) {
				row[k] = string(v)
				continue
			}
			text, err := asText(types, fields[k], v)
			if err != nil && decodeErr == nil {
				decodeErr = err
			}
			row[k] = text
		}
		r.Rows = append(r.Rows, row)
	}
	tag, err := rr.Close()
	if err != nil {
		return r, err
	}
	r.Tag = tag.String()
	return r, decodeErr
}

// asText is a value as psql would print it (NULL as "", as psql -A does).
func asText(types *pgtype.Map, f pgconn.FieldDescription, v []byte) (string, error) {
	if v == nil {
		return "", nil
	}
	if f.Format == pgtype.TextFormatCode {
		return string(v), nil
	}
	t, ok := types.TypeForOID(f.DataTypeOID)
	if !ok {
		return string(v), nil
	}
	d, err := t.Codec.DecodeValue(types, f.DataTypeOID, f.Format, v)
	if err != nil {
		return "", fmt.Errorf("column %s (type %d): %w", f.Name, f.DataTypeOID, err)
	}
	switch d := d.(type) {
	case time.Time:
		return d.UTC().Format(time.RFC3339Nano), nil
	case string:
		return d, nil
	}
	return fmt.Sprint(d), nil
}

func oneLine(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}
