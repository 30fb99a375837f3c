package asl

import (
	"fmt"
	"strings"
)

// A payload template (Parameters, ItemSelector, ResultSelector): a JSON
// value whose object keys ending in ".$" take their value from a path or
// an intrinsic function. Static subtrees are kept as they are.

type tmpl struct {
	static any // when the subtree has no dynamic part
	dyn    bool

	obj  []tmplField // object
	arr  []*tmpl     // array
	isA  bool        // arr is used (an array)
	path *jpath      // a "key.$": "$..." value
	call *icall      // a "key.$": "States..." value
}

type tmplField struct {
	key string
	val *tmpl
	src string // the original "key.$" for error messages
}

// compileTemplate compiles n, reporting problems at their paths.
func (l *loader) compileTemplate(n *node, at string) *tmpl {
	switch n.kind {
	case 'o':
		t := &tmpl{}
		seen := map[string]string{}
		for i, k := range n.keys {
			v := n.vals[i]
			kat := at + fieldSeg(k)
			name := k
			var ft *tmpl
			if strings.HasSuffix(k, ".$") {
				name = strings.TrimSuffix(k, ".$")
				ft = l.compileDynamic(v, kat)
			} else {
				ft = l.compileTemplate(v, kat)
			}
			if name == "" {
				l.problem(kat, "empty field name")
			}
			if prev, dup := seen[name]; dup {
				l.problem(kat, fmt.Sprintf("field %q is also given as %q", k, prev))
			}
			seen[name] = k
			if ft == nil {
				ft = &tmpl{}
			}
			t.obj = append(t.obj, tmplField{key: name, val: ft, src: k})
			t.dyn = t.dyn || ft.dyn
		}
		if !t.dyn {
			return &tmpl{static: n.value()}
		}
		return t
	case 'a':
		t := &tmpl{isA: true}
		for i, v := range n.vals {
			et := l.compileTemplate(v, fmt.Sprintf("%s[%d]", at, i))
			t.arr = append(t.arr, et)
			t.dyn = t.dyn || et.dyn
		}
		if !t.dyn {
			return &tmpl{static: n.value()}
		}
		return t
	}
	return &tmpl{static: n.value()}
}

// compileDynamic compiles the value of a "key.$" field.
func (l *loader) compileDynamic(v *node, at string) *tmpl {
	if v.kind != 's' {
		l.problem(at, fmt.Sprintf("a field ending in \".$\" takes a path or an intrinsic function (a string), not %s", v.kindName()))
		return nil
	}
	if strings.HasPrefix(v.str, "$") {
		p, err := parsePath(v.str)
		if err != nil {
			l.problem(at, err.Error())
			return nil
		}
		return &tmpl{dyn: true, path: p}
	}
	if strings.HasPrefix(v.str, "States.") {
		c, err := parseIntrinsic(v.str)
		if err != nil {
			l.problem(at, err.Error())
			return nil
		}
		return &tmpl{dyn: true, call: c}
	}
	l.problem(at, fmt.Sprintf("%q is neither a path (starting with $) nor an intrinsic function (States.…)", v.str))
	return nil
}

// eval builds the payload. field names the template ("Parameters") for
// error messages.
func (t *tmpl) eval(e *env, field string) (any, error) {
	if !t.dyn {
		return t.static, nil
	}
	if t.isA {
		out := make([]any, len(t.arr))
		for i, et := range t.arr {
			v, err := et.eval(e, field)
			if err != nil {
				return nil, err
			}
			out[i] = v
		}
		return out, nil
	}
	out := make(map[string]any, len(t.obj))
	for _, f := range t.obj {
		var v any
		var err error
		switch {
		case f.val.path != nil:
			var ok bool
			v, ok = e.lookup(f.val.path)
			if !ok {
				where := "input"
				if f.val.path.context {
					where = "context object"
				}
				return nil, newErr(ErrRuntime, "the JSONPath '%s' specified for the field '%s' in %s could not be found in the %s %s",
					f.val.path, f.src, field, where, excerpt(e.input, 1024))
			}
		case f.val.call != nil:
			v, err = f.val.call.eval(e)
		default:
			v, err = f.val.eval(e, field)
		}
		if err != nil {
			return nil, err
		}
		out[f.key] = v
	}
	return out, nil
}
