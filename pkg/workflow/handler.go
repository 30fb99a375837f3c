package workflow

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/lambda/messages"
)

// Request is what the state machine sends a function: the step to run and
// its input. One function hosts several steps (DESIGN 3: four Lambdas).
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

func run(ctx context.Context, env Env, name string, in json.RawMessage) (any, error) {
	f, ok := steps[name]
	if !ok {
		return nil, fmt.Errorf("workflow: no step %q", name)
	}
	return f(ctx, env, in)
}

// Handler is a Lambda handler for the steps of one function. A failed step
// returns an error whose Lambda errorType is the step error's stable name,
// which the state machine's Retry and Catch match. Logs are JSON, and every
// line of an invocation carries its request id, step, migration id, shard
// and pointer (LogHandler); each step done logs its rows and duration in
// CloudWatch's embedded metric format.
func Handler(env Env, function string, log *slog.Logger) func(context.Context, Request) (json.RawMessage, error) {
	allowed := map[string]bool{}
	for _, s := range Functions[function] {
		allowed[s] = true
	}
	log = slog.New(NewLogHandler(log.Handler()))
	return func(ctx context.Context, req Request) (json.RawMessage, error) {
		attrs := requestLogAttrs(ctx, req.Step, req.Input)
		hasID := slices.ContainsFunc(attrs, func(a slog.Attr) bool { return a.Key == "migration_id" })
		ctx = WithLogAttrs(ctx, attrs...)
		if !allowed[req.Step] {
			log.ErrorContext(ctx, "step not hosted here", "function", function)
			return nil, messages.InvokeResponse_Error{Type: NameStepFailed, Message: fmt.Sprintf("function %s does not run step %q", function, req.Step)}
		}
		start := time.Now()
		out, err := run(ctx, env, req.Step, req.Input)
		if err != nil {
			name := ErrorName(err)
			log.ErrorContext(ctx, "step failed", "error_name", name, "error", err.Error(), "ms", time.Since(start).Milliseconds())
			return nil, messages.InvokeResponse_Error{Type: name, Message: err.Error()}
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, messages.InvokeResponse_Error{Type: NameStepFailed, Message: fmt.Sprintf("workflow: encode the output of %s: %v", req.Step, err)}
		}
		d := time.Since(start)
		var rows uint64
		if rc, ok := out.(rowCounter); ok {
			rows = rc.stepRows()
		}
		done := []any{"ms", d.Milliseconds(), "rows", rows}
		if m, ok := out.(Migration); ok && m.MigrationID != "" && !hasID {
			done = append(done, "migration_id", m.MigrationID) // Check chose it
		}
		log.InfoContext(ctx, "step done", done...)
		logMetrics(ctx, log, req.Step, rows, d, time.Now())
		return raw, nil
	}
}
