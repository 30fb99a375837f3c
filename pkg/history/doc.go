// Package history owns the run records kept beside a catalog pointer: one
// JSON object per run (a migration, a dry run, a rollback, a cleanup, an
// operator's abort) under <pointer>.history/, named by the run's start time
// and id (pkg/layout names them) so that a listing is in time order:
//
//	s3://bucket/rocklake/CURRENT.history/20260101T120000.000Z-m-20260101T120000Z-ab12cd34.json
//
// A record is created with a conditional put (If-None-Match), so no run ever
// overwrites another's, and then only updated by its own run, each update
// conditional on the ETag it read (Update). Records are small and few (one
// per run), so List reads them all.
//
// Who writes what (pkg/workflow): Check starts a migration's record (outcome
// in-progress) once it holds the pointer's lock, or writes a failed one when
// it refuses; Flip finishes it (succeeded), Abort finishes it (failed with
// the step's error name, aborted, or dry-run-ok for a dry run's cleanup);
// Rollback writes its own. A record write that fails after the pointer moved
// never undoes or fails the move: the pointer is the outcome, and its own
// object versions keep the fact (see workflow's FlipOutput.HistoryError).
package history
