package workflow

import (
	"errors"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Stable error names, as the state machine's Retry and Catch match them.
const (
	NameFormatVersionMismatch = "FormatVersionMismatch"
	NameSourceChanged         = "SourceChangedDuringMigration"
	NameRollbackLosesCommits  = "RollbackLosesCommits"
	NameAbortAfterFlip        = "AbortAfterFlip"
	NameMigrationInProgress   = "MigrationInProgress"
	NameLockLost              = "LockLost"
	NameFenced                = "Fenced"
	NameSourceAtRoot          = "SourceAtRoot"
	NameStagingUnusable       = "StagingUnusable"
	NameDecided               = "MigrationDecided"
	NameNotAtGate             = "NotAtGate"
	NameGateTimedOut          = "GateTimedOut"
	NameTargetNotEmpty        = "TargetNotEmpty"
	NameShardCorrupt          = "ShardCorrupt"
	NameVerifyMismatch        = "VerifyMismatch"
	NameUnknownTags           = "UnknownTags"
	NameFieldCollision        = "UnknownFieldCollision"
	NameCorruptCatalog        = "CorruptCatalog"
	NameTransient             = "Transient"
	NameStepFailed            = "StepFailed"
	NameNoTargetVersion       = "NoTargetVersion"
	NameBadExpectedVersion    = "BadExpectedVersion"
	NameNoSuchBucket          = "NoSuchBucket"
	NameNoCredentials         = "NoCredentials"
	NameAccessDenied          = "AccessDenied"
	NameNoCatalog             = "NoCatalog"
	NameInPlaceTooLarge       = "InPlaceTooLarge"
	NameInPlaceNoWayBack      = "InPlaceNoWayBack"
	NameInPlaceWayBackTaken   = "InPlaceWayBackTaken"
	NameBadInput              = "BadInput"
	NameInPlaceNoTime         = "InPlaceNoTime"
	NameRestoreRefused        = "RestoreRefused"
	NameClaimTaken            = "ClaimTaken"
	NameReleaseRefused        = "ReleaseRefused"
	NameInPlaceLimitTooLarge  = "InPlaceLimitTooLarge"
	NameInPlaceCatalogMoved   = "InPlaceCatalogMoved"
	NameInPlaceUndoUndecided  = "InPlaceUndoUndecided"
	NameBadFreezeGrace        = "BadFreezeGrace"
)

// ErrSourceChanged: the source's writer-epoch or next_snapshot_id moved
// after Freeze, so the new catalog misses writes; Flip refuses.
var ErrSourceChanged = errors.New(NameSourceChanged)

// ErrorName is the stable name of err for the state machine: the error's own
// ErrorName if it has one, else a name for the error classes steps branch on,
// else StepFailed.
func ErrorName(err error) string {
	if errors.Is(err, ErrAbortUndecided) || errors.Is(err, ErrTargetStillWritten) {
		// Whatever kept Abort from reading the pointer, or from seeing the
		// target stay empty, Abort itself only waited: retry it.
		return NameTransient
	}
	// An undo that kept the catalog and its way back names that, whatever
	// failed before it (a PointerConflict, say).
	switch {
	case errors.Is(err, inplace.ErrCatalogMoved):
		return NameInPlaceCatalogMoved
	case errors.Is(err, inplace.ErrUndoUndecided):
		return NameInPlaceUndoUndecided
	}
	var named interface{ ErrorName() string }
	if errors.As(err, &named) {
		return named.ErrorName()
	}
	var mismatch *format.FormatVersionMismatch
	switch {
	case errors.As(err, &mismatch):
		return NameFormatVersionMismatch
	case errors.Is(err, ErrSourceChanged):
		return NameSourceChanged
	case errors.Is(err, ErrNoTargetVersion):
		return NameNoTargetVersion
	case errors.Is(err, ErrBadExpectedVersion):
		return NameBadExpectedVersion
	case errors.Is(err, ErrStagingUnusable):
		return NameStagingUnusable
	case errors.Is(err, ErrBadFreezeGrace):
		return NameBadFreezeGrace
	case errors.Is(err, ErrSourceAtRoot):
		return NameSourceAtRoot
	case errors.Is(err, ErrLockLost):
		return NameLockLost
	case errors.Is(err, ErrBadInput):
		return NameBadInput
	case errors.Is(err, ErrMigrationInProgress):
		return NameMigrationInProgress
	case errors.Is(err, ErrHistoryUnwritable):
		return NameHistoryUnwritable
	case errors.Is(err, slatedb.ErrFenced):
		return NameFenced
	case errors.Is(err, ErrAbortAfterFlip):
		return NameAbortAfterFlip
	case errors.Is(err, ErrDecided):
		return NameDecided
	case errors.Is(err, ErrNotAtGate):
		return NameNotAtGate
	case errors.Is(err, ErrGateTimedOut):
		return NameGateTimedOut
	case errors.Is(err, ErrRollbackLosesCommits):
		return NameRollbackLosesCommits
	case errors.Is(err, inplace.ErrTooLarge):
		return NameInPlaceTooLarge
	case errors.Is(err, inplace.ErrNoWayBack):
		return NameInPlaceNoWayBack
	case errors.Is(err, inplace.ErrWayBackTaken):
		return NameInPlaceWayBackTaken
	case errors.Is(err, ErrInPlaceNoTime):
		return NameInPlaceNoTime
	case errors.Is(err, ErrRestoreRefused):
		return NameRestoreRefused
	case errors.Is(err, ErrReleaseRefused):
		return NameReleaseRefused
	case errors.Is(err, claim.ErrTaken):
		return NameClaimTaken
	case errors.Is(err, ErrInPlaceLimitTooLarge):
		return NameInPlaceLimitTooLarge
	case errors.Is(err, shard.ErrTargetNotEmpty):
		return NameTargetNotEmpty
	case errors.Is(err, ndjson.ErrNoTrailer), errors.Is(err, ndjson.ErrTrailerMismatch),
		errors.Is(err, ndjson.ErrBadLine), errors.Is(err, ndjson.ErrHeader),
		errors.Is(err, ndjson.ErrCorrupt), errors.Is(err, shard.ErrIncompleteSet):
		return NameShardCorrupt
	case errors.Is(err, format.ErrBadMagic), errors.Is(err, format.ErrEnvelopeVersion),
		errors.Is(err, format.ErrChecksum), errors.Is(err, format.ErrEnvelopeTruncated),
		errors.Is(err, format.ErrBadRow):
		return NameCorruptCatalog
	case errors.Is(err, shard.ErrMismatch):
		return NameVerifyMismatch
	case errors.Is(err, migration.ErrUnknownTags):
		return NameUnknownTags
	case errors.Is(err, migration.ErrFieldCollision):
		return NameFieldCollision
	case errors.Is(err, slatedb.ErrUnavailable), errors.Is(err, blob.ErrUnreachable):
		return NameTransient
	case errors.Is(err, blob.ErrNoCredentials):
		return NameNoCredentials
	case errors.Is(err, blob.ErrAccessDenied):
		return NameAccessDenied
	case errors.Is(err, blob.ErrNoSuchBucket):
		return NameNoSuchBucket
	case errors.Is(err, catalog.ErrNoCatalog):
		return NameNoCatalog
	}
	return NameStepFailed
}
