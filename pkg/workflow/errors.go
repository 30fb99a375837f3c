package workflow

import (
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// The steps' named errors (errname), as the state machine's Retry and
// Catch, the history records and the CLI's JSON give them. Other packages'
// errors carry their own names.
var (
	// ErrBadInput: the input asks for things that exclude each other (a
	// rebuild to another format, in place into another location) or names
	// a location that is not one; Check refuses before anything is
	// touched.
	ErrBadInput = errname.New("workflow", "BadInput", "")
	// ErrSourceAtRoot: the catalog is at a bucket root (or "/"), with no
	// place beside it for the new catalog; Check refuses before anything is
	// touched.
	ErrSourceAtRoot = errname.New("workflow", "SourceAtRoot", "")
	// ErrStagingUnusable: staging does not take writes (a typo in its URL,
	// a missing bucket, no permission); Check refuses before anything is
	// touched.
	ErrStagingUnusable = errname.New("workflow", "StagingUnusable", "")
	// ErrStagingTaken: the run's staging directory belongs to another
	// pointer's run of the same migration id (staging shared by pointers,
	// an id given twice); Check refuses before anything is touched.
	ErrStagingTaken = errname.New("workflow", "StagingTaken", "")
	// ErrNoTargetVersion: the input names no version, and no
	// expected-version parameter is configured to read one from.
	ErrNoTargetVersion = errname.New("workflow", "NoTargetVersion", "")
	// ErrBadExpectedVersion: the expected-version parameter holds something
	// other than a format version ("2" or "v2").
	ErrBadExpectedVersion = errname.New("workflow", "BadExpectedVersion", "")
	// ErrBadFreezeGrace: the input's freeze_grace is negative or longer
	// than MaxFreezeGrace; Check refuses before anything is touched.
	ErrBadFreezeGrace = errname.New("workflow", "BadFreezeGrace", "")
	// ErrHistoryUnwritable: the run's record beside the pointer cannot be
	// written; Check refuses before anything is touched.
	ErrHistoryUnwritable = errname.New("workflow", "HistoryUnwritable", "")
	// ErrInPlaceLimitTooLarge: the in-place limit (in_place_max_bytes, or
	// the default) lets through a catalog whose batch the memory of the
	// InPlace step cannot hold (inplace.PeakBytes); refused before anything
	// is touched.
	ErrInPlaceLimitTooLarge = errname.New("workflow", "InPlaceLimitTooLarge", "")
	// ErrInPlaceNoTime: the in-place step was given less time than its
	// margin; it refused before touching anything.
	ErrInPlaceNoTime = errname.New("workflow", "InPlaceNoTime", "")
	// ErrSourceChanged: the source's writer-epoch or next_snapshot_id moved
	// after Freeze, so the new catalog misses writes; Flip refuses.
	ErrSourceChanged = errname.New("workflow", "SourceChangedDuringMigration", "")
	// ErrDecided: the other of Flip and Abort took the migration's decision
	// first. After "flip", Abort keeps the target (it may be live); after
	// "abort", Flip never writes the pointer (the target may be gone).
	ErrDecided = errname.New("workflow", "MigrationDecided", "")
	// ErrNotAtGate: no migration of that id waits at the gate (unknown id,
	// a migration not postponed, another pointer or staging); nothing
	// changed.
	ErrNotAtGate = errname.New("workflow", "NotAtGate", "")
	// ErrGateTimedOut: the gate's GateTimeout passed before approve; the
	// migration was aborted instead of flipped.
	ErrGateTimedOut = errname.New("workflow", "GateTimedOut", "")
	// ErrAbortAfterFlip: the pointer already names the new catalog, which
	// Abort must then not delete.
	ErrAbortAfterFlip = errname.New("workflow", "AbortAfterFlip", "")
	// ErrAbortUndecided: Abort could not read the pointer, and so refused
	// to delete anything; the state machine retries it.
	ErrAbortUndecided = errname.NewRetryable("workflow", errname.Transient, "Abort undecided")
	// ErrTargetStillWritten: objects kept appearing under the target Abort
	// removed, for targetSettleMax; the state machine retries Abort.
	ErrTargetStillWritten = errname.NewRetryable("workflow", errname.Transient, "target still written")
	// ErrRollbackLosesCommits: the catalog the pointer names took commits
	// after the flip, which the catalog to be restored does not have.
	ErrRollbackLosesCommits = errname.New("workflow", "RollbackLosesCommits", "")
	// ErrPreviousCatalogChanged: the catalog a rollback would carry commits
	// into cannot be proven to read as it did at the flip (it took writes
	// since, its pin is gone, or the flip pinned nothing): the rollback
	// writes nothing to it.
	ErrPreviousCatalogChanged = errname.New("workflow", "PreviousCatalogChanged", "")
	// ErrDriftNoTime: a pointer of a fleet the drift check had no time left
	// for (FleetDrift starts no check near its deadline); the next scheduled
	// check looks again.
	ErrDriftNoTime = errname.NewRetryable("workflow", errname.Transient, "not checked: the fleet's drift check ran out of time before this pointer")
)

// Names of failures that no error of the steps carries: the history
// records, the state machine and the CLI give them as they give the
// errors' names.
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
	// NameAbortedByOperator: the error an abort at the gate fails the Gate
	// state with (SendTaskFailure's error), which its Catch sends to Abort.
	NameAbortedByOperator = "AbortedByOperator"
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
