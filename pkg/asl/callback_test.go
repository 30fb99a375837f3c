package asl_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// gateDef waits at Gate (the optimized Lambda integration with a callback)
// between two states; a failed or timed-out gate is caught into Cleanup.
const gateDef = `{"StartAt": "Before", "TimeoutSeconds": 86400, "States": {
  "Before": {"Type": "Pass", "Result": "ready", "ResultPath": "$.before", "Next": "Gate"},
  "Gate": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken",
    "Parameters": {"FunctionName": "gatefn", "Payload": {"token.$": "$$.Task.Token", "id.$": "$.id", "retry.$": "$$.State.RetryCount"}},
    "ResultPath": "$.gate", "TimeoutSeconds": 3600, "HeartbeatSeconds": 600,
    "Retry": [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "MaxAttempts": 1}],
    "Catch": [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Cleanup"}],
    "Next": "After"},
  "After": {"Type": "Task", "Resource": "after", "ResultPath": "$.after", "End": true},
  "Cleanup": {"Type": "Task", "Resource": "cleanup", "ResultPath": "$.cleanup", "Next": "Failed"},
  "Failed": {"Type": "Fail", "ErrorPath": "$.error.Error", "CausePath": "$.error.Cause"}
}}`

// gateNoHeartbeat is gateDef without HeartbeatSeconds: only TimeoutSeconds
// bounds its wait.
var gateNoHeartbeat = strings.Replace(gateDef, `, "HeartbeatSeconds": 600`, "", 1)

// gateRunner records the payloads the gate's function gets, and runs After
// and Cleanup.
func gateRunner() *recorder {
	return newRecorder().on("gatefn", returns(`{"ignored": true}`)).on("after", returns(`"flipped"`)).on("cleanup", returns(`"cleaned"`))
}

// suspend runs gateDef to its gate, checks the suspension against what the
// gate's function was given, and round-trips it through JSON as a caller
// that stores it would.
func suspend(t *testing.T, m *asl.Machine, rec *recorder, now time.Time) *asl.Suspended {
	t.Helper()
	_, err := asl.Run(context.Background(), m, json.RawMessage(`{"id": "m-1"}`), asl.Options{
		Tasks: rec, Now: fixedClock(now), Sleep: (&sleeps{}).sleep, ExecutionName: "exec-1"})
	var s *asl.Suspended
	if !errors.As(err, &s) {
		t.Fatalf("Run = %v, want *Suspended", err)
	}
	calls := rec.inputs("gatefn")
	var payload struct {
		Token string
		ID    string
		Retry int
	}
	if err := json.Unmarshal([]byte(calls[len(calls)-1]), &payload); err != nil {
		t.Fatal(err)
	}
	if s.State != "Gate" || s.Token == "" || s.Token != payload.Token || payload.ID != "m-1" || payload.Retry != s.Retries {
		t.Fatalf("suspended %+v; the gate's function got %+v", s, payload)
	}
	if len(rec.inputs("after")) != 0 || len(rec.inputs("cleanup")) != 0 {
		t.Fatal("states after the gate ran before its token came back")
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var stored asl.Suspended
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	return &stored
}

func resume(m *asl.Machine, rec *recorder, s *asl.Suspended, c asl.Completion, now time.Time, obs asl.Observer) (string, error) {
	out, err := asl.Resume(context.Background(), m, s, c, asl.Options{Tasks: rec, Now: fixedClock(now), Sleep: (&sleeps{}).sleep, Observer: obs})
	return string(out), err
}

// SendTaskSuccess: the output is the task's result; the rest of the
// execution runs, with the context object it had before it suspended.
func TestCallbackSuccess(t *testing.T) {
	m := mustLoad(t, gateNoHeartbeat)
	rec := gateRunner()
	s := suspend(t, m, rec, t0)
	if _, err := resume(m, rec, s, asl.Completion{Token: "forged", Output: json.RawMessage(`{}`)}, t0, nil); !errors.Is(err, asl.ErrInvalidToken) {
		t.Fatalf("a wrong token: %v, want ErrInvalidToken", err)
	}
	var exited []asl.StateEvent
	var mu sync.Mutex
	obs := asl.ObserverFuncs{Exited: func(e asl.StateEvent) { mu.Lock(); exited = append(exited, e); mu.Unlock() }}
	out, err := resume(m, rec, s, asl.Completion{Token: s.Token, Output: json.RawMessage(`{"approved_by": "ops"}`)}, t0.Add(10*time.Minute), obs)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"id": "m-1", "before": "ready", "gate": {"approved_by": "ops"}, "after": "flipped"}`)
	if len(exited) != 2 || exited[0].Name != "Gate" || exited[0].Duration != 10*time.Minute || exited[0].Next != "After" {
		t.Fatalf("exits = %+v", exited)
	}
	if len(rec.inputs("cleanup")) != 0 {
		t.Fatal("Cleanup ran after a success")
	}
}

// SendTaskFailure: the error goes through the state's Retry and Catch; a
// retry calls the function again with a new token and suspends again.
func TestCallbackFailureRetryAndCatch(t *testing.T) {
	m := mustLoad(t, gateDef)
	rec := gateRunner()
	s := suspend(t, m, rec, t0)
	_, err := resume(m, rec, s, asl.Completion{Token: s.Token, Error: "Flaky", Cause: "try again"}, t0, nil)
	var again *asl.Suspended
	if !errors.As(err, &again) {
		t.Fatalf("a retried callback: %v, want suspended again", err)
	}
	if again.Token == s.Token || again.Retries != 1 || len(rec.inputs("gatefn")) != 2 {
		t.Fatalf("the retry: %+v (first token %s), %d calls", again, s.Token, len(rec.inputs("gatefn")))
	}
	// The retrier is used up: the same error is caught now.
	_, err = resume(m, rec, again, asl.Completion{Token: again.Token, Error: "Flaky", Cause: "still"}, t0, nil)
	ee := execErr(t, err, "Flaky")
	if ee.Cause != "still" || len(rec.inputs("cleanup")) != 1 || len(rec.inputs("after")) != 0 {
		t.Fatalf("caught: %+v; cleanup calls %d, after calls %d", ee, len(rec.inputs("cleanup")), len(rec.inputs("after")))
	}
}

// A token that comes back too late finds the task timed out (TimeoutSeconds,
// HeartbeatSeconds) or the execution (its TimeoutSeconds): the completion
// is not delivered, and what the service would have done runs.
func TestCallbackTimeouts(t *testing.T) {
	for _, c := range []struct {
		name    string
		def     string
		after   time.Duration
		want    string
		cleanup int
	}{
		{"heartbeat", gateDef, 10 * time.Minute, asl.ErrHeartbeatTimeout, 1},
		{"task", gateNoHeartbeat, time.Hour, asl.ErrTimeout, 1},
		{"execution", strings.Replace(gateNoHeartbeat, `"TimeoutSeconds": 86400`, `"TimeoutSeconds": 1800`, 1), 30 * time.Minute, asl.ErrTimeout, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := mustLoad(t, c.def)
			rec := gateRunner()
			s := suspend(t, m, rec, t0)
			// Just in time: delivered.
			if _, err := resume(m, rec, s, asl.Completion{Token: s.Token, Output: json.RawMessage(`{}`)}, t0.Add(c.after-time.Second), nil); err != nil {
				t.Fatalf("a completion in time: %v", err)
			}
			_, err := resume(m, rec, s, asl.Completion{Token: s.Token, Output: json.RawMessage(`{}`)}, t0.Add(c.after), nil)
			execErr(t, err, c.want)
			if got := len(rec.inputs("cleanup")); got != c.cleanup || len(rec.inputs("after")) != 1 {
				t.Fatalf("cleanup ran %d times (want %d), after %d (want 1, the run in time)", got, c.cleanup, len(rec.inputs("after")))
			}
		})
	}
}

// The function the callback task calls failing is the task failing, before
// any suspension; the base resource of any integration is what the runner
// sees, and what Resources lists.
func TestCallbackRunnerErrorAndResources(t *testing.T) {
	m := mustLoad(t, gateDef)
	rec := gateRunner().on("gatefn", fails("Boom", "no"))
	_, err := asl.Run(context.Background(), m, json.RawMessage(`{"id": "m-1"}`), asl.Options{Tasks: rec, Sleep: (&sleeps{}).sleep})
	execErr(t, err, "Boom")

	sns := mustLoad(t, `{"StartAt": "Ask", "States": {"Ask": {"Type": "Task", "Resource": "arn:aws:states:::sns:publish.waitForTaskToken",
	  "Parameters": {"TopicArn": "t", "Message.$": "States.Format('approve with {}', $$.Task.Token)"}, "End": true}}}`)
	if got := sns.Resources(); !reflect.DeepEqual(got, []string{"arn:aws:states:::sns:publish"}) {
		t.Fatalf("Resources = %q", got)
	}
	var msg string
	runner := asl.Funcs{"arn:aws:states:::sns:publish": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		var p struct{ Message string }
		_ = json.Unmarshal(in, &p)
		msg = p.Message
		return json.RawMessage(`{"MessageId": "1"}`), nil
	}}
	_, err = asl.Run(context.Background(), sns, nil, asl.Options{Tasks: runner})
	var s *asl.Suspended
	if !errors.As(err, &s) || msg != fmt.Sprintf("approve with %s", s.Token) {
		t.Fatalf("Run = %v; message %q", err, msg)
	}
	out, err := asl.Resume(context.Background(), sns, s, asl.Completion{Token: s.Token, Output: json.RawMessage(`"yes"`)}, asl.Options{Tasks: runner})
	if err != nil || string(out) != `"yes"` {
		t.Fatalf("Resume = %s, %v", out, err)
	}
	// A suspension naming no callback task of the machine is refused.
	s.State = "Nowhere"
	if _, err := asl.Resume(context.Background(), sns, s, asl.Completion{Token: s.Token, Output: json.RawMessage(`{}`)}, asl.Options{Tasks: runner}); !errors.Is(err, asl.ErrTaskDoesNotExist) {
		t.Fatalf("Resume at an unknown state: %v", err)
	}
}
