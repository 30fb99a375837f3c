// Package errname holds named errors: errors that carry a stable name
// (ErrorName) beside their message, the name Step Functions' Retry and
// Catch, the history records, the CLI's JSON and the alarms match, and Of,
// which finds the name an error chain answers to.
//
// Every package declares its named errors in one var block (in errors.go,
// or beside the package's main code), each with a doc comment, made by
// New, NewRetryable or Kind: the name travels with the error, so no list
// elsewhere maps errors to names. A message reads "<package>: <Name>:
// <what happened>", as pkg/pointer's do. Whether a failure is worth
// retrying is a property of the error (NewRetryable, Retryable), not of
// its name. Every error made here is in All, which the tree's checks
// (internal/lint) and docs/errors.md (cmd/rocklake-migrate) read.
package errname

import (
	"errors"
	"runtime"
	"sync"
)

// Transient is the name the retryable errors (NewRetryable) carry: the only
// name the state machines' Retry blocks match, besides Step Functions' own
// (internal/lint holds the two to each other). Several packages' errors
// carry it.
const Transient = "Transient"

// Unreachable is the name of an endpoint that did not answer within the
// process's request limits, after all their attempts (awsconfig.Limits):
// those attempts were its retries, so it is not retryable and the state
// machines do not retry it again; a command names it after its first
// request. pkg/blob's and pkg/slatedb's errors carry it.
const Unreachable = "S3Unreachable"

// Error is a sentinel with a stable name. Sentinels are compared by
// identity (errors.Is), so two errors of one class name (ShardCorrupt, say)
// stay apart; one made by Kind also answers to its parent.
type Error struct {
	pkg, name, text string
	parent          error
	retryable       bool
	file            string // where it was declared
	line            int
}

var (
	mu       sync.Mutex
	declared []*Error
)

// New is the error of package pkg named name; text says what happened, for
// people ("" for none).
func New(pkg, name, text string) *Error {
	return declare(&Error{pkg: pkg, name: name, text: text})
}

// NewRetryable is New for a failure worth retrying as it is (S3 or the
// object store did not answer, a wait ran out): Retryable holds for it.
// Its name is one the state machines retry: Transient.
func NewRetryable(pkg, name, text string) *Error {
	return declare(&Error{pkg: pkg, name: name, text: text, retryable: true})
}

// Kind is New for a narrower case of parent: errors.Is(err, parent) holds
// for it too, while its name is its own, and it is not retryable (a case
// that is says so by its name and NewRetryable).
func Kind(parent error, pkg, name, text string) *Error {
	return declare(&Error{pkg: pkg, name: name, text: text, parent: parent})
}

// declare notes e, and where its constructor was called, in All.
func declare(e *Error) *Error {
	_, e.file, e.line, _ = runtime.Caller(2)
	mu.Lock()
	defer mu.Unlock()
	declared = append(declared, e)
	return e
}

// All is every error New, NewRetryable and Kind made in this process, in
// the order they were made (a package's in its block's order).
func All() []*Error {
	mu.Lock()
	defer mu.Unlock()
	return append([]*Error(nil), declared...)
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

// Retryable reports whether the failure is worth retrying as it is
// (NewRetryable).
func (e *Error) Retryable() bool { return e.retryable }

// Package is the package that declared e, as its message gives it.
func (e *Error) Package() string { return e.pkg }

// Text is what e says happened after its name ("" for nothing).
func (e *Error) Text() string { return e.text }

// Parent is the error a Kind answers to (nil for New's and NewRetryable's).
func (e *Error) Parent() error { return e.parent }

// Declared is where e was made: its declaration's file and line.
func (e *Error) Declared() (file string, line int) { return e.file, e.line }

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

// Retryable reports whether err is worth retrying as it is: whether the
// error Of names (the outermost named one) is retryable. An error without
// a name, or named by an error without a Retryable method, is not.
func Retryable(err error) bool {
	var n interface{ ErrorName() string }
	if !errors.As(err, &n) {
		return false
	}
	r, ok := n.(interface{ Retryable() bool })
	return ok && r.Retryable()
}
