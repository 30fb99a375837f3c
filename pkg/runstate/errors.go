package runstate

import (
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// The named errors of what the steps share (errname): the same names the
// state machine's Retry and Catch, the history records and the CLI's JSON
// give them as the steps' own (pkg/workflow).
var (
	// ErrStagingUnusable: staging does not take writes (a typo in its URL,
	// a missing bucket, no permission); Check refuses before anything is
	// touched.
	ErrStagingUnusable = errname.New("runstate", "StagingUnusable", "")
	// ErrStagingTaken: the run's staging directory belongs to another
	// pointer's run of the same migration id (staging shared by pointers,
	// an id given twice); Check refuses before anything is touched.
	ErrStagingTaken = errname.New("runstate", "StagingTaken", "")
	// ErrBadFreezeGrace: the input's freeze_grace is negative or longer
	// than MaxFreezeGrace; Check refuses before anything is touched.
	ErrBadFreezeGrace = errname.New("runstate", "BadFreezeGrace", "")
	// ErrHistoryUnwritable: the run's record beside the pointer cannot be
	// written; Check refuses before anything is touched.
	ErrHistoryUnwritable = errname.New("runstate", "HistoryUnwritable", "")
	// ErrDecided: the other of Flip and Abort took the migration's decision
	// first. After "flip", Abort keeps the target (it may be live); after
	// "abort", Flip never writes the pointer (the target may be gone).
	ErrDecided = errname.New("runstate", "MigrationDecided", "")
	// ErrAbortAfterFlip: the pointer already names the new catalog, which
	// Abort must then not delete.
	ErrAbortAfterFlip = errname.New("runstate", "AbortAfterFlip", "")
	// ErrNoTargetVersion: the input names no version, and no
	// expected-version parameter is configured to read one from.
	ErrNoTargetVersion = errname.New("runstate", "NoTargetVersion", "")
	// ErrBadExpectedVersion: the expected-version parameter holds something
	// other than a format version ("2" or "v2").
	ErrBadExpectedVersion = errname.New("runstate", "BadExpectedVersion", "")
	// ErrInPlaceLimitTooLarge: the in-place limit (in_place_max_bytes, or
	// the default) lets through a catalog whose batch the memory of the
	// InPlace step cannot hold (inplace.PeakBytes); refused before anything
	// is touched.
	ErrInPlaceLimitTooLarge = errname.New("runstate", "InPlaceLimitTooLarge", "")
	// ErrTargetStillWritten: objects kept appearing under the target Abort
	// removed, for targetSettleMax; the state machine retries Abort.
	ErrTargetStillWritten = errname.NewRetryable("runstate", errname.Transient, "target still written")
)

// Names of failures that no error carries: the history records give them
// as they give the errors' names.
const (
	// NameStepFailed: the name of a step's error that carries no name of
	// its own (ErrorName).
	NameStepFailed = "StepFailed"
	// NameLockExpired: the error name in the record of a run whose lock's
	// lease ran out and another migration took over.
	NameLockExpired = "LockExpired"
	// NameUnlocked: the error name in the record of a run whose lock an
	// operator broke (Unlock).
	NameUnlocked = "Unlocked"
)

// ErrorName is the stable name of err for the state machine: the name of
// the outermost named error in it (errname.Of), else StepFailed. So where
// one failure follows another, the error built first in "%w ... %w" names
// the whole; an in-place undo that kept the catalog puts its
// InPlaceCatalogMoved or InPlaceUndoUndecided first.
func ErrorName(err error) string {
	if name := errname.Of(err); name != "" {
		return name
	}
	return NameStepFailed
}
