package asl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

func TestPassState(t *testing.T) {
	cases := []struct{ name, state, input, want string }{
		{"identity", `{"Type": "Pass", "End": true}`, `{"a": 1}`, `{"a": 1}`},
		{"Result replaces", `{"Type": "Pass", "Result": {"x": [1, 2]}, "End": true}`, `{"a": 1}`, `{"x": [1, 2]}`},
		{"Result at ResultPath", `{"Type": "Pass", "Result": "r", "ResultPath": "$.b.c", "End": true}`, `{"a": 1}`, `{"a": 1, "b": {"c": "r"}}`},
		{"ResultPath null keeps input", `{"Type": "Pass", "Result": "r", "ResultPath": null, "End": true}`, `{"a": 1}`, `{"a": 1}`},
		{"Parameters", `{"Type": "Pass", "Parameters": {"k.$": "$.a", "s": "x", "arr": [{"v.$": "$.a"}, 2]}, "End": true}`, `{"a": 1}`, `{"k": 1, "s": "x", "arr": [{"v": 1}, 2]}`},
		{"Result wins over Parameters", `{"Type": "Pass", "Parameters": {"k.$": "$.a"}, "Result": 5, "End": true}`, `{"a": 1}`, `5`},
		{"InputPath null", `{"Type": "Pass", "InputPath": null, "End": true}`, `{"a": 1}`, `{}`},
		{"OutputPath null", `{"Type": "Pass", "OutputPath": null, "End": true}`, `{"a": 1}`, `{}`},
		{"bracket paths", `{"Type": "Pass", "InputPath": "$['a b'][1]", "End": true}`, `{"a b": [0, {"c": true}]}`, `{"c": true}`},
		{"ResultPath into array element", `{"Type": "Pass", "Result": "r", "ResultPath": "$.a[1]", "End": true}`, `{"a": [0, 1]}`, `{"a": [0, "r"]}`},
		{"ResultPath uses raw input", `{"Type": "Pass", "InputPath": "$.a", "ResultPath": "$.copy", "End": true}`, `{"a": {"b": 1}}`, `{"a": {"b": 1}, "copy": {"b": 1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, _, err := run(t, mustLoad(t, one(c.state)), c.input, nil)
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, out, c.want)
		})
	}
}

func TestInputOutputPathErrors(t *testing.T) {
	_, _, err := run(t, mustLoad(t, one(`{"Type": "Pass", "InputPath": "$.missing", "End": true}`)), `{"a": 1}`, nil)
	execErr(t, err, "States.Runtime")
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Pass", "Result": "x", "ResultPath": "$.a.b", "End": true}`)), `{"a": 1}`, nil)
	execErr(t, err, "States.ResultPathMatchFailure")
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Pass", "Parameters": {"x.$": "$.nope"}, "End": true}`)), `{}`, nil)
	ee := execErr(t, err, "States.Runtime")
	if !strings.Contains(ee.Cause, "'$.nope'") || !strings.Contains(ee.Cause, "'x.$'") || ee.State != "S" {
		t.Errorf("error %+v", ee)
	}
}

func TestSucceedAndFail(t *testing.T) {
	out, _, err := run(t, mustLoad(t, one(`{"Type": "Succeed", "InputPath": "$.a", "OutputPath": "$.b"}`)), `{"a": {"b": 2}}`, nil)
	if err != nil || out != "2" {
		t.Fatalf("Succeed: %s %v", out, err)
	}
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Fail", "Error": "Broken", "Cause": "because"}`)), `{}`, nil)
	ee := execErr(t, err, "Broken")
	if ee.Cause != "because" || ee.State != "S" {
		t.Errorf("%+v", ee)
	}
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Fail", "ErrorPath": "$.e", "CausePath": "States.Format('code {}', $.code)"}`)), `{"e": "Dyn", "code": 7}`, nil)
	if ee := execErr(t, err, "Dyn"); ee.Cause != "code 7" {
		t.Errorf("cause %q", ee.Cause)
	}
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Fail", "ErrorPath": "$.e"}`)), `{"e": 5}`, nil)
	execErr(t, err, "States.Runtime")
	if want := `asl: execution failed in state "S": States.Runtime: ErrorPath must give a string, not number`; err.Error() != want {
		t.Errorf("message %q", err.Error())
	}
}

func TestChoiceRules(t *testing.T) {
	cases := []struct {
		rule, input string
		match       bool
		err         string
	}{
		{`"Variable": "$.s", "StringEquals": "a"`, `{"s": "a"}`, true, ""},
		{`"Variable": "$.s", "StringEquals": "a"`, `{"s": "b"}`, false, ""},
		{`"Variable": "$.s", "StringEquals": "1"`, `{"s": 1}`, false, ""},
		{`"Variable": "$.s", "StringEqualsPath": "$.t"`, `{"s": "x", "t": "x"}`, true, ""},
		{`"Variable": "$.s", "StringEqualsPath": "$.t"`, `{"s": "x", "t": "y"}`, false, ""},
		{`"Variable": "$.s", "StringEqualsPath": "$.t"`, `{"s": "x"}`, false, "States.Runtime"},
		{`"Variable": "$.s", "StringEqualsPath": "$$.Execution.Name"`, `{"s": "exec-1"}`, true, ""},
		{`"Variable": "$.n", "NumericEquals": 3`, `{"n": 3.0}`, true, ""},
		{`"Variable": "$.n", "NumericEquals": 3`, `{"n": "3"}`, false, ""},
		{`"Variable": "$.n", "NumericEquals": 9007199254740993`, `{"n": 9007199254740992}`, false, ""},
		{`"Variable": "$.n", "NumericGreaterThan": 3`, `{"n": 3}`, false, ""},
		{`"Variable": "$.n", "NumericGreaterThan": 3`, `{"n": 3.5}`, true, ""},
		{`"Variable": "$.n", "NumericGreaterThanEquals": 3`, `{"n": 3}`, true, ""},
		{`"Variable": "$.n", "NumericLessThan": 3`, `{"n": -1e3}`, true, ""},
		{`"Variable": "$.n", "NumericLessThanEquals": 3`, `{"n": 4}`, false, ""},
		{`"Variable": "$.b", "BooleanEquals": true`, `{"b": true}`, true, ""},
		{`"Variable": "$.b", "BooleanEquals": true`, `{"b": "true"}`, false, ""},
		{`"Variable": "$.x", "IsPresent": true`, `{"x": null}`, true, ""},
		{`"Variable": "$.x", "IsPresent": false`, `{}`, true, ""},
		{`"Variable": "$.x.y[3]", "IsPresent": true`, `{"x": {"y": [1]}}`, false, ""},
		{`"Variable": "$.x", "IsNull": true`, `{"x": null}`, true, ""},
		{`"Variable": "$.x", "IsNull": true`, `{"x": 0}`, false, ""},
		{`"Variable": "$.missing", "IsNull": true`, `{}`, false, "States.Runtime"},
		{`"Variable": "$.missing", "StringEquals": "a"`, `{}`, false, "States.Runtime"},
		{`"And": [{"Variable": "$.a", "NumericGreaterThan": 1}, {"Variable": "$.a", "NumericLessThan": 5}]`, `{"a": 3}`, true, ""},
		{`"And": [{"Variable": "$.a", "NumericGreaterThan": 1}, {"Variable": "$.a", "NumericLessThan": 5}]`, `{"a": 7}`, false, ""},
		{`"Or": [{"Variable": "$.a", "StringEquals": "x"}, {"Variable": "$.a", "StringEquals": "y"}]`, `{"a": "y"}`, true, ""},
		{`"Not": {"Variable": "$.a", "StringEquals": "x"}`, `{"a": "y"}`, true, ""},
		{`"Or": [{"Variable": "$.a", "IsPresent": false}, {"Variable": "$.a", "StringEquals": "x"}]`, `{}`, true, ""},
	}
	for _, c := range cases {
		t.Run(c.rule+" "+c.input, func(t *testing.T) {
			def := `{"StartAt": "C", "States": {
			  "C": {"Type": "Choice", "Choices": [{` + c.rule + `, "Next": "Yes"}], "Default": "No"},
			  "Yes": {"Type": "Pass", "Result": "yes", "End": true},
			  "No": {"Type": "Pass", "Result": "no", "End": true}}}`
			out, _, err := run(t, mustLoad(t, def), c.input, nil)
			if c.err != "" {
				execErr(t, err, c.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := `"no"`
			if c.match {
				want = `"yes"`
			}
			if out != want {
				t.Errorf("got %s, want %s", out, want)
			}
		})
	}
}

func TestChoiceFirstMatchNoDefaultAndOutputPath(t *testing.T) {
	def := `{"StartAt": "C", "States": {
	  "C": {"Type": "Choice", "InputPath": "$.in", "OutputPath": "$.v", "Choices": [
	    {"Variable": "$.v", "NumericGreaterThan": 0, "Next": "First"},
	    {"Variable": "$.v", "NumericGreaterThan": 1, "Next": "Second"}]},
	  "First": {"Type": "Pass", "ResultPath": "$", "Parameters": {"got.$": "$", "by": "First"}, "End": true},
	  "Second": {"Type": "Pass", "Result": "second", "End": true}}}`
	m := mustLoad(t, def)
	out, _, err := run(t, m, `{"in": {"v": 2}}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"got": 2, "by": "First"}`)
	_, _, err = run(t, m, `{"in": {"v": -1}}`, nil)
	execErr(t, err, "States.NoChoiceMatched")
}

func TestWaitState(t *testing.T) {
	cases := []struct {
		state, input string
		want         []time.Duration
	}{
		{`{"Type": "Wait", "Seconds": 5, "End": true}`, `{}`, []time.Duration{5 * time.Second}},
		{`{"Type": "Wait", "Seconds": 0, "End": true}`, `{}`, nil},
		{`{"Type": "Wait", "SecondsPath": "$.s", "End": true}`, `{"s": 12}`, []time.Duration{12 * time.Second}},
		{`{"Type": "Wait", "Timestamp": "2026-03-14T02:00:00Z", "End": true}`, `{}`, []time.Duration{33*time.Second + 465*time.Millisecond}},
		{`{"Type": "Wait", "TimestampPath": "$.at", "End": true}`, `{"at": "2026-03-14T01:59:27.535Z"}`, []time.Duration{time.Second}},
		{`{"Type": "Wait", "TimestampPath": "$.at", "End": true}`, `{"at": "2020-01-01T00:00:00Z"}`, nil},
	}
	for _, c := range cases {
		out, sl, err := run(t, mustLoad(t, one(c.state)), c.input, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.state, err)
		}
		assertJSON(t, out, c.input)
		if got := sl.got(); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: slept %v, want %v", c.state, got, c.want)
		}
	}
	_, _, err := run(t, mustLoad(t, one(`{"Type": "Wait", "SecondsPath": "$.s", "End": true}`)), `{"s": "soon"}`, nil)
	execErr(t, err, "States.Runtime")
}

func TestTaskProcessingOrder(t *testing.T) {
	// InputPath → Parameters → task → ResultSelector → ResultPath → OutputPath.
	def := one(`{"Type": "Task", "Resource": "work",
	  "InputPath": "$.in",
	  "Parameters": {"x.$": "$.x", "state.$": "$$.State.Name"},
	  "ResultSelector": {"y.$": "$.result", "from": "selector"},
	  "ResultPath": "$.out",
	  "OutputPath": "$.out",
	  "End": true}`)
	rec := newRecorder().on("work", returns(`{"result": 42, "noise": true}`))
	out, _, err := run(t, mustLoad(t, def), `{"in": {"x": "X", "other": 1}, "keep": true}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"y": 42, "from": "selector"}`)
	assertJSON(t, rec.inputs("work")[0], `{"x": "X", "state": "S"}`)
}

func TestContextObject(t *testing.T) {
	def := one(`{"Type": "Pass", "Parameters": {
	  "id.$": "$$.Execution.Id", "name.$": "$$.Execution.Name", "input.$": "$$.Execution.Input",
	  "start.$": "$$.Execution.StartTime", "state.$": "$$.State.Name", "entered.$": "$$.State.EnteredTime",
	  "retries.$": "$$.State.RetryCount", "sm.$": "$$.StateMachine.Id", "smName.$": "$$.StateMachine.Name"}, "End": true}`)
	out, _, err := run(t, mustLoad(t, def), `{"k": [1]}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{
	  "id": "arn:aws:states:us-east-1:123456789012:execution:migrate:exec-1", "name": "exec-1", "input": {"k": [1]},
	  "start": "2026-03-14T01:59:26.535Z", "state": "S", "entered": "2026-03-14T01:59:26.535Z",
	  "retries": 0, "sm": "arn:aws:states:us-east-1:123456789012:stateMachine:migrate", "smName": "migrate"}`)

	// Task.Token is not available; Map.Item only in ItemSelector.
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Pass", "Parameters": {"t.$": "$$.Task.Token"}, "End": true}`)), `{}`, nil)
	execErr(t, err, "States.Runtime")
}

func TestRetryCountInContext(t *testing.T) {
	var mu sync.Mutex
	n := 0
	rec := newRecorder().on("flaky", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		n++
		if n < 3 {
			return nil, &asl.TaskError{Name: "Transient"}
		}
		return json.RawMessage(`"ok"`), nil
	})
	def := one(`{"Type": "Task", "Resource": "flaky", "Parameters": {"try.$": "$$.State.RetryCount"},
	  "Retry": [{"ErrorEquals": ["Transient"], "MaxAttempts": 5}], "End": true}`)
	out, sl, err := run(t, mustLoad(t, def), `{}`, rec)
	if err != nil || out != `"ok"` {
		t.Fatalf("%s %v", out, err)
	}
	got := rec.inputs("flaky")
	if !reflect.DeepEqual(got, []string{`{"try":0}`, `{"try":1}`, `{"try":2}`}) {
		t.Errorf("inputs %q", got)
	}
	if !reflect.DeepEqual(seconds(sl.got()), []float64{1, 2}) {
		t.Errorf("sleeps %v (defaults: IntervalSeconds 1, BackoffRate 2)", sl.got())
	}
}

func TestRetryBackoffCapAndJitter(t *testing.T) {
	def := one(`{"Type": "Task", "Resource": "down",
	  "Retry": [{"ErrorEquals": ["States.TaskFailed"], "IntervalSeconds": 1, "BackoffRate": 2.0, "MaxAttempts": 6, "MaxDelaySeconds": 5}],
	  "End": true}`)
	rec := newRecorder().on("down", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, errors.New("connection reset")
	})
	_, sl, err := run(t, mustLoad(t, def), `{}`, rec)
	ee := execErr(t, err, "States.TaskFailed")
	if ee.Cause != "connection reset" {
		t.Errorf("cause %q", ee.Cause)
	}
	if got := seconds(sl.got()); !reflect.DeepEqual(got, []float64{1, 2, 4, 5, 5, 5}) {
		t.Errorf("sleeps %v, want [1 2 4 5 5 5]", got)
	}
	if n := len(rec.inputs("down")); n != 7 {
		t.Errorf("%d attempts, want 7", n)
	}

	// FULL jitter: a random fraction of the capped delay.
	def = one(`{"Type": "Task", "Resource": "down",
	  "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 4, "MaxAttempts": 3, "MaxDelaySeconds": 10, "JitterStrategy": "FULL"}],
	  "End": true}`)
	s := &sleeps{}
	_, err = asl.Run(context.Background(), mustLoad(t, def), nil, asl.Options{Tasks: rec, Sleep: s.sleep, Rand: func() float64 { return 0.25 }})
	execErr(t, err, "States.TaskFailed")
	if got := seconds(s.got()); !reflect.DeepEqual(got, []float64{1, 2, 2.5}) {
		t.Errorf("jittered sleeps %v, want [1 2 2.5]", got)
	}
}

func TestRetryMaxAttemptsZeroAndFirstMatchOnly(t *testing.T) {
	def := `{"StartAt": "S", "States": {
	  "S": {"Type": "Task", "Resource": "r", "End": true,
	    "Retry": [{"ErrorEquals": ["Fatal"], "MaxAttempts": 0}, {"ErrorEquals": ["States.ALL"], "MaxAttempts": 5}],
	    "Catch": [{"ErrorEquals": ["Fatal"], "ResultPath": "$.err", "Next": "Caught"}]},
	  "Caught": {"Type": "Pass", "End": true}}}`
	rec := newRecorder().on("r", fails("Fatal", "no retry for me"))
	out, sl, err := run(t, mustLoad(t, def), `{"in": 1}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"in": 1, "err": {"Error": "Fatal", "Cause": "no retry for me"}}`)
	if len(sl.got()) != 0 || len(rec.inputs("r")) != 1 {
		t.Errorf("retried: sleeps %v, calls %d", sl.got(), len(rec.inputs("r")))
	}
}

func TestCatchOrderAndWildcards(t *testing.T) {
	def := `{"StartAt": "S", "States": {
	  "S": {"Type": "Task", "Resource": "r", "TimeoutSeconds": 1, "End": true, "Catch": [
	    {"ErrorEquals": ["Specific"], "ResultPath": "$.by", "Next": "BySpecific"},
	    {"ErrorEquals": ["States.TaskFailed"], "ResultPath": "$.by", "Next": "ByTaskFailed"},
	    {"ErrorEquals": ["States.ALL"], "ResultPath": "$.by", "Next": "ByAll"}]},
	  "BySpecific": {"Type": "Pass", "Result": "specific", "End": true},
	  "ByTaskFailed": {"Type": "Pass", "Result": "taskfailed", "End": true},
	  "ByAll": {"Type": "Pass", "Result": "all", "End": true}}}`
	m := mustLoad(t, def)
	for _, c := range []struct {
		fn   func(context.Context, json.RawMessage) (json.RawMessage, error)
		want string
	}{
		{fails("Specific", ""), `"specific"`},
		{fails("Other", ""), `"taskfailed"`},
		{func(context.Context, json.RawMessage) (json.RawMessage, error) { return nil, errors.New("plain") }, `"taskfailed"`},
		{fails("States.Timeout", "runner timed out"), `"all"`},
	} {
		out, _, err := run(t, m, `{}`, newRecorder().on("r", c.fn))
		if err != nil || out != c.want {
			t.Errorf("got %s %v, want %s", out, err, c.want)
		}
	}
}

func TestRuntimeErrorsAreNeverCaught(t *testing.T) {
	def := `{"StartAt": "S", "States": {
	  "S": {"Type": "Task", "Resource": "r", "InputPath": "$.missing", "End": true,
	    "Retry": [{"ErrorEquals": ["States.ALL"]}],
	    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]},
	  "C": {"Type": "Succeed"}}}`
	_, sl, err := run(t, mustLoad(t, def), `{}`, newRecorder().on("r", echo))
	execErr(t, err, "States.Runtime")
	if len(sl.got()) != 0 {
		t.Error("a States.Runtime error was retried")
	}
}

type quotaErr struct{}

func (quotaErr) Error() string     { return "quota exceeded" }
func (quotaErr) ErrorName() string { return "QuotaExceeded" }

func TestNamedErrors(t *testing.T) {
	def := `{"StartAt": "S", "States": {
	  "S": {"Type": "Task", "Resource": "r", "End": true,
	    "Catch": [{"ErrorEquals": ["QuotaExceeded"], "Next": "C"}]},
	  "C": {"Type": "Pass", "End": true}}}`
	out, _, err := run(t, mustLoad(t, def), `{}`, newRecorder().on("r", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		return nil, fmt.Errorf("wrapped: %w", quotaErr{})
	}))
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"Error": "QuotaExceeded", "Cause": "wrapped: quota exceeded"}`)
}

func TestTaskTimeout(t *testing.T) {
	t.Parallel()
	def := `{"StartAt": "S", "States": {
	  "S": {"Type": "Task", "Resource": "slow", "TimeoutSeconds": 1, "End": true,
	    "Retry": [{"ErrorEquals": ["States.Timeout"], "MaxAttempts": 1}],
	    "Catch": [{"ErrorEquals": ["States.Timeout"], "ResultPath": "$.timeout", "Next": "C"}]},
	  "C": {"Type": "Pass", "End": true}}}`
	var canceled sync.WaitGroup
	canceled.Add(1)
	var once sync.Once
	var attempt atomic.Int32
	rec := newRecorder().on("slow", func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		if attempt.Add(1) == 1 {
			<-ctx.Done() // honours the context
			once.Do(canceled.Done)
			return nil, ctx.Err()
		}
		time.Sleep(1500 * time.Millisecond) // ignores it; abandoned at the deadline
		return json.RawMessage(`"late"`), nil
	})
	start := time.Now()
	out, sl, err := run(t, mustLoad(t, def), `{}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	canceled.Wait()
	if el := time.Since(start); el > 2800*time.Millisecond {
		t.Errorf("took %v for two 1 s timeouts", el)
	}
	assertJSON(t, out, `{"timeout": {"Error": "States.Timeout", "Cause": "the task \"slow\" did not finish within TimeoutSeconds (1s)"}}`)
	if len(sl.got()) != 1 {
		t.Errorf("sleeps %v", sl.got())
	}
}

func TestExecutionTimeout(t *testing.T) {
	t.Parallel()
	def := `{"TimeoutSeconds": 1, "StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "slow", "End": true,
	  "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]}, "C": {"Type": "Succeed"}}}`
	rec := newRecorder().on("slow", func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	start := time.Now()
	_, _, err := run(t, mustLoad(t, def), `{}`, rec)
	execErr(t, err, "States.Timeout")
	if el := time.Since(start); el < 900*time.Millisecond || el > 3*time.Second {
		t.Errorf("execution timeout after %v", el)
	}
}

func TestCanceledContextStopsPromptly(t *testing.T) {
	t.Parallel()
	def := `{"StartAt": "S", "States": {"S": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": {"StartAt": "T", "States": {
	  "T": {"Type": "Task", "Resource": "block", "End": true}}}, "End": true,
	  "Retry": [{"ErrorEquals": ["States.ALL"], "MaxAttempts": 10}],
	  "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]}, "C": {"Type": "Succeed"}}}`
	started := make(chan struct{}, 100)
	rec := newRecorder().on("block", func(ctx context.Context, _ json.RawMessage) (json.RawMessage, error) {
		started <- struct{}{}
		select {} // ignores ctx entirely
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := asl.Run(ctx, mustLoad(t, def), json.RawMessage(`{"items": [1, 2, 3]}`), asl.Options{Tasks: rec})
		errc <- err
	}()
	<-started
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err %v, want context.Canceled", err)
		}
		var ee *asl.ExecutionError
		if errors.As(err, &ee) {
			t.Fatalf("cancellation reported as an execution failure: %v", ee)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Run did not return after cancel")
	}

	// A retry wait is interrupted too (with the real timer).
	def = one(`{"Type": "Task", "Resource": "r", "Retry": [{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 3600}], "End": true}`)
	ctx, cancel = context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := asl.Run(ctx, mustLoad(t, def), nil, asl.Options{Tasks: newRecorder().on("r", fails("X", ""))})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Fatalf("err %v after %v", err, time.Since(start))
	}
}

func TestDataLimitExceeded(t *testing.T) {
	big := `"` + strings.Repeat("x", asl.PayloadLimit) + `"`
	catchAll := `"Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]`
	def := `{"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "big", "End": true, ` + catchAll + `}, "C": {"Type": "Succeed"}}}`
	rec := newRecorder().on("big", returns(big))
	_, _, err := run(t, mustLoad(t, def), `{}`, rec)
	ee := execErr(t, err, "States.DataLimitExceeded")
	if !strings.Contains(ee.Cause, "262146 bytes") {
		t.Errorf("cause %q", ee.Cause)
	}

	// Under the quota as a result, over it once ResultPath adds the input.
	half := `"` + strings.Repeat("y", asl.PayloadLimit/2) + `"`
	def = one(`{"Type": "Task", "Resource": "half", "ResultPath": "$.second", "End": true}`)
	_, _, err = run(t, mustLoad(t, def), `{"first": `+half+`}`, newRecorder().on("half", returns(half)))
	execErr(t, err, "States.DataLimitExceeded")

	// Caught when named exactly.
	def = `{"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "big", "End": true,
	  "Catch": [{"ErrorEquals": ["States.DataLimitExceeded"], "Next": "C"}]}, "C": {"Type": "Pass", "End": true}}}`
	out, _, err := run(t, mustLoad(t, def), `{}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"Error":"States.DataLimitExceeded"`) {
		t.Errorf("out %s", out)
	}

	// The execution input.
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Succeed"}`)), `{"a": `+big+`}`, nil)
	execErr(t, err, "States.DataLimitExceeded")

	// Exactly at the quota is fine.
	exact := `"` + strings.Repeat("z", asl.PayloadLimit-2) + `"`
	out, _, err = run(t, mustLoad(t, one(`{"Type": "Pass", "End": true}`)), exact, nil)
	if err != nil || len(out) != asl.PayloadLimit {
		t.Errorf("at the quota: %d bytes, %v", len(out), err)
	}
}

func TestLambdaInvokeIntegration(t *testing.T) {
	def := one(`{"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke",
	  "Parameters": {"FunctionName.$": "$.fn", "Payload": {"x.$": "$.x"}},
	  "OutputPath": "$.Payload", "End": true}`)
	rec := newRecorder().on("check-fn", returns(`{"ok": true}`))
	m := mustLoad(t, def)
	if len(m.Resources()) != 0 {
		t.Errorf("a FunctionName from a path is not static: %q", m.Resources())
	}
	out, _, err := run(t, m, `{"fn": "check-fn", "x": 1}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"ok": true}`)
	assertJSON(t, rec.inputs("check-fn")[0], `{"x": 1}`)

	out, _, err = run(t, mustLoad(t, one(`{"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "check-fn"}, "ResultSelector": {"code.$": "$.StatusCode", "v.$": "$.ExecutedVersion"}, "End": true}`)), `{}`, rec)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"code": 200, "v": "$LATEST"}`)
	assertJSON(t, rec.inputs("check-fn")[1], `{}`)
}

func TestTaskResultMustBeJSON(t *testing.T) {
	_, _, err := run(t, mustLoad(t, one(`{"Type": "Task", "Resource": "r", "End": true}`)), `{}`, newRecorder().on("r", returns(`{nope`)))
	execErr(t, err, "States.Runtime")
	out, _, err := run(t, mustLoad(t, one(`{"Type": "Task", "Resource": "r", "End": true}`)), `{}`, newRecorder().on("r", returns(``)))
	if err != nil || out != "null" {
		t.Errorf("empty result: %s %v", out, err)
	}
	_, _, err = run(t, mustLoad(t, one(`{"Type": "Task", "Resource": "r", "End": true}`)), `{}`, nil)
	execErr(t, err, "States.Runtime")
}

func TestTaskPanicIsATaskFailure(t *testing.T) {
	_, _, err := run(t, mustLoad(t, one(`{"Type": "Task", "Resource": "r", "End": true}`)), `{}`, newRecorder().on("r",
		func(context.Context, json.RawMessage) (json.RawMessage, error) { panic("boom") }))
	if ee := execErr(t, err, "States.TaskFailed"); !strings.Contains(ee.Cause, "panicked: boom") {
		t.Errorf("cause %q", ee.Cause)
	}
}

func TestMaxTransitionsStopsAnEndlessLoop(t *testing.T) {
	def := `{"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "Next": "A"}}}`
	_, err := asl.Run(context.Background(), mustLoad(t, def), nil, asl.Options{MaxTransitions: 50})
	if ee := execErr(t, err, "States.Runtime"); !strings.Contains(ee.Cause, "more than 50 states") {
		t.Errorf("cause %q", ee.Cause)
	}
}

func TestInvalidInput(t *testing.T) {
	_, err := asl.Run(context.Background(), mustLoad(t, one(`{"Type": "Succeed"}`)), json.RawMessage(`{"a":`), asl.Options{})
	var ee *asl.ExecutionError
	if err == nil || errors.As(err, &ee) {
		t.Fatalf("err %v", err)
	}
	out, err := asl.Run(context.Background(), mustLoad(t, one(`{"Type": "Succeed"}`)), nil, asl.Options{})
	if err != nil || string(out) != "{}" {
		t.Fatalf("empty input: %s %v", out, err)
	}
}

func TestObserver(t *testing.T) {
	def := `{"StartAt": "Flaky", "States": {
	  "Flaky": {"Type": "Task", "Resource": "flaky", "Retry": [{"ErrorEquals": ["Transient"], "IntervalSeconds": 3}], "Next": "M"},
	  "M": {"Type": "Map", "ItemsPath": "$.outer", "MaxConcurrency": 1, "ItemProcessor": {"StartAt": "Inner", "States": {
	    "Inner": {"Type": "Map", "ItemsPath": "$", "MaxConcurrency": 1, "ItemProcessor": {"StartAt": "Leaf", "States": {
	      "Leaf": {"Type": "Pass", "End": true}}}, "End": true}}}, "Next": "F"},
	  "F": {"Type": "Fail", "Error": "Done", "Cause": "end"}}}`
	calls := 0
	rec := newRecorder().on("flaky", func(context.Context, json.RawMessage) (json.RawMessage, error) {
		calls++
		if calls == 1 {
			return nil, &asl.TaskError{Name: "Transient", Cause: "try again"}
		}
		return json.RawMessage(`{"outer": [[1, 2], [3]]}`), nil
	})
	var mu sync.Mutex
	var log []string
	obs := asl.ObserverFuncs{
		Entered: func(e asl.StateEvent) {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("enter %s %v %s", e.Name, e.MapIndex, e.Input))
		},
		Exited: func(e asl.StateEvent) {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("exit %s %v next=%s err=%s out=%s", e.Name, e.MapIndex, e.Next, e.Error, e.Output))
		},
		Retrying: func(e asl.RetryEvent) {
			mu.Lock()
			defer mu.Unlock()
			log = append(log, fmt.Sprintf("retry %s #%d after %v: %s", e.Name, e.Attempt, e.Delay, e.Error))
		},
	}
	_, err := asl.Run(context.Background(), mustLoad(t, def), json.RawMessage(`{}`), asl.Options{
		Tasks: rec, Observer: obs, Sleep: (&sleeps{}).sleep})
	execErr(t, err, "Done")
	want := []string{
		"enter Flaky [] {}",
		"retry Flaky #1 after 3s: Transient",
		`exit Flaky [] next=M err= out={"outer":[[1,2],[3]]}`,
		`enter M [] {"outer":[[1,2],[3]]}`,
		"enter Inner [0] [1,2]",
		"enter Leaf [0 0] 1",
		"exit Leaf [0 0] next= err= out=1",
		"enter Leaf [0 1] 2",
		"exit Leaf [0 1] next= err= out=2",
		"exit Inner [0] next= err= out=[1,2]",
		"enter Inner [1] [3]",
		"enter Leaf [1 0] 3",
		"exit Leaf [1 0] next= err= out=3",
		"exit Inner [1] next= err= out=[3]",
		"exit M [] next=F err= out=[[1,2],[3]]",
		"enter F [] [[1,2],[3]]",
		"exit F [] next= err=Done out=",
	}
	if !reflect.DeepEqual(log, want) {
		t.Errorf("events:\n%s\nwant:\n%s", strings.Join(log, "\n"), strings.Join(want, "\n"))
	}
}
