package asl

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// The callback pattern (a Resource ending in .waitForTaskToken): the task's
// runner is called with $$.Task.Token available to its Parameters, and the
// task then waits until that token comes back with SendTaskSuccess or
// SendTaskFailure. This interpreter does not wait in memory, where nothing
// could survive the process: the execution suspends. Run returns a
// *Suspended holding everything needed to go on, as JSON that can be stored,
// and Resume, in this process or another, completes the token and runs the
// rest of the execution.

// Suspended is an execution waiting at a callback task for its token. Run
// and Resume return it as their error (errors.As finds it); it is not a
// failure, and nothing runs until Resume.
type Suspended struct {
	// State is the callback task's name (always a top-level state).
	State string `json:"state"`
	// Token is the task's $$.Task.Token; Resume wants it back.
	Token string `json:"token"`
	// Input is the state's raw input.
	Input json.RawMessage `json:"input"`
	// EnteredTime is when the state was entered: its TimeoutSeconds and
	// HeartbeatSeconds count from there.
	EnteredTime time.Time `json:"entered_time"`
	// Retries is $$.State.RetryCount; RetryCounts the attempts used of each
	// of the state's retriers.
	Retries     int   `json:"retries,omitempty"`
	RetryCounts []int `json:"retry_counts,omitempty"`
	// StateMachineArn and Execution are $$.StateMachine.Id and
	// $$.Execution; the execution's TimeoutSeconds counts from its StartTime.
	StateMachineArn string          `json:"state_machine_arn"`
	Execution       json.RawMessage `json:"execution"`
}

func (s *Suspended) Error() string {
	return fmt.Sprintf("asl: the execution is suspended in state %q, waiting for its task token", s.State)
}

// Completion completes a suspended callback task, as the Step Functions
// API does: Output alone is SendTaskSuccess; Error (and Cause) is
// SendTaskFailure, which the state's Retry and Catch match by that name.
type Completion struct {
	Token  string
	Output json.RawMessage
	Error  string
	Cause  string
}

// Errors of Resume, named after the Step Functions API's exceptions.
var (
	// ErrInvalidToken: the completion's token is not the suspended task's.
	ErrInvalidToken = errname.New("asl", "InvalidToken", "")
	// ErrTaskDoesNotExist: the suspension names no callback task of the
	// machine (another definition, or a damaged record).
	ErrTaskDoesNotExist = errname.New("asl", "TaskDoesNotExist", "")
)

// Resume completes the callback task s waits at and runs the rest of the
// execution, with Run's results (it may suspend again). The task ends as
// the service would have ended it by the time of the completion (opts.Now):
// with States.Timeout once its TimeoutSeconds have passed, with
// States.HeartbeatTimeout once its HeartbeatSeconds have (this interpreter
// takes no heartbeats), else with c; the execution times out once its
// TimeoutSeconds have passed since it started. Either way the task's
// Retry and Catch apply.
func Resume(ctx context.Context, m *Machine, s *Suspended, c Completion, opts Options) (json.RawMessage, error) {
	if m == nil || s == nil {
		return nil, errors.New("asl: Resume: nil Machine or Suspended")
	}
	st := m.root.states[s.State]
	if st == nil || st.typ != "Task" || !st.callback {
		return nil, fmt.Errorf("%w: the machine has no top-level callback task %q", ErrTaskDoesNotExist, s.State)
	}
	if c.Token == "" || c.Token != s.Token {
		return nil, fmt.Errorf("%w: the token does not belong to the task waiting in state %q", ErrInvalidToken, s.State)
	}
	if c.Error == "" && !json.Valid(c.Output) {
		return nil, fmt.Errorf("asl: Resume: the task output is not valid JSON")
	}
	in, err := decodeValue(s.Input)
	if err != nil {
		return nil, fmt.Errorf("asl: Resume: the suspended state's input: %w", err)
	}
	execV, err := decodeValue(s.Execution)
	execRoot, ok := execV.(map[string]any)
	if err != nil || !ok {
		return nil, fmt.Errorf("asl: Resume: the suspended execution's context object is not a JSON object")
	}
	startStr, _ := execRoot["StartTime"].(string)
	start, err := time.Parse(time.RFC3339Nano, startStr)
	if err != nil {
		return nil, fmt.Errorf("asl: Resume: the suspended execution's StartTime %q: %w", startStr, err)
	}
	if s.StateMachineArn != "" {
		opts.StateMachineArn = s.StateMachineArn
	}
	opts.defaults()
	x := newExecution(m, opts, execRoot)

	res := &resumption{entered: s.EnteredTime, retries: s.Retries, retryCounts: s.RetryCounts}
	waited := opts.Now().Sub(s.EnteredTime)
	switch {
	case st.timeout > 0 && waited >= st.timeout:
		res.err = newErr(ErrTimeout, "the task token was not returned within TimeoutSeconds (%v)", st.timeout)
	case st.heartbeat > 0 && waited >= st.heartbeat:
		res.err = newErr(ErrHeartbeatTimeout, "no heartbeat within HeartbeatSeconds (%v)", st.heartbeat)
	case c.Error != "":
		res.err = &stateError{name: c.Error, cause: c.Cause}
	default:
		if res.output, err = decodeValue(c.Output); err != nil {
			return nil, fmt.Errorf("asl: Resume: the task output: %w", err)
		}
		if len(c.Output) > PayloadLimit {
			res.err = newErr(ErrDataLimitExceeded, "the task output has %d bytes, over the %d-byte payload quota", len(c.Output), PayloadLimit)
		}
	}
	return x.run(ctx, m.timeout-opts.Now().Sub(start), s.State, in, res)
}

// resumption is how a suspended callback task ended, and its retry state.
type resumption struct {
	entered     time.Time
	retries     int
	retryCounts []int
	output      any
	err         *stateError
}

// complete ends a resumed callback task's attempt with its completion.
func (r *stateRun) complete(res *resumption) (any, error) {
	if res.err != nil {
		return nil, res.err
	}
	return r.result(res.output)
}

// suspendSignal travels from a callback task's attempt up to run, which
// turns it into a *Suspended.
type suspendSignal struct {
	token       string
	run         *stateRun
	retryCounts []int
}

func (s *suspendSignal) Error() string { return "asl: suspended" }

func (x *execution) suspended(sig *suspendSignal) error {
	in, err := encodeValue(sig.run.raw)
	if err != nil {
		return fmt.Errorf("asl: suspend: the state input: %w", err)
	}
	ex, err := encodeValue(x.execRoot)
	if err != nil {
		return fmt.Errorf("asl: suspend: the execution: %w", err)
	}
	return &Suspended{
		State: sig.run.st.name, Token: sig.token, Input: in, EnteredTime: sig.run.entered.UTC(),
		Retries: sig.run.retries, RetryCounts: sig.retryCounts,
		StateMachineArn: x.smArn, Execution: ex,
	}
}

// newTaskToken makes an opaque token, as long as the service's are hard to
// guess.
func newTaskToken() string {
	var b [48]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b[:])
}
