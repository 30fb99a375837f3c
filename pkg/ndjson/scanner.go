package ndjson

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner reads the JSON of one line. Its methods skip whitespace before
// what they read, so input spaced out by another tool still parses.
type scanner struct {
	b []byte
	i int
}

var errEnd = errors.New("line ends too soon")

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("at byte %d: %s", s.i+1, fmt.Sprintf(format, args...))
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\r', '\n':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next byte, 0 at the end.
func (s *scanner) peek() byte {
	s.skipSpace()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return errEnd
		}
		return s.errorf("want %q, found %q", c, s.b[s.i])
	}
	s.i++
	return nil
}

// more reads the ',' between members of an object or array closed by end,
// or end itself, and reports whether another member follows.
func (s *scanner) more(end byte, first bool) (bool, error) {
	switch c := s.peek(); {
	case c == end:
		s.i++
		return false, nil
	case first:
		return true, nil
	case c == ',':
		s.i++
		return true, nil
	case c == 0:
		return false, errEnd
	default:
		return false, s.errorf("want ',' or %q, found %q", end, c)
	}
}

// key reads an object member's name and the colon after it. The name is
// raw: member names here never need escapes, so an escaped one just does
// not match.
func (s *scanner) key() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	n := bytes.IndexByte(s.b[start:], '"')
	if n < 0 {
		n = len(s.b) - start
	}
	if bs := bytes.IndexByte(s.b[start:start+n], '\\'); bs >= 0 {
		n = bs
	}
	s.i = start + n
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	k := s.b[start : s.i-1]
	if s.i < len(s.b) && s.b[s.i] == ':' {
		s.i++ // the usual spelling, without the space skipping of expect
		return k, nil
	}
	return k, s.expect(':')
}

// literal reads word (true, false or null) if it comes next.
func (s *scanner) literal(word string) bool {
	s.skipSpace()
	if len(s.b)-s.i >= len(word) && string(s.b[s.i:s.i+len(word)]) == word {
		s.i += len(word)
		return true
	}
	return false
}

// rawString reads a JSON string and returns its content, unescaped. It
// aliases the line when there is nothing to unescape.
func (s *scanner) rawString() ([]byte, error) {
	if err := s.expect('"'); err != nil {
		return nil, err
	}
	start := s.i
	for s.i < len(s.b) {
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return s.b[start : s.i-1], nil
		case c == '\\':
			return s.unescape(append([]byte(nil), s.b[start:s.i]...))
		case c < ' ':
			return nil, s.errorf("control character in a string")
		}
		s.i++
	}
	return nil, errEnd
}

// unescape continues a string at a backslash, appending to dst.
func (s *scanner) unescape(dst []byte) ([]byte, error) {
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return dst, nil
		case c < ' ':
			return nil, s.errorf("control character in a string")
		case c != '\\':
			dst = append(dst, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			return nil, errEnd
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			dst = append(dst, e)
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, err := s.hex4()
			if err != nil {
				return nil, err
			}
			if utf16.IsSurrogate(r) {
				// A pair spells one rune; a lone half spells none.
				var r2 rune = -1
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					s.i += 2
					if r2, err = s.hex4(); err != nil {
						return nil, err
					}
				}
				if r = utf16.DecodeRune(r, r2); r == utf8.RuneError {
					return nil, s.errorf(`\u escape is half a surrogate pair`)
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return nil, s.errorf("bad escape \\%c", e)
		}
	}
	return nil, errEnd
}

func (s *scanner) hex4() (rune, error) {
	if s.i+4 > len(s.b) {
		return 0, errEnd
	}
	x, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 16)
	if err != nil {
		return 0, s.errorf(`bad \u escape`)
	}
	s.i += 4
	return rune(x), nil
}

// string reads a JSON string of valid UTF-8.
func (s *scanner) string() (string, error) {
	b, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !utf8.Valid(b) {
		return "", s.errorf("string is not valid UTF-8")
	}
	return string(b), nil
}

// uintString reads a uint64 written as protobuf JSON writes one: a string
// of decimal digits, without leading zeros.
func (s *scanner) uintString() (uint64, error) {
	b, err := s.rawString()
	if err != nil {
		return 0, err
	}
	x, ok := parseDecimal(b)
	if !ok {
		return 0, s.errorf("%q is not a decimal uint64", b)
	}
	return x, nil
}

func (s *scanner) intString() (int64, error) {
	b, err := s.rawString()
	if err != nil {
		return 0, err
	}
	neg := len(b) > 0 && b[0] == '-'
	digits := b
	if neg {
		digits = b[1:]
	}
	x, ok := parseDecimal(digits)
	switch {
	case !ok || (neg && x == 0):
	case !neg && x <= math.MaxInt64:
		return int64(x), nil
	case neg && x <= 1<<63:
		return int64(-x), nil // -x wraps to the right value for x = 2^63
	}
	return 0, s.errorf("%q is not a decimal int64", b)
}

// number reads a bare JSON integer (the tag, an unnamed enum value).
func (s *scanner) number() (int64, error) {
	s.skipSpace()
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	n, err := strconv.ParseInt(string(s.b[start:s.i]), 10, 64)
	if err != nil || (s.b[start] == '0' && s.i-start > 1) || (s.b[start] == '-' && (n == 0 || s.b[start+1] == '0')) {
		s.i = start
		return 0, s.errorf("want an integer")
	}
	return n, nil
}

// parseDecimal parses canonical decimal digits: no sign, no leading zero.
func parseDecimal(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 || (b[0] == '0' && len(b) > 1) {
		return 0, false
	}
	var x uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		hi, lo := bits.Mul64(x, 10)
		lo, carry := bits.Add64(lo, uint64(c-'0'), 0)
		if hi != 0 || carry != 0 {
			return 0, false
		}
		x = lo
	}
	return x, true
}
