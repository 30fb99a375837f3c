package asl_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// intrinsicDef builds a Pass state computing {"r": expr}; expr is written
// exactly as the ASL string value (Go raw string, no JSON escaping).
func intrinsicDef(expr string) string {
	b, _ := json.Marshal(expr)
	return one(`{"Type": "Pass", "Parameters": {"r.$": ` + string(b) + `}, "OutputPath": "$.r", "End": true}`)
}

const intrinsicInput = `{"name": "Arnav", "n": 3, "f": 2.5, "ok": true, "nil": null, "arr": [1, 2, 3],
  "obj": {"a": [1, {"b": "c"}]}, "json": "{\"x\": [1, 2]}", "tmpl": "{} + {} = {}", "weird key": ["w"],
  "quote": "it's", "start": 2, "end": 8}`

func TestIntrinsicFunctions(t *testing.T) {
	cases := []struct{ expr, want string }{
		// States.Format: literals, paths, every scalar type, escapes.
		{`States.Format('Hello, {}!', $.name)`, `"Hello, Arnav!"`},
		{`States.Format('{}-{}-{}-{}', $.n, $.f, $.ok, $.nil)`, `"3-2.5-true-null"`},
		{`States.Format('{}{}', 'a', 'b')`, `"ab"`},
		{`States.Format('no placeholders')`, `"no placeholders"`},
		{`States.Format('')`, `""`},
		{`States.Format('it\'s \{literal\} {} \\ done', $.name)`, `"it's {literal} Arnav \\ done"`},
		{`States.Format('a, b) {}', 'c, d)')`, `"a, b) c, d)"`},
		{`States.Format($.tmpl, 1, 2, 3)`, `"1 + 2 = 3"`},
		{`States.Format('{}', $.quote)`, `"it's"`},
		{`States.Format('{}', $['weird key'][0])`, `"w"`},
		{`States.Format('{}', $$.Execution.Name)`, `"exec-1"`},
		{`States.Format( '{} {}' , 1 ,-2.5e1 )`, `"1 -2.5e1"`},
		// Nesting.
		{`States.Format('{} items', States.ArrayLength(States.ArrayRange(1, 9, 2)))`, `"5 items"`},
		{`States.Array(States.MathAdd($.n, 1), States.Format('{}', $.name), States.Array())`, `[4, "Arnav", []]`},
		{`States.ArrayRange($.start, States.MathAdd($.end, -1), States.MathAdd(1, 1))`, `[2, 4, 6]`},
		{`States.JsonToString(States.StringToJson($.json))`, `"{\"x\":[1,2]}"`},
		// StringToJson / JsonToString.
		{`States.StringToJson($.json)`, `{"x": [1, 2]}`},
		{`States.StringToJson('[1, \{\}]')`, `[1, {}]`},
		{`States.JsonToString($.obj)`, `"{\"a\":[1,{\"b\":\"c\"}]}"`},
		{`States.JsonToString($.name)`, `"\"Arnav\""`},
		// Array, ArrayLength.
		{`States.Array('Foo', 2022, $.obj, null, true)`, `["Foo", 2022, {"a": [1, {"b": "c"}]}, null, true]`},
		{`States.Array()`, `[]`},
		{`States.ArrayLength($.arr)`, `3`},
		{`States.ArrayLength(States.Array())`, `0`},
		// ArrayRange.
		{`States.ArrayRange(1, 9, 2)`, `[1, 3, 5, 7, 9]`},
		{`States.ArrayRange(1, 10, 2)`, `[1, 3, 5, 7, 9]`},
		{`States.ArrayRange(10, 1, -3)`, `[10, 7, 4, 1]`},
		{`States.ArrayRange(5, 5, 1)`, `[5]`},
		{`States.ArrayRange(1, 0, 1)`, `[]`},
		{`States.ArrayRange(0, -1, 2)`, `[]`},
		{`States.ArrayRange(-2, 2, 2)`, `[-2, 0, 2]`},
		// JsonMerge: shallow, the second object's keys win.
		{`States.JsonMerge($.obj, States.StringToJson('\{"a": 1, "z": 2\}'), false)`, `{"a": 1, "z": 2}`},
		{`States.JsonMerge(States.StringToJson('\{"x": \{"y": 1\}, "k": 0\}'), States.StringToJson('\{"x": \{"w": 2\}\}'), false)`, `{"x": {"w": 2}, "k": 0}`},
		// MathAdd.
		{`States.MathAdd(111, -1)`, `110`},
		{`States.MathAdd($.n, $.n)`, `6`},
		{`States.MathAdd($.f, 1)`, `4`},
		{`States.MathAdd(-1.5, 0)`, `-2`},
		{`States.MathAdd(9007199254740993, 1)`, `9007199254740994`},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			out, _, err := run(t, mustLoad(t, intrinsicDef(c.expr)), intrinsicInput, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, out, c.want)
			if c.want == `9007199254740994` && out != c.want {
				t.Errorf("lost precision: %s", out)
			}
		})
	}
}

func TestArrayRangeLimit(t *testing.T) {
	out, _, err := run(t, mustLoad(t, intrinsicDef(`States.ArrayLength(States.ArrayRange(0, 999, 1))`)), `{}`, nil)
	if err != nil || out != "1000" {
		t.Fatalf("1000 items: %s %v", out, err)
	}
	_, _, err = run(t, mustLoad(t, intrinsicDef(`States.ArrayRange(0, 1000, 1)`)), `{}`, nil)
	execErr(t, err, "States.IntrinsicFailure")
	_, _, err = run(t, mustLoad(t, intrinsicDef(`States.ArrayRange(-9223372036854775808, 9223372036854775807, 1)`)), `{}`, nil)
	execErr(t, err, "States.IntrinsicFailure")
}

func TestUUID(t *testing.T) {
	out, _, err := run(t, mustLoad(t, intrinsicDef(`States.UUID()`)), `{}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"$`).MatchString(out) {
		t.Errorf("not a v4 UUID: %s", out)
	}
}

func TestIntrinsicRuntimeFailures(t *testing.T) {
	cases := []struct{ expr, name, cause string }{
		{`States.Format('{}', $.obj)`, "States.IntrinsicFailure", "only strings, numbers, booleans and null"},
		{`States.Format($.tmpl, 1)`, "States.IntrinsicFailure", "more {} placeholders"},
		{`States.Format($.name, 1)`, "States.IntrinsicFailure", "0 {} placeholder(s) but 1 value(s)"},
		{`States.Format($.n)`, "States.IntrinsicFailure", "template must be a string"},
		{`States.StringToJson($.name)`, "States.IntrinsicFailure", "not valid JSON"},
		{`States.StringToJson($.n)`, "States.IntrinsicFailure", "must be a string"},
		{`States.ArrayLength($.obj)`, "States.IntrinsicFailure", "must be an array"},
		{`States.ArrayRange(1, $.f, 1)`, "States.IntrinsicFailure", "must be an integer"},
		{`States.ArrayRange(1, 5, States.MathAdd(1, -1))`, "States.IntrinsicFailure", "step must not be 0"},
		{`States.MathAdd($.name, 1)`, "States.IntrinsicFailure", "must be a number"},
		{`States.JsonMerge($.obj, $.arr, false)`, "States.IntrinsicFailure", "argument 2 must be an object"},
		{`States.Format('{}', $.missing)`, "States.Runtime", "$.missing"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			_, _, err := run(t, mustLoad(t, intrinsicDef(c.expr)), intrinsicInput, nil)
			ee := execErr(t, err, c.name)
			if !strings.Contains(ee.Cause, c.cause) {
				t.Errorf("cause %q does not contain %q", ee.Cause, c.cause)
			}
		})
	}
}

func TestIntrinsicParseErrors(t *testing.T) {
	cases := []struct{ expr, msg string }{
		{`States.Format('x)`, "unterminated string"},
		{`States.Format('a' 'b')`, "expected ',' or ')'"},
		{`States.Format('a',)`, "invalid argument"},
		{`States.Format`, "expected '('"},
		{`States.Format('x'`, "missing ')'"},
		{`States.Array(foo)`, "invalid argument"},
		{`States.Array(1.2.3)`, "invalid number"},
		{`States.Array($.a[*])`, "unsupported bracket"},
		{`States.Array(\'x\')`, "invalid argument"},
		{`States.JsonMerge($.a, $.b, true)`, "deep merge is not supported"},
		{`States.JsonMerge($.a, $.b)`, "argument"},
		{`States.Format('\q')`, "open escape"},
		{`States.Format('}')`, "unescaped '}'"},
		{`States.JsonToString()`, "takes 1 argument(s), got 0"},
		{`States.UUID(1)`, "takes 0 argument(s), got 1"},
		{`States.StringToJson(3)`, "takes a string"},
		{`States.ArrayLength('x')`, "takes an array"},
		{`States.Format(1)`, "template must be a string"},
		{`States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array(States.Array())))))))))))`, "nested more than 10 deep"},
	}
	for _, c := range cases {
		t.Run(c.expr, func(t *testing.T) {
			loadErr(t, intrinsicDef(c.expr), "$.States.S.Parameters['r.$']", c.msg)
		})
	}
}
