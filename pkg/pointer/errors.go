package pointer

import (
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// The package's named errors (errname): usable as Step Functions error
// names in Retry and Catch. The error returned is an *Error of one of
// them, which errors.Is matches.
var (
	// ErrPointerConflict: the pointer is no longer the version the caller
	// read (someone else flipped, rolled back or deleted it); nothing was
	// written.
	ErrPointerConflict = errname.New("pointer", "PointerConflict", "")
	// ErrUnversioned: the pointer's bucket does not have versioning enabled
	// (or the pointer is a local file), so a write could not be rolled back;
	// nothing was written.
	ErrUnversioned = errname.New("pointer", "PointerUnversioned", "")
	// ErrPointerMissing: there is no pointer object (or its latest version
	// is a delete marker).
	ErrPointerMissing = errname.New("pointer", "PointerMissing", "")
	// ErrPointerExists: Create found a pointer already there.
	ErrPointerExists = errname.New("pointer", "PointerExists", "")
	// ErrNoPreviousVersion: Rollback found no earlier pointer to restore.
	ErrNoPreviousVersion = errname.New("pointer", "NoPreviousVersion", "")
	// ErrBadPointer: the pointer object (or a pointer given to write) is not
	// a valid pointer.
	ErrBadPointer = errname.New("pointer", "BadPointer", "")
)

// Error is a pointer-level failure, named after its Kind.
type Error struct {
	Kind   *errname.Error // one of the Err* above: its name is the error's
	Op     string         // read, create, flip, rollback, history
	URL    string         // the pointer object
	Detail string         // what happened, for people
	// ExpectedETag and CurrentETag are set on a PointerConflict: the ETag
	// the caller expected and the one found instead ("" when the pointer is
	// gone or could not be read again).
	ExpectedETag string
	CurrentETag  string
	Err          error // the underlying error, if any
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("pointer: ")
	if e.Op != "" {
		b.WriteString(e.Op + " ")
	}
	if e.URL != "" {
		b.WriteString(e.URL + ": ")
	}
	b.WriteString(e.Kind.ErrorName())
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// ErrorName is the stable name of the error, its Kind's: e.g.
// "PointerConflict".
func (e *Error) ErrorName() string { return e.Kind.ErrorName() }

// Unwrap gives the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrPointerConflict) and the like match every
// *Error of that Kind.
func (e *Error) Is(target error) bool { return target == e.Kind }
