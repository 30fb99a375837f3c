// Package workflow owns the steps of the migration workflow (DESIGN 3) and
// the runs made of them. Each step is a plain function from an input struct
// to an output struct, both JSON, shared by the Lambdas (functions/), the
// CLI and the local interpreter. State payloads stay small whatever the
// shard count: the plan and every per-shard result live in S3 under
// <staging>/<migration-id>/ (pkg/runstate), and a step reads what it needs.
//
// One file per step, in the order the definition runs them:
//
//	check.go        Check: preflight (preflight.go, shared with Plan), the staging probe, the lock, the run's record (or its refusal's), the target's claim, the target's place
//	freeze.go       Freeze: the fence, the checkpoint, the shard plan (shard.PlanBalanced) written to staging
//	online.go       an online run's Snapshot (a checkpoint, no fence), CatchUp rounds (views recorded, then the change carried), Fence, its Verify digest and report
//	shards.go       ExportTransformShard, the Map's (ExportShard and TransformShard are its two halves, for by hand)
//	import.go       Import (the one writer of the new catalog, resumable) and Finalize (the batch that makes it open)
//	verify.go       Verify: the new catalog's counts and digest against the transforms'
//	gate.go         Gate: the run waits for an operator (the record approve and abort read: pkg/gate)
//	flip.go         Flip: every precondition, the decision, the pointer's conditional write
//	abort.go        Abort: the target (fenced, then deleted until it stays empty), staging, the checkpoint, the lock
//	rollback.go     Rollback, in one step: the previous pointer version, checked, refused if it loses commits (or, with DiscardNewerCommits, after the lock and a fence)
//	carryback.go    the rollback run (CheckInput.Rollback): the online migration in reverse, its preflight, Snapshot's start, Flip's intent, Abort's revert
//	inplace.go      MigrateInPlace (Strategy A) and its undo
//	drift.go        Drift, the scheduled check (pkg/drift finds, pkg/notify sends)
//	fleet.go        FleetList, FleetGo, FleetFailed and FleetReport, a fleet run's steps (statemachine/fleet.asl.json; pkg/fleet), and FleetDrift: Drift on every pointer of a fleet, one alert
//
// What the steps share (the state payload, Env, the plan and what else a
// run keeps in staging, the lock as a run takes it, the record, the
// decision, the waits before a fence) is pkg/runstate's; the gate's record
// and notice pkg/gate's; how shards are cut pkg/shard's.
//
// And what runs the steps: the step table, by name, and the request the
// definition's tasks send (handler.go: Run, RunStep, Functions, Request),
// which the Lambdas' runtime (pkg/function) and the local run
// (pkg/localrun) share. errors.go holds the steps' own named errors. What
// an operator runs around the runs (plan, status, approve, cleanup,
// restore, rollback) is pkg/operator's. Nothing here imports the Lambda
// runtime or the progress bars.
package workflow
