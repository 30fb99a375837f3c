package rocklake

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"strconv"
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

func (c *pgConn) execParams(ctx context.Context, sql string, args []string) ([]string, [][]string, string, error) {
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
	out = append(out, message('D', cstring([]byte{'P'}, ""))...)
	out = append(out, message('E', execute)...)
	out = append(out, message('S', nil)...)
	if _, err := c.conn.Write(out); err != nil {
		return nil, nil, "", c.ctxErr(ctx, err)
	}
	results, err := c.readResults(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	if len(results) == 0 {
		return nil, nil, "", nil
	}
	r := results[len(results)-1]
	return r.Columns, r.Rows, r.Tag, nil
}

// simpleQuery runs SQL with the simple-query protocol ('Q'): one Result per
// statement that returned a command tag.
func (c *pgConn) simpleQuery(ctx context.Context, sql string) ([]Result, error) {
	c.setDeadline(ctx)
	if _, err := c.conn.Write(message('Q', cstring(nil, sql))); err != nil {
		return nil, c.ctxErr(ctx, err)
	}
	return c.readResults(ctx)
}

// field is one column of a RowDescription.
type field struct {
	name   string
	typOID uint32
	format uint16
}

// readResults reads until ReadyForQuery. Values are decoded to text by the
// RowDescription: RockLake sends integer columns in binary whatever format
// was asked for (and says so in the description), which psql prints as
// empty strings.
func (c *pgConn) readResults(ctx context.Context) ([]Result, error) {
	var (
		results []Result
		cur     Result
		fields  []field
		runErr  error
	)
	for {
		typ, payload, err := c.read()
		if err != nil {
			return nil, c.ctxErr(ctx, err)
		}
		switch typ {
		case 'T':
			fields, err = parseRowDescription(payload)
			if err != nil {
				return nil, err
			}
			cur.Columns = cur.Columns[:0]
			for _, f := range fields {
				cur.Columns = append(cur.Columns, f.name)
			}
		case 'D':
			row, err := parseDataRow(payload, fields)
			if err != nil {
				return nil, err
			}
			cur.Rows = append(cur.Rows, row)
		case 'C':
			cur.Tag = strings.TrimRight(string(payload), "\x00")
			results = append(results, cur)
			cur, fields = Result{}, nil
		case 'E':
			if runErr == nil {
				runErr = parseError(payload)
			}
		case 'Z':
			if runErr != nil {
				return nil, runErr
			}
			return results, nil
		}
		// '1' ParseComplete, '2' BindComplete, 'n', 's', 'I', 'N', 'S': skipped.
	}
}

func parseRowDescription(p []byte) ([]field, error) {
	if len(p) < 2 {
		return nil, errors.New("short RowDescription")
	}
	n := int(binary.BigEndian.Uint16(p))
	p = p[2:]
	fields := make([]field, 0, n)
	for i := 0; i < n; i++ {
		end := strings.IndexByte(string(p), 0)
		if end < 0 || len(p) < end+1+18 {
			return nil, errors.New("short RowDescription")
		}
		f := field{name: string(p[:end])}
		p = p[end+1:]
		f.typOID = binary.BigEndian.Uint32(p[6:])
		f.format = binary.BigEndian.Uint16(p[16:])
		p = p[18:]
		fields = append(fields, f)
	}
	return fields, nil
}

// pgEpoch is 2000-01-01, the origin of binary timestamps.
var pgEpoch = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// decodeBinary turns a binary value of the common types into its text form;
// others are returned as they are.
func decodeBinary(oid uint32, b []byte) string {
	switch {
	case oid == 16 && len(b) == 1: // bool
		if b[0] != 0 {
			return "true"
		}
		return "false"
	case oid == 20 && len(b) == 8: // int8
		return strconv.FormatInt(int64(binary.BigEndian.Uint64(b)), 10)
	case oid == 23 && len(b) == 4: // int4
		return strconv.FormatInt(int64(int32(binary.BigEndian.Uint32(b))), 10)
	case oid == 21 && len(b) == 2: // int2
		return strconv.FormatInt(int64(int16(binary.BigEndian.Uint16(b))), 10)
	case oid == 701 && len(b) == 8: // float8
		return strconv.FormatFloat(math.Float64frombits(binary.BigEndian.Uint64(b)), 'g', -1, 64)
	case oid == 700 && len(b) == 4: // float4
		return strconv.FormatFloat(float64(math.Float32frombits(binary.BigEndian.Uint32(b))), 'g', -1, 32)
	case (oid == 1114 || oid == 1184) && len(b) == 8: // timestamp, timestamptz
		return pgEpoch.Add(time.Duration(int64(binary.BigEndian.Uint64(b))) * time.Microsecond).Format(time.RFC3339Nano)
	}
	return string(b)
}

func parseDataRow(p []byte, fields []field) ([]string, error) {
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
			row = append(row, "") // NULL, as psql -A prints it
			continue
		}
		if int(l) > len(p) {
			return nil, errors.New("short DataRow")
		}
		v := string(p[:l])
		if i < len(fields) && fields[i].format == 1 {
			v = decodeBinary(fields[i].typOID, p[:l])
		}
		row = append(row, v)
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
