package slatedb_test

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// pgConn is the least of a PostgreSQL wire-protocol client that the
// compatibility tests need to write through `rocklake serve`: startup without
// a password and the simple query protocol. It keeps the tests free of a
// psql dependency.
type pgConn struct {
	c net.Conn
	r *bufio.Reader
}

func pgConnect(addr string, timeout time.Duration) (*pgConn, error) {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	_ = c.SetDeadline(time.Now().Add(timeout))
	p := &pgConn{c: c, r: bufio.NewReader(c)}
	var body []byte
	body = binary.BigEndian.AppendUint32(body, 3<<16) // protocol 3.0
	for _, s := range []string{"user", "rocklake", "database", "rocklake", ""} {
		body = append(append(body, s...), 0)
	}
	msg := binary.BigEndian.AppendUint32(nil, uint32(len(body)+4))
	if _, err := c.Write(append(msg, body...)); err != nil {
		c.Close()
		return nil, err
	}
	for {
		typ, payload, err := p.read()
		if err != nil {
			c.Close()
			return nil, fmt.Errorf("startup: %w", err)
		}
		switch typ {
		case 'R':
			if len(payload) < 4 || binary.BigEndian.Uint32(payload) != 0 {
				c.Close()
				return nil, errors.New("startup: the server asks for authentication")
			}
		case 'E':
			c.Close()
			return nil, fmt.Errorf("startup: %s", pgError(payload))
		case 'Z':
			return p, nil
		}
	}
}

func (p *pgConn) read() (byte, []byte, error) {
	var head [5]byte
	if _, err := io.ReadFull(p.r, head[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[1:])
	if n < 4 || n > 64<<20 {
		return 0, nil, fmt.Errorf("message %q of length %d", head[0], n)
	}
	payload := make([]byte, n-4)
	_, err := io.ReadFull(p.r, payload)
	return head[0], payload, err
}

// query runs one simple query (which may hold several statements) and returns
// the rows of its last result as text, or the server's first error.
func (p *pgConn) query(sql string, timeout time.Duration) ([][]string, error) {
	_ = p.c.SetDeadline(time.Now().Add(timeout))
	msg := append([]byte{'Q'}, binary.BigEndian.AppendUint32(nil, uint32(len(sql)+5))...)
	msg = append(append(msg, sql...), 0)
	if _, err := p.c.Write(msg); err != nil {
		return nil, err
	}
	var rows [][]string
	var qerr error
	for {
		typ, payload, err := p.read()
		if err != nil {
			return nil, err
		}
		switch typ {
		case 'T':
			rows = nil
		case 'D':
			rows = append(rows, dataRow(payload))
		case 'E':
			if qerr == nil {
				qerr = errors.New(pgError(payload))
			}
		case 'Z':
			return rows, qerr
		}
	}
}

func (p *pgConn) close() {
	_, _ = p.c.Write([]byte{'X', 0, 0, 0, 4})
	p.c.Close()
}

func dataRow(b []byte) []string {
	if len(b) < 2 {
		return nil
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	row := make([]string, 0, n)
	for i := 0; i < n && len(b) >= 4; i++ {
		l := int32(binary.BigEndian.Uint32(b))
		b = b[4:]
		if l < 0 {
			row = append(row, "NULL")
			continue
		}
		if int(l) > len(b) {
			break
		}
		row = append(row, string(b[:l]))
		b = b[l:]
	}
	return row
}

// pgError renders an ErrorResponse's severity, code and message.
func pgError(b []byte) string {
	var parts []string
	for len(b) > 1 {
		field := b[0]
		end := strings.IndexByte(string(b[1:]), 0)
		if end < 0 {
			break
		}
		v := string(b[1 : 1+end])
		b = b[2+end:]
		switch field {
		case 'S', 'C', 'M':
			parts = append(parts, v)
		}
	}
	return strings.Join(parts, " ")
}
