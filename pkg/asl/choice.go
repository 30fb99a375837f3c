package asl

import (
	"encoding/json"
	"fmt"
	"math/big"
)

// Choice rules: a data-test expression (Variable and one comparison) or a
// boolean combination (And, Or, Not). Only top-level rules have Next.

type rule struct {
	op       string // comparison operator, or And / Or / Not
	variable *jpath
	str      string
	num      *big.Rat
	boolean  bool
	other    *jpath // StringEqualsPath
	subs     []*rule
	next     string
	at       string // definition path, for messages
}

var comparisonOps = map[string]byte{
	"StringEquals":             's',
	"StringEqualsPath":         'p',
	"NumericEquals":            'n',
	"NumericGreaterThan":       'n',
	"NumericGreaterThanEquals": 'n',
	"NumericLessThan":          'n',
	"NumericLessThanEquals":    'n',
	"BooleanEquals":            'b',
	"IsPresent":                'b',
	"IsNull":                   'b',
	"And":                      'l',
	"Or":                       'l',
	"Not":                      'o',
}

// operators of the language this interpreter does not support.
var unsupportedChoiceOps = map[string]bool{
	"StringLessThan": true, "StringLessThanPath": true, "StringGreaterThan": true,
	"StringGreaterThanPath": true, "StringLessThanEquals": true, "StringLessThanEqualsPath": true,
	"StringGreaterThanEquals": true, "StringGreaterThanEqualsPath": true, "StringMatches": true,
	"NumericEqualsPath": true, "NumericLessThanPath": true, "NumericGreaterThanPath": true,
	"NumericLessThanEqualsPath": true, "NumericGreaterThanEqualsPath": true,
	"BooleanEqualsPath": true, "TimestampEquals": true, "TimestampEqualsPath": true,
	"TimestampLessThan": true, "TimestampLessThanPath": true, "TimestampGreaterThan": true,
	"TimestampGreaterThanPath": true, "TimestampLessThanEquals": true,
	"TimestampLessThanEqualsPath": true, "TimestampGreaterThanEquals": true,
	"TimestampGreaterThanEqualsPath": true, "IsBoolean": true, "IsNumeric": true,
	"IsString": true, "IsTimestamp": true, "Condition": true, "Assign": true,
}

func (l *loader) compileRule(n *node, at string, top bool) *rule {
	if n.kind != 'o' {
		l.problem(at, fmt.Sprintf("a choice rule is an object, not %s", n.kindName()))
		return nil
	}
	r := &rule{at: at}
	var opNode *node
	for i, k := range n.keys {
		v := n.vals[i]
		kat := at + fieldSeg(k)
		switch {
		case k == "Comment":
			l.wantString(v, kat)
		case k == "Next":
			if !top {
				l.problem(kat, "only a top-level choice rule has Next")
				continue
			}
			if s, ok := l.wantString(v, kat); ok {
				r.next = s
			}
		case k == "Variable":
			if s, ok := l.wantString(v, kat); ok {
				p, err := parsePath(s)
				if err != nil {
					l.problem(kat, err.Error())
				} else {
					r.variable = p
				}
			}
		case comparisonOps[k] != 0:
			if r.op != "" {
				l.problem(kat, fmt.Sprintf("a choice rule has exactly one operator; it already has %s", r.op))
				continue
			}
			r.op, opNode = k, v
		case unsupportedChoiceOps[k]:
			l.problem(kat, fmt.Sprintf("unsupported field %q (choice operator not supported by this interpreter)", k))
		default:
			l.problem(kat, fmt.Sprintf("unsupported field %q", k))
		}
	}
	if top && r.next == "" && n.get("Next") == nil {
		l.problem(at, "a top-level choice rule needs Next")
	}
	if r.op == "" {
		l.problem(at, "the choice rule has no comparison operator (or And, Or, Not)")
		return r
	}
	oat := at + "." + r.op
	kind := comparisonOps[r.op]
	isLogic := kind == 'l' || kind == 'o'
	if isLogic && n.get("Variable") != nil {
		l.problem(at+".Variable", fmt.Sprintf("%s does not take a Variable", r.op))
	}
	if !isLogic && n.get("Variable") == nil {
		l.problem(at, fmt.Sprintf("%s needs a Variable", r.op))
	}
	switch kind {
	case 's':
		if s, ok := l.wantString(opNode, oat); ok {
			r.str = s
		}
	case 'p':
		if s, ok := l.wantString(opNode, oat); ok {
			p, err := parsePath(s)
			if err != nil {
				l.problem(oat, err.Error())
			} else {
				r.other = p
			}
		}
	case 'n':
		if opNode.kind != 'n' {
			l.problem(oat, fmt.Sprintf("%s takes a number, not %s", r.op, opNode.kindName()))
		} else if q, ok := numRat(opNode.num); ok {
			r.num = q
		}
	case 'b':
		if opNode.kind != 'b' {
			l.problem(oat, fmt.Sprintf("%s takes a boolean, not %s", r.op, opNode.kindName()))
		} else {
			r.boolean = opNode.b
		}
	case 'l':
		if opNode.kind != 'a' || len(opNode.vals) == 0 {
			l.problem(oat, fmt.Sprintf("%s takes a non-empty array of choice rules", r.op))
			break
		}
		for i, sub := range opNode.vals {
			if sr := l.compileRule(sub, fmt.Sprintf("%s[%d]", oat, i), false); sr != nil {
				r.subs = append(r.subs, sr)
			}
		}
	case 'o':
		if sr := l.compileRule(opNode, oat, false); sr != nil {
			r.subs = append(r.subs, sr)
		}
	}
	return r
}

// eval evaluates the rule. A Variable that names nothing is a States.Runtime
// error, except for IsPresent; a comparison with a value of another type is
// false.
func (r *rule) eval(e *env) (bool, error) {
	switch r.op {
	case "And":
		for _, s := range r.subs {
			if ok, err := s.eval(e); err != nil || !ok {
				return false, err
			}
		}
		return true, nil
	case "Or":
		for _, s := range r.subs {
			if ok, err := s.eval(e); err != nil || ok {
				return ok, err
			}
		}
		return false, nil
	case "Not":
		ok, err := r.subs[0].eval(e)
		return !ok, err
	}
	v, found := e.lookup(r.variable)
	if r.op == "IsPresent" {
		return found == r.boolean, nil
	}
	if !found {
		return false, newErr(ErrRuntime, "invalid path '%s': the choice state's condition path references an invalid value (input %s)", r.variable, excerpt(e.input, 1024))
	}
	switch r.op {
	case "IsNull":
		return (v == nil) == r.boolean, nil
	case "BooleanEquals":
		b, ok := v.(bool)
		return ok && b == r.boolean, nil
	case "StringEquals":
		s, ok := v.(string)
		return ok && s == r.str, nil
	case "StringEqualsPath":
		o, found := e.lookup(r.other)
		if !found {
			return false, newErr(ErrRuntime, "invalid path '%s': the choice state's condition path references an invalid value (input %s)", r.other, excerpt(e.input, 1024))
		}
		s, ok := v.(string)
		t, ok2 := o.(string)
		return ok && ok2 && s == t, nil
	}
	n, ok := v.(json.Number)
	if !ok {
		return false, nil
	}
	q, ok := numRat(n)
	if !ok {
		return false, nil
	}
	c := q.Cmp(r.num)
	switch r.op {
	case "NumericEquals":
		return c == 0, nil
	case "NumericGreaterThan":
		return c > 0, nil
	case "NumericGreaterThanEquals":
		return c >= 0, nil
	case "NumericLessThan":
		return c < 0, nil
	case "NumericLessThanEquals":
		return c <= 0, nil
	}
	return false, fmt.Errorf("asl: unknown operator %s", r.op)
}
