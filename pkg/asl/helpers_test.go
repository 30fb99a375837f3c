package asl_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// mustLoad loads a definition written as Go-friendly JSON.
func mustLoad(t testing.TB, def string) *asl.Machine {
	t.Helper()
	m, err := asl.Load([]byte(def))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return m
}

// sleeps records the requested sleeps and returns at once.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) got() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.d...)
}

// fixedClock returns a clock that starts at t0 and never moves.
func fixedClock(t0 time.Time) func() time.Time { return func() time.Time { return t0 } }

var t0 = time.Date(2026, 3, 14, 1, 59, 26, 535000000, time.UTC)

// run runs m with test options (no real sleeping, a fixed clock).
func run(t testing.TB, m *asl.Machine, input string, tasks asl.TaskRunner) (string, *sleeps, error) {
	t.Helper()
	s := &sleeps{}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := asl.Run(ctx, m, json.RawMessage(input), asl.Options{
		Tasks: tasks, Sleep: s.sleep, Now: fixedClock(t0),
		ExecutionName: "exec-1", StateMachineArn: "arn:aws:states:us-east-1:123456789012:stateMachine:migrate",
	})
	return string(out), s, err
}

// jsonEqual compares two JSON texts semantically.
func jsonEqual(t testing.TB, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %v\n%s", err, want)
	}
	return reflect.DeepEqual(g, w)
}

func assertJSON(t testing.TB, got, want string) {
	t.Helper()
	if !jsonEqual(t, got, want) {
		t.Errorf("output\n got: %s\nwant: %s", got, compact(want))
	}
}

func compact(s string) string {
	var b bytes.Buffer
	if json.Compact(&b, []byte(s)) != nil {
		return s
	}
	return b.String()
}

// execErr asserts err is an *asl.ExecutionError with the given name.
func execErr(t testing.TB, err error, name string) *asl.ExecutionError {
	t.Helper()
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) {
		t.Fatalf("want *ExecutionError %s, got %T %v", name, err, err)
	}
	if ee.Name != name {
		t.Fatalf("want error %s, got %s (cause %q, state %q)", name, ee.Name, ee.Cause, ee.State)
	}
	return ee
}

// loadErr asserts Load fails with a problem at path whose message contains msg.
func loadErr(t testing.TB, def, path, msg string) {
	t.Helper()
	_, err := asl.Load([]byte(def))
	var de *asl.DefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("want *DefinitionError, got %v", err)
	}
	for _, p := range de.Problems {
		if p.Path == path && strings.Contains(p.Message, msg) {
			return
		}
	}
	t.Fatalf("no problem at %s containing %q; got:\n%v", path, msg, err)
}

// recorder is a TaskRunner of scripted functions that records calls.
type recorder struct {
	mu    sync.Mutex
	fns   map[string]func(ctx context.Context, in json.RawMessage) (json.RawMessage, error)
	calls map[string][]string
}

func newRecorder() *recorder {
	return &recorder{fns: map[string]func(context.Context, json.RawMessage) (json.RawMessage, error){}, calls: map[string][]string{}}
}

func (r *recorder) on(resource string, fn func(ctx context.Context, in json.RawMessage) (json.RawMessage, error)) *recorder {
	r.fns[resource] = fn
	return r
}

func (r *recorder) RunTask(ctx context.Context, resource string, in json.RawMessage) (json.RawMessage, error) {
	r.mu.Lock()
	r.calls[resource] = append(r.calls[resource], string(in))
	fn := r.fns[resource]
	r.mu.Unlock()
	if fn == nil {
		return nil, errors.New("no function for " + resource)
	}
	return fn(ctx, in)
}

func (r *recorder) inputs(resource string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls[resource]...)
}

func returns(v string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) { return json.RawMessage(v), nil }
}

func echo(_ context.Context, in json.RawMessage) (json.RawMessage, error) { return in, nil }

func fails(name, cause string) func(context.Context, json.RawMessage) (json.RawMessage, error) {
	return func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, &asl.TaskError{Name: name, Cause: cause}
	}
}

func seconds(ds []time.Duration) []float64 {
	out := make([]float64, len(ds))
	for i, d := range ds {
		out[i] = d.Seconds()
	}
	return out
}
