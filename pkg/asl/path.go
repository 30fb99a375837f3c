package asl

import (
	"fmt"
	"strconv"
	"strings"
)

// The JSONPath subset: $ (or $$ for the context object) followed by any
// number of .name, ['name'] (or ["name"]) and [index] steps. Each path names
// at most one node, so every path is also a reference path. Wildcards,
// recursive descent, slices, unions, filters and functions are rejected.

type pathStep struct {
	key   string
	index int
	isIdx bool
}

type jpath struct {
	raw     string
	context bool // $$: the context object
	steps   []pathStep
}

func (p *jpath) String() string { return p.raw }

// parsePath parses s, which must be exactly one path.
func parsePath(s string) (*jpath, error) {
	p, n, err := scanPath(s, false)
	if err != nil {
		return nil, err
	}
	if n != len(s) {
		return nil, fmt.Errorf("invalid JSONPath %q: unexpected %q at offset %d%s", s, s[n:], n, pathHint(s[n:]))
	}
	return p, nil
}

func pathHint(rest string) string {
	switch {
	case strings.HasPrefix(rest, ".."):
		return " (recursive descent is not supported)"
	case strings.HasPrefix(rest, "[*]"), strings.HasPrefix(rest, ".*"):
		return " (wildcards are not supported)"
	case strings.HasPrefix(rest, "[?"):
		return " (filters are not supported)"
	case strings.HasPrefix(rest, "[") && strings.ContainsAny(rest, ":,"):
		return " (slices and unions are not supported)"
	}
	return ""
}

// scanPath reads a path at the start of s and returns how many bytes it
// used. In an intrinsic function argument (inArg), a name also ends at a
// comma, a closing parenthesis or a space.
func scanPath(s string, inArg bool) (*jpath, int, error) {
	if !strings.HasPrefix(s, "$") {
		return nil, 0, fmt.Errorf("invalid JSONPath %q: a path starts with $", s)
	}
	p := &jpath{}
	i := 1
	if strings.HasPrefix(s, "$$") {
		p.context = true
		i = 2
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '.':
			j := i + 1
			for j < len(s) && !nameEnd(s[j], inArg) {
				j++
			}
			name := s[i+1 : j]
			if name == "" || strings.ContainsAny(name, "*?@()'\"$, \t\r\n") {
				return nil, 0, fmt.Errorf("invalid JSONPath %q: bad name after '.' at offset %d%s", s, i, pathHint(s[i:]))
			}
			p.steps = append(p.steps, pathStep{key: name})
			i = j
		case c == '[':
			step, n, err := scanBracket(s, i)
			if err != nil {
				return nil, 0, err
			}
			p.steps = append(p.steps, step)
			i += n
		default:
			if inArg {
				p.raw = s[:i]
				return p, i, nil
			}
			return nil, 0, fmt.Errorf("invalid JSONPath %q: unexpected %q at offset %d", s, s[i:], i)
		}
	}
	p.raw = s[:i]
	return p, i, nil
}

func nameEnd(c byte, inArg bool) bool {
	switch c {
	case '.', '[', ']':
		return true
	case ',', ')', ' ', '\t', '\n', '\r':
		return inArg
	}
	return false
}

// scanBracket reads [N], ['name'] or ["name"] at s[i].
func scanBracket(s string, i int) (pathStep, int, error) {
	bad := func() (pathStep, int, error) {
		return pathStep{}, 0, fmt.Errorf("invalid JSONPath %q: unsupported bracket expression at offset %d%s", s, i, pathHint(s[i:]))
	}
	j := i + 1
	if j >= len(s) {
		return bad()
	}
	if q := s[j]; q == '\'' || q == '"' {
		var b strings.Builder
		for j++; j < len(s); j++ {
			c := s[j]
			if c == '\\' && j+1 < len(s) {
				j++
				b.WriteByte(s[j])
				continue
			}
			if c == q {
				if j+1 < len(s) && s[j+1] == ']' {
					return pathStep{key: b.String()}, j + 2 - i, nil
				}
				return bad()
			}
			b.WriteByte(c)
		}
		return bad()
	}
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == j || k >= len(s) || s[k] != ']' {
		return bad()
	}
	n, err := strconv.Atoi(s[j:k])
	if err != nil {
		return bad()
	}
	return pathStep{index: n, isIdx: true}, k + 1 - i, nil
}

// get looks the path up in root.
func (p *jpath) get(root any) (any, bool) {
	v := root
	for _, st := range p.steps {
		if st.isIdx {
			a, ok := v.([]any)
			if !ok || st.index >= len(a) {
				return nil, false
			}
			v = a[st.index]
			continue
		}
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[st.key]; !ok {
			return nil, false
		}
	}
	return v, true
}

// setPath returns a copy of root with v at the path, creating missing
// objects on the way; root itself is not modified. A step into something
// that is not an object (or an array index out of range) fails.
func setPath(root any, steps []pathStep, v any) (any, error) {
	if len(steps) == 0 {
		return v, nil
	}
	st := steps[0]
	if st.isIdx {
		a, ok := root.([]any)
		if !ok || st.index >= len(a) {
			return nil, fmt.Errorf("no array element [%d] in %s", st.index, typeName(root))
		}
		child, err := setPath(a[st.index], steps[1:], v)
		if err != nil {
			return nil, err
		}
		c := append([]any(nil), a...)
		c[st.index] = child
		return c, nil
	}
	m, ok := root.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("cannot set field %q in a %s", st.key, typeName(root))
	}
	var next any = map[string]any{}
	if old, ok := m[st.key]; ok {
		next = old
	}
	child, err := setPath(next, steps[1:], v)
	if err != nil {
		return nil, err
	}
	c := make(map[string]any, len(m)+1)
	for k, x := range m {
		c[k] = x
	}
	c[st.key] = child
	return c, nil
}
