package rocklake

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// A minimal PostgreSQL frontend (protocol 3.0): startup without TLS or
// authentication, and one extended-protocol round (Parse, Bind with text
// parameters, Execute, Sync). Enough for the readiness check and for the
// statements RockLake reads only from bound parameters; psql does the rest.

// pgError is an ErrorResponse from the server.
type pgError struct {
	Severity, Code, Message string
}

func (e *pgError) Error() string {
	return fmt.Sprintf("%s: %s (SQLSTATE %s)", e.Severity, e.Message, e.Code)
}

type pgConn struct {
	conn net.Conn
	r    *bufio.Reader
	stop func() bool
}

// defaultIOTimeout bounds each round when the context has no deadline.
const defaultIOTimeout = 60 * time.Second

func dialPG(ctx context.Context, addr string) (*pgConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	c := &pgConn{conn: conn, r: bufio.NewReader(conn)}
	// Cancelling ctx closes the connection, which ends any blocked read.
	c.stop = context.AfterFunc(ctx, func() { _ = conn.Close() })
	c.setDeadline(ctx)

	var body []byte
	body = binary.BigEndian.AppendUint32(body, 196608) // protocol 3.0
	for _, kv := range [][2]string{{"user", User}, {"database", Database}, {"application_name", "rocklake-migrate"}} {
		body = append(body, kv[0]...)
		body = append(body, 0)
		body = append(body, kv[1]...)
		body = append(body, 0)
	}
	body = append(body, 0)
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	if _, err := conn.Write(append(msg, body...)); err != nil {
		c.Close()
		return nil, c.ctxErr(ctx, err)
	}
	for {
		typ, payload, err := c.read()
		if err != nil {
			c.Close()
			return nil, c.ctxErr(ctx, err)
		}
		switch typ {
		case 'R':
			if len(payload) < 4 {
				c.Close()
				return nil, errors.New("short authentication message")
			}
			if code := binary.BigEndian.Uint32(payload); code != 0 {
				c.Close()
				return nil, fmt.Errorf("server asks for authentication (method %d); this client sends none", code)
			}
		case 'E':
			c.Close()
			return nil, parseError(payload)
		case 'Z':
			return c, nil
		}
		// 'S' ParameterStatus, 'K' BackendKeyData, 'N' NoticeResponse: skipped.
	}
}

func (c *pgConn) setDeadline(ctx context.Context) {
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(defaultIOTimeout)
	}
	_ = c.conn.SetDeadline(deadline)
}

func (c *pgConn) ctxErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

// Close sends Terminate and closes the connection.
func (c *pgConn) Close() {
	c.stop()
	_ = c.conn.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.conn.Write([]byte{'X', 0, 0, 0, 4})
	_ = c.conn.Close()
}

func (c *pgConn) read() (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(c.r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("bad message length %d for %q", n, hdr[0])
	}
	payload := make([]byte, n-4)
	if _, err := io.ReadFull(c.r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

func message(typ byte, body []byte) []byte {
	msg := []byte{typ}
	msg = binary.BigEndian.AppendUint32(msg, uint32(len(body)+4))
	return append(msg, body...)
}

func cstring(b []byte, s string) []byte { return append(append(b, s...), 0) }

func (c *pgConn) execParams(ctx context.Context, sql string, args []string) ([][]string, string, error) {
	c.setDeadline(ctx)
	// Parse: unnamed statement, no parameter types (the server infers them).
	parse := cstring(nil, "")
	parse = cstring(parse, sql)
	parse = binary.BigEndian.AppendUint16(parse, 0)
	// Bind: unnamed portal, all parameters and results in text.
	bind := cstring(nil, "")
	bind = cstring(bind, "")
	bind = binary.BigEndian.AppendUint16(bind, 0)
	bind = binary.BigEndian.AppendUint16(bind, uint16(len(args)))
	for _, a := range args {
		bind = binary.BigEndian.AppendUint32(bind, uint32(len(a)))
		bind = append(bind, a...)
	}
	bind = binary.BigEndian.AppendUint16(bind, 0)
	execute := binary.BigEndian.AppendUint32(cstring(nil, ""), 0)

	var out []byte
	out = append(out, message('P', parse)...)
	out = append(out, message('B', bind)...)
	out = append(out, message('E', execute)...)
	out = append(out, message('S', nil)...)
	if _, err := c.conn.Write(out); err != nil {
		return nil, "", c.ctxErr(ctx, err)
	}

	var (
		rows   [][]string
		tag    string
		runErr error
	)
	for {
		typ, payload, err := c.read()
		if err != nil {
			return nil, "", c.ctxErr(ctx, err)
		}
		switch typ {
		case 'D':
			row, err := parseDataRow(payload)
			if err != nil {
				return nil, "", err
			}
			rows = append(rows, row)
		case 'C':
			tag = strings.TrimRight(string(payload), "\x00")
		case 'E':
			if runErr == nil {
				runErr = parseError(payload)
			}
		case 'Z':
			if runErr != nil {
				return nil, "", runErr
			}
			return rows, tag, nil
		}
		// '1' ParseComplete, '2' BindComplete, 'T', 'n', 's', 'I', 'N', 'S': skipped.
	}
}

func parseDataRow(p []byte) ([]string, error) {
	if len(p) < 2 {
		return nil, errors.New("short DataRow")
	}
	n := int(binary.BigEndian.Uint16(p))
	p = p[2:]
	row := make([]string, 0, n)
	for i := 0; i < n; i++ {
		if len(p) < 4 {
			return nil, errors.New("short DataRow")
		}
		l := int32(binary.BigEndian.Uint32(p))
		p = p[4:]
		if l < 0 {
			row = append(row, "") // NULL, as psql -At prints it
			continue
		}
		if int(l) > len(p) {
			return nil, errors.New("short DataRow")
		}
		row = append(row, string(p[:l]))
		p = p[l:]
	}
	return row, nil
}

func parseError(p []byte) error {
	e := &pgError{}
	for len(p) > 0 && p[0] != 0 {
		field := p[0]
		end := strings.IndexByte(string(p[1:]), 0)
		if end < 0 {
			break
		}
		val := string(p[1 : 1+end])
		p = p[end+2:]
		switch field {
		case 'S':
			e.Severity = val
		case 'C':
			e.Code = val
		case 'M':
			e.Message = val
		}
	}
	return e
}
