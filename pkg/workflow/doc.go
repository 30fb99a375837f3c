// Package workflow owns the steps of the migration workflow (DESIGN 3):
// Check, Freeze, ExportTransformShard (the Map's; ExportShard and
// TransformShard are its two halves, for by hand), Import, Finalize, Verify, Gate,
// Flip, Abort and Rollback, and completing the gate (gate.go: approve or
// abort a migration that waits for it, on Step Functions or in the CLI). Each is a plain function from an input struct to an
// output struct, both JSON, shared by the Lambdas (functions/), the CLI and
// the local interpreter. State payloads stay small whatever the shard count:
// the plan and every per-shard result live in S3 under
// <staging>/<migration-id>/ (staging.go), and a step reads what it needs.
//
// Cleanup (cleanup.go) removes what dead runs left behind, as the drift
// check finds it, holding the same lock as a migration; a directory only if
// a claim of this pointer's run names it (pkg/claim: Import and the
// in-place step claim what they create before they write there). Restore
// (restore.go) brings back a catalog an in-place run left in its new format
// from its way back.
//
// It also owns what the Lambdas need around the steps: the handler
// (handler.go), whose log lines carry the request id, step, migration id,
// shard and pointer and whose steps log their rows and duration in
// CloudWatch's embedded metric format (logging.go), and the expected
// format version, read from an SSM parameter at run time when an input
// names none (expected.go).
//
// Before a migration, Check runs the read-only preflight (preflight.go)
// that Preflight, the CLI's `plan`, runs too, with its estimates (plan.go).
// Every run is recorded beside the pointer (record.go, pkg/history), and
// Status reads a run in progress from its lock, record and staging.
//
// Errors that the state machine retries or catches carry stable names, each
// package's its own (pkg/errname): FormatVersionMismatch,
// SourceChangedDuringMigration, PointerConflict, TargetNotEmpty,
// ShardCorrupt, VerifyMismatch, ...; ErrorName (errors.go) reads the name a
// step's error answers to.
package workflow
