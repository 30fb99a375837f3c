package asl

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Funcs is a TaskRunner of Go functions in this process, looked up by the
// exact resource string (after Substitute, typically a function name).
type Funcs map[string]func(ctx context.Context, input json.RawMessage) (json.RawMessage, error)

// RunTask calls the function registered for resource. An unknown resource
// is a States.Runtime error: a wiring mistake, not a task failure to retry
// or catch (Check finds it before a run).
func (f Funcs) RunTask(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
	fn, ok := f[resource]
	if !ok {
		return nil, &TaskError{Name: ErrRuntime, Cause: fmt.Sprintf("no function is registered for resource %q", resource)}
	}
	return fn(ctx, input)
}

// Check reports the resources of m that f has no function for.
func (f Funcs) Check(m *Machine) error {
	var missing []string
	for _, r := range m.Resources() {
		if _, ok := f[r]; !ok {
			missing = append(missing, fmt.Sprintf("%q", r))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("asl: no function registered for resource(s) %s", strings.Join(missing, ", "))
	}
	return nil
}

var placeholder = regexp.MustCompile(`\$\{([^}]*)\}`)

// Substitute replaces each ${Name} in definition with vars[Name], as the
// service's DefinitionSubstitutions do. Values are escaped for a JSON
// string, where placeholders stand (a number such as "4" is unchanged, so a
// bare ${Concurrency} works too). Any placeholder without a value is an
// error naming all of them; so is a result that is not valid JSON.
func Substitute(definition []byte, vars map[string]string) ([]byte, error) {
	var missing []string
	out := placeholder.ReplaceAllFunc(definition, func(m []byte) []byte {
		name := string(m[2 : len(m)-1])
		v, ok := vars[name]
		if !ok {
			if !slices.Contains(missing, name) {
				missing = append(missing, name)
			}
			return m
		}
		b, _ := json.Marshal(v)
		return b[1 : len(b)-1]
	})
	if len(missing) > 0 {
		for i, n := range missing {
			missing[i] = "${" + n + "}"
		}
		return nil, fmt.Errorf("asl: no value for placeholder(s) %s", strings.Join(missing, ", "))
	}
	if !json.Valid(out) {
		return nil, fmt.Errorf("asl: the definition is not valid JSON after substitution")
	}
	return out, nil
}
