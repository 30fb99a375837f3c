package fleet

import "github.com/rocklake/rocklake-migrate/pkg/errname"

// The fleet's own refusals and failures, by name (errname). A pointer's
// own run's error keeps its name in the pointer's line.
var (
	// ErrNoPointers: the sources hold no pointer (nothing was run).
	ErrNoPointers = errname.New("fleet", "NoPointers", "")
	// ErrNoRun: the fleet run asked for (or any, for a rollback or status)
	// has no record beside the fleet.
	ErrNoRun = errname.New("fleet", "NoFleetRun", "")
	// ErrRecordUnwritable: the fleet run's record cannot be written; no
	// pointer is started without it.
	ErrRecordUnwritable = errname.New("fleet", "FleetRecordUnwritable", "")
	// ErrBadRequest: the fleet run's request is not one (an unknown
	// action); nothing was read or written.
	ErrBadRequest = errname.New("fleet", "BadFleetRequest", "")
	// ErrPointersFailed: some pointers' runs failed or were refused; the
	// report names each, with its error name, and the others went on.
	ErrPointersFailed = errname.New("fleet", "PointersFailed", "")
	// ErrDriftNoTime: a pointer of a fleet the drift check had no time left
	// for (FleetDrift starts no check near its deadline); the next scheduled
	// check looks again.
	ErrDriftNoTime = errname.NewRetryable("fleet", errname.Transient, "not checked: the fleet's drift check ran out of time before this pointer")
)
