package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Request is what the state machine sends a function: the step to run and
// its input. One function hosts several steps (DESIGN 3: four Lambdas);
// the Lambda handler (pkg/function) and the local run (pkg/localrun) decode
// it alike.
type Request struct {
	Step  string          `json:"step"`
	Input json.RawMessage `json:"input"`
}

type stepFunc func(ctx context.Context, env runstate.Env, in json.RawMessage) (any, error)

func step[I, O any](f func(context.Context, runstate.Env, I) (O, error)) stepFunc {
	return func(ctx context.Context, env runstate.Env, raw json.RawMessage) (any, error) {
		var in I
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("workflow: decode input: %w", err)
		}
		return f(ctx, env, in)
	}
}

// Step is one step of the workflow, as the state machines name it (a
// Task's Parameters.step): the Lambda function that hosts it, whether it
// is Timed, how its task is retried, and what runs it (its input and
// output types are the function's). A timed step leaves its time in
// staging for the record's time per state: the steps between Check and
// Abort, which write the record themselves; Flip finishes the record
// itself when it succeeds, and its timing is kept for the Abort after a
// Flip that failed, which then names Flip as the state that failed.
type Step struct {
	Name     string
	Function string
	Timed    bool
	Retry    Retry
	run      stepFunc
}

// Retry is a step's retry class: which failures the definitions' Retry on
// its task runs it again after (RetryErrors).
type Retry string

const (
	// RetryTransient: the steps' retryable errors (errname.Transient) and
	// the Lambda service's own failures; running the step again is safe.
	RetryTransient Retry = "transient"
	// RetryResumable: those, and a function that died or ran out of time
	// (Lambda.Unknown, States.Timeout): Import resumes from the shards it
	// finished, so a run cut short is run again too.
	RetryResumable Retry = "resumable"
	// RetryNever: InPlace, whose batch lands once; a failure is its undo's
	// to handle, then Abort's.
	RetryNever Retry = "never"
)

// RetryErrors is what each class retries: the ErrorEquals of the Retry on
// the step's task in every definition (a test holds them).
var RetryErrors = map[Retry][]string{
	RetryTransient: {errname.Transient, "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException"},
	RetryResumable: {errname.Transient, "Lambda.ServiceException", "Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.TooManyRequestsException", "Lambda.Unknown", "States.Timeout"},
	RetryNever:     nil,
}

// StepTable is every step, said once: Run and the Lambdas' handler
// (pkg/function) dispatch by it, Functions is made from it, the record's
// times follow it; a test holds it against the definitions
// (statemachine/*.asl.json).
var StepTable = []Step{
	{statemachine.StepCheck, "check", false, RetryTransient, step(Check)},
	{statemachine.StepGate, "check", false, RetryTransient, step(Gate)},
	{statemachine.StepFlip, "check", true, RetryTransient, step(Flip)},
	{statemachine.StepAbort, "check", false, RetryTransient, step(Abort)},
	{statemachine.StepRollback, "check", false, RetryTransient, step(Rollback)},
	{statemachine.StepDrift, "check", false, RetryTransient, step(Drift)},
	{statemachine.StepFreeze, "export", true, RetryTransient, step(Freeze)},
	{statemachine.StepSnapshot, "export", true, RetryTransient, step(Snapshot)},
	{statemachine.StepFence, "export", true, RetryTransient, step(Fence)},
	{statemachine.StepExportTransformShard, "export", true, RetryTransient, step(ExportTransformShard)},
	{statemachine.StepExportShard, "export", true, RetryTransient, step(ExportShard)},
	{statemachine.StepTransformShard, "export", true, RetryTransient, step(TransformShard)},
	// CatchUp writes the target, as Import does.
	{statemachine.StepImport, "import", true, RetryResumable, step(Import)},
	{statemachine.StepCatchUp, "import", true, RetryTransient, step(CatchUp)},
	{statemachine.StepVerifyCatchUp, "import", true, RetryTransient, step(VerifyCatchUp)},
	{statemachine.StepFinalize, "import", true, RetryTransient, step(Finalize)},
	{statemachine.StepVerify, "import", true, RetryTransient, step(Verify)},
	// Strategy A: the catalog's writer, and the pointer's (its flip), in
	// one step.
	{statemachine.StepInPlace, "inplace", false, RetryNever, step(MigrateInPlace)},
	// A fleet run's: the pointers, and how each went (pkg/fleet).
	{statemachine.StepFleetList, "check", false, RetryTransient, step(FleetList)},
	{statemachine.StepFleetReport, "check", false, RetryTransient, step(FleetReport)},
	// Each fleet item's: may it start, and counting a failure.
	{statemachine.StepFleetGo, "check", false, RetryTransient, step(FleetGo)},
	{statemachine.StepFleetFailed, "check", false, RetryTransient, step(FleetFailed)},
	// The scheduled drift check of a fleet: every pointer, one alert.
	{statemachine.StepFleetDrift, "check", false, RetryTransient, step(FleetDrift)},
}

// Functions maps each Lambda function to the steps it hosts (StepTable).
var Functions = func() map[string][]string {
	fns := map[string][]string{}
	for _, st := range StepTable {
		fns[st.Function] = append(fns[st.Function], st.Name)
	}
	return fns
}()

// stepNamed is the step called name.
func stepNamed(name string) (Step, bool) {
	for _, st := range StepTable {
		if st.Name == name {
			return st, true
		}
	}
	return Step{}, false
}

// Run runs one step by name on a JSON input. Its error keeps its stable
// name (ErrorName), for Retry and Catch. The steps between Check and Flip
// leave their time in staging, for the run's record.
func Run(ctx context.Context, env runstate.Env, name string, in json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	out, err := RunStep(ctx, env, name, in)
	if st, ok := stepNamed(name); ok && st.Timed {
		runstate.RecordTiming(ctx, env, name, in, start, err)
	}
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

// RowCounter is a step output that counts the rows it moved (Import's,
// a shard's): the Lambda's metrics report them.
type RowCounter interface{ StepRows() uint64 }

// RunStep runs one step by name on a JSON input and returns its output
// (Run without the timing; the Lambda handler, pkg/function, logs its own).
func RunStep(ctx context.Context, env runstate.Env, name string, in json.RawMessage) (any, error) {
	st, ok := stepNamed(name)
	if !ok {
		return nil, fmt.Errorf("workflow: no step %q", name)
	}
	return st.run(ctx, env, in)
}
