// Package workflow owns the steps of the migration workflow (DESIGN 3) and
// the runs made of them. Each step is a plain function from an input struct
// to an output struct, both JSON, shared by the Lambdas (functions/), the
// CLI and the local interpreter. State payloads stay small whatever the
// shard count: the plan and every per-shard result live in S3 under
// <staging>/<migration-id>/ (staging.go), and a step reads what it needs.
//
// One file per step, in the order the definition runs them:
//
//	check.go        Check: preflight (preflight.go, shared with Plan), the staging probe, the lock, the run's record, the target's claim
//	freeze.go       Freeze: the fence, the checkpoint, the shard plan (blocks, else a bounded scan, else the counters) written to staging
//	online.go       an online run's Snapshot (a checkpoint, no fence), CatchUp rounds (views recorded, then the change carried), Fence, its Verify digest and report
//	shards.go       ExportTransformShard, the Map's (ExportShard and TransformShard are its two halves, for by hand)
//	import.go       Import (the one writer of the new catalog, resumable) and Finalize (the batch that makes it open)
//	verify.go       Verify: the new catalog's counts and digest against the transforms'
//	gate.go         Gate: the run waits for an operator (the record approve and abort read, pkg/operator), and its notification
//	flip.go         Flip: every precondition, the decision, the pointer's conditional write
//	abort.go        Abort: the target (fenced, then deleted until it stays empty), staging, the checkpoint, the lock
//	rollback.go     Rollback, in one step: the previous pointer version, checked, refused if it loses commits (or, with DiscardNewerCommits, after the lock and a fence)
//	carryback.go    the rollback run (CheckInput.Rollback): the online migration in reverse, its preflight, Snapshot's start, Flip's intent, Abort's revert; the flip's pins
//	inplace.go      MigrateInPlace (Strategy A) and its undo
//	drift.go        Drift, the scheduled check (pkg/drift finds, pkg/notify sends)
//	fleet.go        FleetList and FleetReport, a fleet run's first and last steps (statemachine/fleet.asl.json; pkg/fleet)
//
// What the steps share:
//
//	env.go          Env, what every step runs with, and Progress, the local run's counters
//	migration.go    Migration, the state payload, and the run ids
//	grace.go        the freeze grace, checked at Check, and the wait before a fence for the live supervisors' acknowledgements (pkg/presence), at most that grace
//	replica.go      the read replica Freeze makes (claimed by Check), and its removal by Flip and Abort once no live supervisor serves it
//	decision.go     the decision (flip or abort) only one of Flip and Abort can take
//	marks.go        the marks (writer-epoch, next_snapshot_id) the pointer records
//	staging.go      the plan, written to and read from staging (where each object lives: pkg/layout)
//	lock.go         the lease of each kind of run, taking the pointer's lock with it (pkg/lock takes, confirms and frees it), Unlock
//	record.go       the run's record beside the pointer (pkg/history)
//	errors.go       the steps' named errors, the names without an error, and ErrorName: the stable name a step's error answers to (each package's errors carry their own, pkg/errname)
//
// And what runs the steps: the step table, by name, and the request the
// definition's tasks send (handler.go: Run, RunStep, Functions, Request),
// which the Lambdas' runtime (pkg/function) and the local run
// (pkg/localrun) share; the environment (config.go, and memory.go for the
// in-place limit); and the expected format version, read from an SSM
// parameter at run time when an input names none (expected.go). What an
// operator runs around the runs (plan, status, approve, cleanup, restore)
// is pkg/operator's. Nothing here imports the Lambda runtime or the
// progress bars.
package workflow
