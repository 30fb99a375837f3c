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
	// ErrInPlaceNoTime: the in-place step was given less time than its
	// margin; it refused before touching anything.
	ErrInPlaceNoTime = errname.New("workflow", "InPlaceNoTime", "")
	// ErrSourceChanged: the source's writer-epoch or next_snapshot_id moved
	// after Freeze, so the new catalog misses writes; Flip refuses.
	ErrSourceChanged = errname.New("workflow", "SourceChangedDuringMigration", "")
	// ErrAbortUndecided: Abort could not read the pointer, and so refused
	// to delete anything; the state machine retries it.
	ErrAbortUndecided = errname.NewRetryable("workflow", errname.Transient, "Abort undecided")
	// ErrRollbackLosesCommits: the catalog the pointer names took commits
	// after the flip, which the catalog to be restored does not have.
	ErrRollbackLosesCommits = errname.New("workflow", "RollbackLosesCommits", "")
	// ErrPreviousCatalogChanged: the catalog a rollback would carry commits
	// into cannot be proven to read as it did at the flip (it took writes
	// since, its pin is gone, or the flip pinned nothing): the rollback
	// writes nothing to it.
	ErrPreviousCatalogChanged = errname.New("workflow", "PreviousCatalogChanged", "")
)

// Names of failures that no error of the steps carries: the history
// records, the state machine and the CLI give them as they give the
// errors' names.
const ()
