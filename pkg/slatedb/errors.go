package slatedb

import (
	"errors"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// Code is a status code of the native library.
type Code int

// Codes, as native/include/rocklake_slatedb.h defines them.
const (
	CodeInternal          Code = 1
	CodeInvalid           Code = 2
	CodeNotFound          Code = 3
	CodeFenced            Code = 4
	CodeCheckpointMissing Code = 5
	CodeUnavailable       Code = 6
	CodeClosed            Code = 7
	CodeData              Code = 8
	CodeTimeout           Code = 9
	CodeCanceled          Code = 10
	CodeNoDatabase        Code = 11
	CodeNoSuchBucket      Code = 12
	CodeNoCredentials     Code = 13
)

// Sentinel errors for errors.Is. Every *Error matches exactly one of them.
// The named ones (errname) are the package's named errors.
var (
	ErrInternal = errors.New("slatedb: internal error")
	ErrInvalid  = errors.New("slatedb: invalid argument")
	ErrNotFound = errors.New("slatedb: key not found")
	// ErrFenced: a newer writer (or compactor) of the database took over;
	// this one may write no more.
	ErrFenced            = errname.New("slatedb", "Fenced", "fenced by a newer writer")
	ErrCheckpointMissing = errors.New("slatedb: checkpoint missing")
	// ErrUnavailable: the engine could not reach the object store; the
	// workflow retries it (Transient).
	ErrUnavailable = errname.NewRetryable("slatedb", errname.Transient, "object store unavailable")
	// ErrSilent is ErrUnavailable for a store that did not answer or read
	// within the limits the engine was handed (its message names one:
	// native/src/http.rs), after their attempts: S3Unreachable, not
	// retried again.
	ErrSilent       = errname.Kind(ErrUnavailable, "slatedb", errname.Unreachable, "object store did not answer")
	ErrClosed       = errors.New("slatedb: closed")
	ErrData         = errors.New("slatedb: unexpected persisted data")
	ErrNoDatabase   = errors.New("slatedb: no database at that location")
	ErrNoSuchBucket = errors.New("slatedb: no such bucket")
	// ErrNoCredentials is awsconfig.ErrNoCredentials (and blob.ErrNoCredentials).
	ErrNoCredentials = awsconfig.ErrNoCredentials
)

var sentinels = map[Code]error{
	CodeInternal:          ErrInternal,
	CodeInvalid:           ErrInvalid,
	CodeNotFound:          ErrNotFound,
	CodeFenced:            ErrFenced,
	CodeCheckpointMissing: ErrCheckpointMissing,
	CodeUnavailable:       ErrUnavailable,
	CodeClosed:            ErrClosed,
	CodeData:              ErrData,
	CodeNoDatabase:        ErrNoDatabase,
	CodeNoSuchBucket:      ErrNoSuchBucket,
	CodeNoCredentials:     ErrNoCredentials,
}

// Error is an error reported by the native library.
type Error struct {
	Code Code
	Op   string // the binding's operation, e.g. "open writer"
	Msg  string // the engine's message
}

func (e *Error) Error() string {
	if name := errname.Of(e.Unwrap()); name != "" {
		return "slatedb: " + e.Op + ": " + name + ": " + e.Msg
	}
	return "slatedb: " + e.Op + ": " + e.Msg
}

// Unwrap is the sentinel of e's code (nil for none): errors.Is(err,
// ErrFenced) and friends hold, and e answers to the sentinel's name.
func (e *Error) Unwrap() error {
	if e.Code == CodeUnavailable && strings.Contains(e.Msg, "ROCKLAKE_S3_") {
		return ErrSilent
	}
	return sentinels[e.Code]
}
