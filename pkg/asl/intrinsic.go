package asl

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"strings"
)

// Intrinsic functions: States.Name(arg, ...), where an argument is a
// 'quoted string' (escapes \' \{ \} \\), a number, true, false, null, a
// path, or a nested call.

type intrinsicSpec struct {
	min, max int // argument count; max < 0: any
}

var intrinsics = map[string]intrinsicSpec{
	"States.Format":       {1, -1},
	"States.StringToJson": {1, 1},
	"States.JsonToString": {1, 1},
	"States.Array":        {0, -1},
	"States.ArrayRange":   {3, 3},
	"States.ArrayLength":  {1, 1},
	"States.MathAdd":      {2, 2},
	"States.UUID":         {0, 0},
	"States.JsonMerge":    {3, 3},
}

// unsupportedIntrinsics exist in the language but not in this interpreter.
var unsupportedIntrinsics = map[string]bool{
	"States.ArrayPartition": true, "States.ArrayContains": true, "States.ArrayGetItem": true,
	"States.ArrayUnique": true, "States.Base64Encode": true, "States.Base64Decode": true,
	"States.Hash": true, "States.MathRandom": true,
	"States.StringSplit": true,
}

const maxArrayRange = 1000

type fmtPart struct {
	text        string
	placeholder bool // an unescaped {}
}

type iarg struct {
	lit     any       // literal value (string, json.Number, bool, nil)
	isLit   bool      //
	parts   []fmtPart // string literal, for States.Format templates
	path    *jpath
	call    *icall
	srcText string
}

type icall struct {
	name string
	args []*iarg
	src  string
}

// parseIntrinsic parses a whole intrinsic function invocation.
func parseIntrinsic(s string) (*icall, error) {
	p := &iparser{s: s}
	c, err := p.call()
	if err != nil {
		return nil, fmt.Errorf("invalid intrinsic function %q: %w", s, err)
	}
	p.ws()
	if p.i != len(s) {
		return nil, fmt.Errorf("invalid intrinsic function %q: unexpected %q after the call", s, s[p.i:])
	}
	return c, nil
}

type iparser struct {
	s     string
	i     int
	depth int
}

func (p *iparser) ws() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *iparser) call() (*icall, error) {
	start := p.i
	j := p.i
	for j < len(p.s) && (p.s[j] == '.' || isAlnum(p.s[j])) {
		j++
	}
	name := p.s[p.i:j]
	if !strings.HasPrefix(name, "States.") {
		return nil, fmt.Errorf("expected a function name States.<Name> at offset %d", p.i)
	}
	if unsupportedIntrinsics[name] {
		return nil, fmt.Errorf("intrinsic function %s is not supported by this interpreter", name)
	}
	spec, ok := intrinsics[name]
	if !ok {
		return nil, fmt.Errorf("unknown intrinsic function %s", name)
	}
	p.i = j
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '(' {
		return nil, fmt.Errorf("expected '(' after %s", name)
	}
	p.i++
	p.depth++
	if p.depth > 10 {
		return nil, fmt.Errorf("intrinsic functions nested more than 10 deep")
	}
	c := &icall{name: name}
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ')' {
		p.i++
	} else {
		for {
			p.ws()
			a, err := p.arg()
			if err != nil {
				return nil, err
			}
			c.args = append(c.args, a)
			p.ws()
			if p.i >= len(p.s) {
				return nil, fmt.Errorf("missing ')' to close %s", name)
			}
			if p.s[p.i] == ',' {
				p.i++
				continue
			}
			if p.s[p.i] == ')' {
				p.i++
				break
			}
			return nil, fmt.Errorf("expected ',' or ')' at offset %d, found %q", p.i, p.s[p.i:])
		}
	}
	p.depth--
	c.src = p.s[start:p.i]
	if len(c.args) < spec.min || spec.max >= 0 && len(c.args) > spec.max {
		want := fmt.Sprint(spec.min)
		switch {
		case spec.max < 0:
			want = fmt.Sprintf("at least %d", spec.min)
		case spec.max != spec.min:
			want = fmt.Sprintf("%d to %d", spec.min, spec.max)
		}
		return nil, fmt.Errorf("%s takes %s argument(s), got %d", name, want, len(c.args))
	}
	if err := c.checkStatic(); err != nil {
		return nil, err
	}
	return c, nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (p *iparser) arg() (*iarg, error) {
	if p.i >= len(p.s) {
		return nil, fmt.Errorf("missing argument at the end")
	}
	start := p.i
	c := p.s[p.i]
	switch {
	case c == '\'':
		return p.str()
	case c == '$':
		path, n, err := scanPath(p.s[p.i:], true)
		if err != nil {
			return nil, err
		}
		p.i += n
		return &iarg{path: path, srcText: p.s[start:p.i]}, nil
	case c == '-' || c >= '0' && c <= '9':
		j := p.i
		for j < len(p.s) && strings.IndexByte("+-.eE0123456789", p.s[j]) >= 0 {
			j++
		}
		lit := p.s[p.i:j]
		if !json.Valid([]byte(lit)) {
			return nil, fmt.Errorf("invalid number %q at offset %d", lit, p.i)
		}
		p.i = j
		return &iarg{lit: json.Number(lit), isLit: true, srcText: lit}, nil
	case strings.HasPrefix(p.s[p.i:], "States."):
		call, err := p.call()
		if err != nil {
			return nil, err
		}
		return &iarg{call: call, srcText: call.src}, nil
	}
	for _, kw := range []struct {
		s string
		v any
	}{{"true", true}, {"false", false}, {"null", nil}} {
		if strings.HasPrefix(p.s[p.i:], kw.s) && (p.i+len(kw.s) == len(p.s) || !isAlnum(p.s[p.i+len(kw.s)])) {
			p.i += len(kw.s)
			return &iarg{lit: kw.v, isLit: true, srcText: kw.s}, nil
		}
	}
	return nil, fmt.Errorf("invalid argument at offset %d: %q", p.i, p.s[p.i:])
}

// str reads a quoted string literal. The reserved characters ' { } \ must
// be escaped with a backslash; an unescaped {} is a States.Format
// placeholder, and any other backslash is an error (an "open escape").
func (p *iparser) str() (*iarg, error) {
	start := p.i
	p.i++ // opening quote
	var parts []fmtPart
	var cur strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch c {
		case '\\':
			if p.i+1 >= len(p.s) || strings.IndexByte(`'{}\`, p.s[p.i+1]) < 0 {
				return nil, fmt.Errorf("open escape '\\' at offset %d (only \\' \\{ \\} \\\\ are escapes)", p.i)
			}
			cur.WriteByte(p.s[p.i+1])
			p.i += 2
		case '\'':
			p.i++
			if cur.Len() > 0 || len(parts) == 0 {
				parts = append(parts, fmtPart{text: cur.String()})
			}
			var plain strings.Builder
			for _, pt := range parts {
				if pt.placeholder {
					plain.WriteString("{}")
				} else {
					plain.WriteString(pt.text)
				}
			}
			return &iarg{lit: plain.String(), isLit: true, parts: parts, srcText: p.s[start:p.i]}, nil
		case '{':
			if p.i+1 < len(p.s) && p.s[p.i+1] == '}' {
				if cur.Len() > 0 {
					parts = append(parts, fmtPart{text: cur.String()})
					cur.Reset()
				}
				parts = append(parts, fmtPart{placeholder: true})
				p.i += 2
				continue
			}
			return nil, fmt.Errorf("unescaped '{' at offset %d (write \\{)", p.i)
		case '}':
			return nil, fmt.Errorf("unescaped '}' at offset %d (write \\})", p.i)
		default:
			cur.WriteByte(c)
			p.i++
		}
	}
	return nil, fmt.Errorf("unterminated string starting at offset %d", start)
}

// checkStatic checks what can be checked before running: literal argument
// types and the placeholder count of a literal States.Format template.
func (c *icall) checkStatic() error {
	lit := func(i int) (any, bool) { return c.args[i].lit, c.args[i].isLit }
	switch c.name {
	case "States.Format":
		if v, ok := lit(0); ok {
			if _, isStr := v.(string); !isStr {
				return fmt.Errorf("States.Format: the template must be a string, not %s", typeName(v))
			}
			n := 0
			for _, pt := range c.args[0].parts {
				if pt.placeholder {
					n++
				}
			}
			if n != len(c.args)-1 {
				return fmt.Errorf("States.Format: the template has %d {} placeholder(s) but %d value(s) follow", n, len(c.args)-1)
			}
		}
	case "States.StringToJson":
		if v, ok := lit(0); ok {
			if _, isStr := v.(string); !isStr {
				return fmt.Errorf("States.StringToJson takes a string, not %s", typeName(v))
			}
		}
	case "States.ArrayRange":
		for i := range 3 {
			if v, ok := lit(i); ok {
				n, isNum := v.(json.Number)
				if !isNum {
					return fmt.Errorf("States.ArrayRange: argument %d must be an integer, not %s", i+1, typeName(v))
				}
				k, isInt := numInt(n)
				if !isInt {
					return fmt.Errorf("States.ArrayRange: argument %d must be an integer, not %s", i+1, n)
				}
				if i == 2 && k == 0 {
					return fmt.Errorf("States.ArrayRange: the step must not be 0")
				}
			}
		}
	case "States.MathAdd":
		for i := range 2 {
			if v, ok := lit(i); ok {
				if _, isNum := v.(json.Number); !isNum {
					return fmt.Errorf("States.MathAdd: argument %d must be a number, not %s", i+1, typeName(v))
				}
			}
		}
	case "States.ArrayLength":
		if v, ok := lit(0); ok {
			return fmt.Errorf("States.ArrayLength takes an array, not %s", typeName(v))
		}
	case "States.JsonMerge":
		// AWS merges shallowly only: the deep-merge flag must be false.
		if v, ok := lit(2); !ok || v != false {
			return fmt.Errorf("States.JsonMerge: the third argument must be the literal false (a deep merge is not supported)")
		}
	}
	return nil
}

// env is what paths and intrinsic functions are evaluated against.
type env struct {
	input any
	ctx   func() any // the context object, built on first use
}

func (e *env) lookup(p *jpath) (any, bool) {
	if p.context {
		if e.ctx == nil {
			return nil, false
		}
		return p.get(e.ctx())
	}
	return p.get(e.input)
}

func intrinsicErr(c *icall, format string, args ...any) *stateError {
	return newErr(ErrIntrinsicFailure, "%s: %s", c.src, fmt.Sprintf(format, args...))
}

func (c *icall) eval(e *env) (any, error) {
	vals := make([]any, len(c.args))
	for i, a := range c.args {
		switch {
		case a.isLit:
			vals[i] = a.lit
		case a.path != nil:
			v, ok := e.lookup(a.path)
			if !ok {
				return nil, newErr(ErrRuntime, "the JSONPath %s in %s could not be found in the input %s", a.path, c.src, excerpt(e.input, 1024))
			}
			vals[i] = v
		default:
			v, err := a.call.eval(e)
			if err != nil {
				return nil, err
			}
			vals[i] = v
		}
	}
	switch c.name {
	case "States.Format":
		return c.format(vals)
	case "States.StringToJson":
		s, ok := vals[0].(string)
		if !ok {
			return nil, intrinsicErr(c, "the argument must be a string, not %s", typeName(vals[0]))
		}
		v, err := decodeValue([]byte(s))
		if err != nil {
			return nil, intrinsicErr(c, "the argument is not valid JSON: %v", err)
		}
		return v, nil
	case "States.JsonToString":
		b, err := encodeValue(vals[0])
		if err != nil {
			return nil, intrinsicErr(c, "%v", err)
		}
		return string(b), nil
	case "States.Array":
		return vals, nil
	case "States.ArrayRange":
		var n [3]int64
		for i, v := range vals {
			num, ok := v.(json.Number)
			if !ok {
				return nil, intrinsicErr(c, "argument %d must be an integer, not %s", i+1, typeName(v))
			}
			k, ok := numInt(num)
			if !ok {
				return nil, intrinsicErr(c, "argument %d must be an integer, not %s", i+1, num)
			}
			n[i] = k
		}
		start, end, step := n[0], n[1], n[2]
		if step == 0 {
			return nil, intrinsicErr(c, "the step must not be 0")
		}
		if step > 0 && end < start || step < 0 && end > start {
			return []any{}, nil
		}
		diff := new(big.Int).Sub(big.NewInt(end), big.NewInt(start))
		cnt := diff.Quo(diff, big.NewInt(step))
		cnt.Add(cnt, big.NewInt(1))
		if !cnt.IsInt64() || cnt.Int64() > maxArrayRange {
			return nil, intrinsicErr(c, "the range has %s items, more than the limit of %d", cnt, maxArrayRange)
		}
		count := cnt.Int64()
		out := make([]any, count)
		for i := range out {
			out[i] = intNumber(start + int64(i)*step)
		}
		return out, nil
	case "States.JsonMerge":
		out := map[string]any{}
		for i, v := range vals[:2] {
			m, ok := v.(map[string]any)
			if !ok {
				return nil, intrinsicErr(c, "argument %d must be an object, not %s", i+1, typeName(v))
			}
			maps.Copy(out, m) // the second's keys win
		}
		return out, nil
	case "States.ArrayLength":
		a, ok := vals[0].([]any)
		if !ok {
			return nil, intrinsicErr(c, "the argument must be an array, not %s", typeName(vals[0]))
		}
		return intNumber(int64(len(a))), nil
	case "States.MathAdd":
		var sum big.Int
		for i, v := range vals {
			num, ok := v.(json.Number)
			if !ok {
				return nil, intrinsicErr(c, "argument %d must be a number, not %s", i+1, typeName(v))
			}
			r, ok := numRat(num)
			if !ok {
				return nil, intrinsicErr(c, "argument %d is not a number: %s", i+1, num)
			}
			sum.Add(&sum, roundRat(r))
		}
		return json.Number(sum.String()), nil
	case "States.UUID":
		return newUUID(), nil
	}
	return nil, intrinsicErr(c, "not implemented")
}

// roundRat rounds to the nearest integer, halves away from zero
// (AWS: "Step Functions will round it off to the nearest integer").
func roundRat(r *big.Rat) *big.Int {
	if r.IsInt() {
		return new(big.Int).Set(r.Num())
	}
	f, _ := r.Float64()
	return big.NewInt(int64(math.Round(f)))
}

func (c *icall) format(vals []any) (any, error) {
	var parts []fmtPart
	if a := c.args[0]; a.isLit {
		parts = a.parts
	} else {
		tmpl, ok := vals[0].(string)
		if !ok {
			return nil, intrinsicErr(c, "the template must be a string, not %s", typeName(vals[0]))
		}
		for i, s := range strings.Split(tmpl, "{}") {
			if i > 0 {
				parts = append(parts, fmtPart{placeholder: true})
			}
			parts = append(parts, fmtPart{text: s})
		}
	}
	var b strings.Builder
	next := 1
	for _, pt := range parts {
		if !pt.placeholder {
			b.WriteString(pt.text)
			continue
		}
		if next >= len(vals) {
			return nil, intrinsicErr(c, "the template has more {} placeholders than the %d value(s) given", len(vals)-1)
		}
		switch v := vals[next].(type) {
		case string:
			b.WriteString(v)
		case json.Number:
			b.WriteString(string(v))
		case bool:
			fmt.Fprint(&b, v)
		case nil:
			b.WriteString("null")
		default:
			return nil, intrinsicErr(c, "value %d is %s; only strings, numbers, booleans and null can be formatted", next, typeName(v))
		}
		next++
	}
	if next != len(vals) {
		return nil, intrinsicErr(c, "the template has %d {} placeholder(s) but %d value(s) were given", next-1, len(vals)-1)
	}
	return b.String(), nil
}

// newUUID returns a random (version 4) UUID.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
