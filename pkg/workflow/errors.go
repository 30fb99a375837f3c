package workflow

import (
	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// Stable names of this package's errors, as the state machine's Retry and
// Catch, the history records and the CLI's JSON give them. Other packages'
// errors carry their own (pkg/errname); Abort's waits are
// errname.Transient.
const (
	NameSourceChanged          = "SourceChangedDuringMigration"
	NameRollbackLosesCommits   = "RollbackLosesCommits"
	NameAbortAfterFlip         = "AbortAfterFlip"
	NameSourceAtRoot           = "SourceAtRoot"
	NameStagingUnusable        = "StagingUnusable"
	NameStagingTaken           = "StagingTaken"
	NameDecided                = "MigrationDecided"
	NameNotAtGate              = "NotAtGate"
	NameGateTimedOut           = "GateTimedOut"
	NameNoTargetVersion        = "NoTargetVersion"
	NameBadExpectedVersion     = "BadExpectedVersion"
	NameBadInput               = "BadInput"
	NameInPlaceNoTime          = "InPlaceNoTime"
	NameInPlaceLimitTooLarge   = "InPlaceLimitTooLarge"
	NameBadFreezeGrace         = "BadFreezeGrace"
	NameStepFailed             = "StepFailed" // an error without a name
	NamePreviousCatalogChanged = "PreviousCatalogChanged"
)

// ErrSourceChanged: the source's writer-epoch or next_snapshot_id moved
// after Freeze, so the new catalog misses writes; Flip refuses.
var ErrSourceChanged = errname.New("workflow", NameSourceChanged, "")

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
