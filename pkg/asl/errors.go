package asl

import (
	"errors"
	"fmt"
	"strings"
)

// Error names defined by the Amazon States Language that this interpreter
// raises or matches.
const (
	ErrAll                    = "States.ALL"
	ErrDataLimitExceeded      = "States.DataLimitExceeded"
	ErrExceedToleratedFailure = "States.ExceedToleratedFailureThreshold"
	ErrHeartbeatTimeout       = "States.HeartbeatTimeout"
	ErrIntrinsicFailure       = "States.IntrinsicFailure"
	ErrNoChoiceMatched        = "States.NoChoiceMatched"
	ErrParameterPathFailure   = "States.ParameterPathFailure"
	ErrPermissions            = "States.Permissions"
	ErrResultPathMatchFailure = "States.ResultPathMatchFailure"
	ErrRuntime                = "States.Runtime"
	ErrTaskFailed             = "States.TaskFailed"
	ErrTimeout                = "States.Timeout"
)

// knownStatesErrors are the States.* names a Retry or Catch may list. A
// States.* name outside this set is a typo and is rejected at load.
var knownStatesErrors = map[string]bool{
	ErrAll: true, "States.BranchFailed": true, ErrDataLimitExceeded: true,
	ErrExceedToleratedFailure: true, ErrHeartbeatTimeout: true,
	"States.Http.Socket": true, ErrIntrinsicFailure: true,
	"States.ItemReaderFailed": true, ErrNoChoiceMatched: true,
	ErrParameterPathFailure: true, ErrPermissions: true,
	"States.QueryEvaluationError": true, ErrResultPathMatchFailure: true,
	"States.ResultWriterFailed": true, ErrRuntime: true, ErrTaskFailed: true,
	ErrTimeout: true,
}

// TaskError is a named task failure, the Go form of a Lambda function's
// {"errorType", "errorMessage"}. Task runners return it (or any error with
// an ErrorName, as errname.Of finds it) so that the definition can Retry
// and Catch by name.
type TaskError struct {
	Name  string // error name, e.g. "ShardCorrupt" or "Lambda.ServiceException"
	Cause string // human-readable cause; becomes "Cause" in a Catch
	Err   error  // optional underlying error, for errors.Is and errors.As
}

func (e *TaskError) Error() string {
	if e.Cause == "" {
		return e.Name
	}
	return e.Name + ": " + e.Cause
}

// ErrorName returns e.Name.
func (e *TaskError) ErrorName() string { return e.Name }

// Unwrap returns e.Err.
func (e *TaskError) Unwrap() error { return e.Err }

// ExecutionError is how a failed execution ends: an unhandled error or a
// Fail state. (The brief's field "Error" is Name here: a Go type cannot
// have a field and a method both called Error.)
type ExecutionError struct {
	Name  string // error name, e.g. "States.Timeout" or "SourceChangedDuringMigration"
	Cause string // human-readable cause
	State string // the state that raised the error (innermost, for a Map iteration)
}

func (e *ExecutionError) Error() string {
	var b strings.Builder
	b.WriteString("asl: execution failed")
	if e.State != "" {
		fmt.Fprintf(&b, " in state %q", e.State)
	}
	if e.Name != "" {
		b.WriteString(": ")
		b.WriteString(e.Name)
	}
	if e.Cause != "" {
		b.WriteString(": ")
		b.WriteString(e.Cause)
	}
	return b.String()
}

// ErrorName returns e.Name, so an ExecutionError returned by a task runner
// (a nested execution) keeps its name.
func (e *ExecutionError) ErrorName() string { return e.Name }

// Problem is one thing wrong with a definition, at a JSON path into it.
type Problem struct {
	Path    string // e.g. $.States.Check.Retry[0].MaxAttempts
	Message string
}

func (p Problem) String() string { return p.Path + ": " + p.Message }

// DefinitionError lists every problem Load found, in document order.
type DefinitionError struct {
	Problems []Problem
}

func (e *DefinitionError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return "asl: invalid definition: " + lines[0]
	}
	return fmt.Sprintf("asl: invalid definition (%d problems):\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// stateError is an error raised while running a state: a name, a cause,
// and the state that raised it.
type stateError struct {
	name, cause, state string
}

func (e *stateError) Error() string { return e.name + ": " + e.cause }

func newErr(name, format string, args ...any) *stateError {
	return &stateError{name: name, cause: fmt.Sprintf(format, args...)}
}

// canceledError marks a run (or a Map iteration) stopped by its context:
// the caller canceled, the execution timed out, or a sibling iteration failed.
type canceledError struct{ err error }

func (e *canceledError) Error() string { return "asl: canceled: " + e.err.Error() }
func (e *canceledError) Unwrap() error { return e.err }

func isCanceled(err error) bool {
	var c *canceledError
	return errors.As(err, &c)
}

// errorMatches reports whether pattern (an ErrorEquals entry) matches the
// error name. A wildcard (States.ALL, States.TaskFailed) may
// match the error name: States.Runtime is never caught or retried, and
// States.DataLimitExceeded is terminal for wildcards (AWS: "can't be caught
// by the States.ALL error type"); it matches only when named exactly.
func errorMatches(pattern, name string) bool {
	if name == ErrRuntime {
		return false
	}
	switch pattern {
	case name:
		return true
	case ErrAll:
		return name != ErrDataLimitExceeded
	case ErrTaskFailed:
		return name != ErrDataLimitExceeded && name != ErrTimeout
	}
	return false
}
