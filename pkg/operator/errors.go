package operator

import "github.com/rocklake/rocklake-migrate/pkg/errname"

// The operations' refusals, by name (errname): the CLI's JSON, its exit
// codes and the records match them. Each changed nothing.
var (
	// ErrCleanupUndecided: cleanup cannot tell what is in use (no valid
	// pointer, its history or the lock unreadable), so it deleted nothing.
	ErrCleanupUndecided = errname.New("operator", "CleanupUndecided", "")
	// ErrReleaseRefused: a way back cleanup was asked to release may still
	// be needed, or is not this pointer's; nothing was touched.
	ErrReleaseRefused = errname.New("operator", "ReleaseRefused", "")
	// ErrRestoreRefused: the restore's checks failed (no way back claimed
	// by that migration, the pointer moved on, the catalog is not what the
	// migration left); nothing was written.
	ErrRestoreRefused = errname.New("operator", "RestoreRefused", "")
	// ErrFleetDrift: pointers of a fleet drifted from the expected version
	// or have leftovers (the report lists them).
	ErrFleetDrift = errname.New("operator", "FleetDrift", "")
)
