// Package runstate owns what a run of the migration workflow is, apart
// from its steps (pkg/workflow): the state payload every step takes and
// returns, what every step runs with, and what a run keeps in S3 and takes
// and frees on its way. The steps are made of these; the operator's
// commands (pkg/operator) and the local run (pkg/localrun) read them.
//
//	migration.go    Migration, the state payload, and the run ids; CatchUpLimits
//	env.go          Env, what every step runs with (configuration, not state), Progress, Publish and Publisher
//	config.go       Env from the Lambdas' environment: staging, the execution's timeout, the expected format version (an SSM parameter, read at run time), the InPlace step's memory and the in-place limit held to it
//	staging.go      what a run keeps in its staging (pkg/layout names each object): the plan, the shard results, the catch-up rounds, the staging's owner and its probe
//	lock.go         the lease of each kind of run, the pointer's lock taken with it (pkg/lock takes, confirms and frees it), the fence named, Unlock
//	grace.go        the freeze grace, and the wait before a fence for the live supervisors' acknowledgements (pkg/presence)
//	record.go       the run's record beside the pointer (pkg/history): started, timed, finished, ended
//	decision.go     the decision (flip or abort) only one of Flip and Abort can take
//	checkpoints.go  the checkpoints a run took of its source, deleted; the flip's pins of both catalogs, which a rollback carries commits from, and the marks (writer-epoch, next_snapshot_id) the pointer records beside them
//	replica.go      the read replica Freeze makes (claimed by Check), removed once no live supervisor serves it
//	target.go       a run's new catalog deleted until it stays empty (Abort, the replica)
//	errors.go       the named errors of all this, and ErrorName: the stable name a step's error answers to
package runstate
