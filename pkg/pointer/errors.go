package pointer

import (
	"strings"
)

// Stable error names: the ErrorName of this package's errors, usable as
// Step Functions error names in Retry and Catch.
const (
	NameConflict          = "PointerConflict"
	NameUnversioned       = "PointerUnversioned"
	NameMissing           = "PointerMissing"
	NameExists            = "PointerExists"
	NameNoPreviousVersion = "NoPreviousVersion"
	NameBadPointer        = "BadPointer"
)

// Sentinels for errors.Is: an *Error matches the one of the same Name.
var (
	// ErrPointerConflict: the pointer is no longer the version the caller
	// read (someone else flipped, rolled back or deleted it); nothing was
	// written.
	ErrPointerConflict = &Error{Name: NameConflict}
	// ErrUnversioned: the pointer's bucket does not have versioning enabled
	// (or the pointer is a local file), so a write could not be rolled back;
	// nothing was written.
	ErrUnversioned = &Error{Name: NameUnversioned}
	// ErrPointerMissing: there is no pointer object (or its latest version
	// is a delete marker).
	ErrPointerMissing = &Error{Name: NameMissing}
	// ErrPointerExists: Create found a pointer already there.
	ErrPointerExists = &Error{Name: NameExists}
	// ErrNoPreviousVersion: Rollback found no earlier pointer to restore.
	ErrNoPreviousVersion = &Error{Name: NameNoPreviousVersion}
	// ErrBadPointer: the pointer object (or a pointer given to write) is not
	// a valid pointer.
	ErrBadPointer = &Error{Name: NameBadPointer}
)

// Error is a pointer-level failure with a stable Name.
type Error struct {
	Name   string // one of the Name* constants
	Op     string // read, create, flip, rollback, history
	URL    string // the pointer object
	Detail string // what happened, for people
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
	b.WriteString(e.Name)
	if e.Detail != "" {
		b.WriteString(": " + e.Detail)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// ErrorName is the stable name of the error, e.g. "PointerConflict".
func (e *Error) ErrorName() string { return e.Name }

// Unwrap gives the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrPointerConflict) and the like match every
// *Error of that name.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Name == e.Name
}
