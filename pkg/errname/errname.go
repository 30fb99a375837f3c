// Package errname holds named errors: errors that carry a stable name
// (ErrorName) beside their message, the name Step Functions' Retry and
// Catch, the history records, the CLI's JSON and the alarms match, and Of,
// which finds the name an error chain answers to.
//
// Every package keeps its own sentinels as *Error values: the name travels
// with the error, so no list elsewhere maps errors to names. A message reads
// "<package>: <Name>: <what happened>", as pkg/pointer's do.
package errname

import "errors"

// Transient is the name of a failure worth retrying as it is (S3 or the
// object store did not answer, a wait ran out): the only name the state
// machines retry on. Several packages' errors carry it.
const Transient = "Transient"

// Unreachable is the name of an endpoint that did not answer within the
// process's request limits, after all their attempts (awsconfig.Limits):
// those attempts were its retries, so the state machines do not retry it
// again; a command names it after its first request.
const Unreachable = "S3Unreachable"

// Error is a sentinel with a stable name. Sentinels are compared by
// identity (errors.Is), so two errors of one class name (ShardCorrupt, say)
// stay apart; one made by Kind also answers to its parent.
type Error struct {
	pkg, name, text string
	parent          error
}

// New is the error of package pkg named name; text says what happened, for
// people ("" for none).
func New(pkg, name, text string) *Error { return &Error{pkg: pkg, name: name, text: text} }

// Kind is New for a narrower case of parent: errors.Is(err, parent) holds
// for it too, while its name is its own.
func Kind(parent error, pkg, name, text string) *Error {
	return &Error{pkg: pkg, name: name, text: text, parent: parent}
}

// Is makes a Kind answer to its parent.
func (e *Error) Is(target error) bool { return e.parent != nil && target == e.parent }

func (e *Error) Error() string {
	if e.text == "" {
		return e.pkg + ": " + e.name
	}
	return e.pkg + ": " + e.name + ": " + e.text
}

// ErrorName is the stable name, e.g. "ShardCorrupt".
func (e *Error) ErrorName() string { return e.name }

// Of is the name of the outermost named error in err's chain (the first
// with an ErrorName that errors.As meets, depth first), "" when there is
// none. So a failure wrapped as "%w: %w" answers to its first operand's
// name: the error that decided.
func Of(err error) string {
	var n interface{ ErrorName() string }
	if errors.As(err, &n) {
		return n.ErrorName()
	}
	return ""
}
