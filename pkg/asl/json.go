package asl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"strconv"
	"strings"
)

// Values flowing through a run are plain decoded JSON: map[string]any,
// []any, string, json.Number, bool and nil. They are never mutated once
// built; ResultPath copies the objects along its path (copy on write), so
// a value may be shared between the context object, Map iterations and
// state outputs.

// decodeValue parses exactly one JSON value, keeping numbers exact.
func decodeValue(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// encodeValue renders v as compact JSON without HTML escaping, which is how
// its size is measured against the payload quota.
func encodeValue(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

func mustEncode(v any) string {
	b, err := encodeValue(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(b)
}

// excerpt renders v for an error cause, shortened past n bytes.
func excerpt(v any, n int) string {
	s := mustEncode(v)
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// numRat returns the exact value of a JSON number.
func numRat(n json.Number) (*big.Rat, bool) {
	return new(big.Rat).SetString(string(n))
}

// numInt returns n as an int64 if it is an integer in range.
func numInt(n json.Number) (int64, bool) {
	if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
		return i, true
	}
	r, ok := numRat(n)
	if !ok || !r.IsInt() || !r.Num().IsInt64() {
		return 0, false
	}
	return r.Num().Int64(), true
}

func intNumber(i int64) json.Number { return json.Number(strconv.FormatInt(i, 10)) }

// node is a parsed definition value that keeps the order of object keys,
// so that problems are reported in document order.
type node struct {
	kind byte // 'o' object, 'a' array, 's' string, 'n' number, 'b' bool, 'z' null
	keys []string
	vals []*node // object values (parallel to keys) or array elements
	str  string
	num  json.Number
	b    bool
}

func parseDefinition(data []byte) (*node, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n, err := parseNode(dec, "$")
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &DefinitionError{Problems: []Problem{{"$", "unexpected data after the definition's JSON object"}}}
	}
	return n, nil
}

func parseNode(dec *json.Decoder, at string) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, &DefinitionError{Problems: []Problem{{at, fmt.Sprintf("invalid JSON (at byte %d): %v", dec.InputOffset(), err)}}}
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{kind: 'o'}
			seen := map[string]bool{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, &DefinitionError{Problems: []Problem{{at, fmt.Sprintf("invalid JSON (at byte %d): %v", dec.InputOffset(), err)}}}
				}
				k := kt.(string)
				child := at + fieldSeg(k)
				if seen[k] {
					return nil, &DefinitionError{Problems: []Problem{{child, fmt.Sprintf("duplicate key %q", k)}}}
				}
				seen[k] = true
				v, err := parseNode(dec, child)
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k)
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, &DefinitionError{Problems: []Problem{{at, fmt.Sprintf("invalid JSON: %v", err)}}}
			}
			return n, nil
		case '[':
			n := &node{kind: 'a'}
			for i := 0; dec.More(); i++ {
				v, err := parseNode(dec, fmt.Sprintf("%s[%d]", at, i))
				if err != nil {
					return nil, err
				}
				n.vals = append(n.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, &DefinitionError{Problems: []Problem{{at, fmt.Sprintf("invalid JSON: %v", err)}}}
			}
			return n, nil
		}
	case string:
		return &node{kind: 's', str: t}, nil
	case json.Number:
		return &node{kind: 'n', num: t}, nil
	case bool:
		return &node{kind: 'b', b: t}, nil
	case nil:
		return &node{kind: 'z'}, nil
	}
	return nil, &DefinitionError{Problems: []Problem{{at, fmt.Sprintf("unexpected JSON token %v", tok)}}}
}

func (n *node) get(key string) *node {
	if n == nil || n.kind != 'o' {
		return nil
	}
	for i, k := range n.keys {
		if k == key {
			return n.vals[i]
		}
	}
	return nil
}

// value converts n to a run-time value.
func (n *node) value() any {
	switch n.kind {
	case 'o':
		m := make(map[string]any, len(n.keys))
		for i, k := range n.keys {
			m[k] = n.vals[i].value()
		}
		return m
	case 'a':
		a := make([]any, len(n.vals))
		for i, v := range n.vals {
			a[i] = v.value()
		}
		return a
	case 's':
		return n.str
	case 'n':
		return n.num
	case 'b':
		return n.b
	}
	return nil
}

func (n *node) kindName() string {
	switch n.kind {
	case 'o':
		return "object"
	case 'a':
		return "array"
	case 's':
		return "string"
	case 'n':
		return "number"
	case 'b':
		return "boolean"
	}
	return "null"
}

// fieldSeg renders a key as a path segment: .Key when it is a plain name,
// ['Key'] otherwise.
func fieldSeg(k string) string {
	plain := k != ""
	for _, r := range k {
		if !(r == '_' || r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			plain = false
			break
		}
	}
	if plain {
		return "." + k
	}
	return "['" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(k) + "']"
}
