package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
// is Timed, and what runs it. A timed step leaves its time in staging for
// the record's time per state: the steps between Check and Abort, which
// write the record themselves; Flip finishes the record itself when it
// succeeds, and its timing is kept for the Abort after a Flip that failed,
// which then names Flip as the state that failed.
type Step struct {
	Name     string
	Function string
	Timed    bool
	run      stepFunc
}

// StepTable is every step, said once: Run and the Lambdas' handler
// (pkg/function) dispatch by it, Functions is made from it, the record's
// times follow it; a test holds it against the definitions
// (statemachine/*.asl.json).
var StepTable = []Step{
	{statemachine.StepCheck, "check", false, step(Check)},
	{statemachine.StepGate, "check", false, step(Gate)},
	{statemachine.StepFlip, "check", true, step(Flip)},
	{statemachine.StepAbort, "check", false, step(Abort)},
	{statemachine.StepRollback, "check", false, step(Rollback)},
	{statemachine.StepDrift, "check", false, step(Drift)},
	{statemachine.StepFreeze, "export", true, step(Freeze)},
	{statemachine.StepSnapshot, "export", true, step(Snapshot)},
	{statemachine.StepFence, "export", true, step(Fence)},
	{statemachine.StepExportTransformShard, "export", true, step(ExportTransformShard)},
	{statemachine.StepExportShard, "export", true, step(ExportShard)},
	{statemachine.StepTransformShard, "export", true, step(TransformShard)},
	// CatchUp writes the target, as Import does.
	{statemachine.StepImport, "import", true, step(Import)},
	{statemachine.StepCatchUp, "import", true, step(CatchUp)},
	{statemachine.StepVerifyCatchUp, "import", true, step(VerifyCatchUp)},
	{statemachine.StepFinalize, "import", true, step(Finalize)},
	{statemachine.StepVerify, "import", true, step(Verify)},
	// Strategy A: the catalog's writer, and the pointer's (its flip), in
	// one step.
	{statemachine.StepInPlace, "inplace", false, step(MigrateInPlace)},
	// A fleet run's: the pointers, and how each went (pkg/fleet).
	{statemachine.StepFleetList, "check", false, step(FleetList)},
	{statemachine.StepFleetReport, "check", false, step(FleetReport)},
	// Each fleet item's: may it start, and counting a failure.
	{statemachine.StepFleetGo, "check", false, step(FleetGo)},
	{statemachine.StepFleetFailed, "check", false, step(FleetFailed)},
	// The scheduled drift check of a fleet: every pointer, one alert.
	{statemachine.StepFleetDrift, "check", false, step(FleetDrift)},
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
