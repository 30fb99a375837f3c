package asl

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestParsePath(t *testing.T) {
	ok := []struct {
		in    string
		ctx   bool
		steps []pathStep
	}{
		{"$", false, nil},
		{"$$", true, nil},
		{"$.a.b", false, []pathStep{{key: "a"}, {key: "b"}}},
		{"$.a[0]", false, []pathStep{{key: "a"}, {index: 0, isIdx: true}}},
		{"$['a']", false, []pathStep{{key: "a"}}},
		{`$["a b"].c`, false, []pathStep{{key: "a b"}, {key: "c"}}},
		{`$['it\'s']`, false, []pathStep{{key: "it's"}}},
		{"$.delivery-partner", false, []pathStep{{key: "delivery-partner"}}},
		{"$$.Map.Item.Value", true, []pathStep{{key: "Map"}, {key: "Item"}, {key: "Value"}}},
		{"$.a[12][3]", false, []pathStep{{key: "a"}, {index: 12, isIdx: true}, {index: 3, isIdx: true}}},
	}
	for _, c := range ok {
		p, err := parsePath(c.in)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if p.context != c.ctx || !reflect.DeepEqual(p.steps, c.steps) || p.raw != c.in {
			t.Errorf("%s: got %+v", c.in, p)
		}
	}
	for _, bad := range []string{"", "a", "$.", "$..a", "$.a.*", "$[*]", "$.a[-1]", "$.a[0:2]", "$.a[0,1]",
		"$.a[?(@.b)]", "$['a'", "$.a()", "$a", "$.a b", "$.length()", "$[]"} {
		if _, err := parsePath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestSetPathCopiesOnWrite(t *testing.T) {
	orig := map[string]any{"a": map[string]any{"b": json.Number("1")}, "l": []any{json.Number("0")}}
	p, _ := parsePath("$.a.c.d")
	out, err := setPath(orig, p.steps, "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, changed := orig["a"].(map[string]any)["c"]; changed {
		t.Fatal("setPath modified its input")
	}
	want := map[string]any{"a": map[string]any{"b": json.Number("1"), "c": map[string]any{"d": "x"}}, "l": []any{json.Number("0")}}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("got %v", out)
	}
	p, _ = parsePath("$.l[0]")
	out, err = setPath(orig, p.steps, "y")
	if err != nil || orig["l"].([]any)[0] != json.Number("0") || out.(map[string]any)["l"].([]any)[0] != "y" {
		t.Fatalf("array set: %v %v %v", out, orig, err)
	}
	for _, bad := range []string{"$.l[1]", "$.a.b.c", "$.l.x"} {
		p, _ := parsePath(bad)
		if _, err := setPath(orig, p.steps, 1); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}
