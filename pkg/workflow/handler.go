package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Request is what the state machine sends a function: the step to run and
// its input. One function hosts several steps (DESIGN 3: four Lambdas);
// the Lambda handler (pkg/function) and the local run (LocalTasks) decode
// it alike.
type Request struct {
	Step  string          `json:"step"`
	Input json.RawMessage `json:"input"`
}

type stepFunc func(ctx context.Context, env Env, in json.RawMessage) (any, error)

func step[I, O any](f func(context.Context, Env, I) (O, error)) stepFunc {
	return func(ctx context.Context, env Env, raw json.RawMessage) (any, error) {
		var in I
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, fmt.Errorf("workflow: decode input: %w", err)
		}
		return f(ctx, env, in)
	}
}

var steps = map[string]stepFunc{
	"Check":                step(Check),
	"Freeze":               step(Freeze),
	"Snapshot":             step(Snapshot),
	"CatchUp":              step(CatchUp),
	"VerifyCatchUp":        step(VerifyCatchUp),
	"Fence":                step(Fence),
	"ExportShard":          step(ExportShard),
	"TransformShard":       step(TransformShard),
	"ExportTransformShard": step(ExportTransformShard),
	"Import":               step(Import),
	"Finalize":             step(Finalize),
	"Verify":               step(Verify),
	"Flip":                 step(Flip),
	"Gate":                 step(Gate),
	"Abort":                step(Abort),
	"Rollback":             step(Rollback),
	"Drift":                step(Drift),
	"InPlace":              step(MigrateInPlace),
}

// Functions maps each Lambda function to the steps it hosts.
var Functions = map[string][]string{
	"check":  {"Check", "Gate", "Flip", "Abort", "Rollback", "Drift"},
	"export": {"Freeze", "Snapshot", "Fence", "ExportTransformShard", "ExportShard", "TransformShard"},
	// CatchUp writes the target, as Import does.
	"import": {"Import", "CatchUp", "VerifyCatchUp", "Finalize", "Verify"},
	// Strategy A: the catalog's writer, and the pointer's (its flip), in
	// one step.
	"inplace": {"InPlace"},
}

// Steps lists every step's name.
func Steps() []string {
	names := make([]string, 0, len(steps))
	for n := range steps {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Run runs one step by name on a JSON input. Its error keeps its stable
// name (ErrorName), for Retry and Catch. The steps between Check and Flip
// leave their time in staging, for the run's record.
func Run(ctx context.Context, env Env, name string, in json.RawMessage) (json.RawMessage, error) {
	start := time.Now()
	out, err := run(ctx, env, name, in)
	recordTiming(ctx, env, name, in, start, err)
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
func RunStep(ctx context.Context, env Env, name string, in json.RawMessage) (any, error) {
	return run(ctx, env, name, in)
}

func run(ctx context.Context, env Env, name string, in json.RawMessage) (any, error) {
	f, ok := steps[name]
	if !ok {
		return nil, fmt.Errorf("workflow: no step %q", name)
	}
	return f(ctx, env, in)
}
