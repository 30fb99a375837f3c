// Package localrun owns the local run: the CLI's `migrate` (and the
// rollback run) executing the same definitions AWS runs
// (statemachine/*.asl.json) under the project's interpreter (pkg/asl), with
// the same steps the Lambdas host (Tasks: pkg/workflow's step table, in
// process), or Strategy A as Check then InPlace. It shows itself through
// a Display its caller gives (the CLI's is pkg/progress), runs Abort for a
// run a signal or the deadline interrupted, records a run that stops at
// its gate for approve and abort to resume (pkg/operator), and reports
// the run (Report).
package localrun
