// Package operator owns what an operator runs around the migrations, as
// opposed to the steps of one (pkg/workflow): each is a plain function the
// CLI calls, and none is a state of a definition.
//
//	plan.go         Plan: every check Check makes, past a failed one, and the catalog measured for the estimates (pkg/estimate); writes nothing
//	status.go       Status (the run in progress: the lock, its record, its staging) and StatusOf (the CLI's status: the pointer, its catalog's startup check, its versions)
//	gate.go         Approve and AbortGate: a run waiting at its gate completed, on Step Functions (its task token) or by resuming the local run (pkg/localrun)
//	cleanup.go      Cleanup: what dead runs left behind, as the drift check finds it, removed under the pointer's lock (a directory only if a claim of this pointer's run names it)
//	restore.go      Restore: a catalog an in-place run left in its new format, brought back from its way back
//	rollback.go     Rollback: the rollback run that carries commits back (pkg/localrun) when the flip pinned both catalogs, else the one-step rollback
//	initpointer.go  InitPointer: the first pointer to a catalog
//	fleet.go        PlanFleet: Plan on every pointer of a fleet, and the fleet run's time at a concurrency; FleetDrift: the drift check of every pointer of a fleet, one alert
//	errors.go       the operations' named refusals
package operator
