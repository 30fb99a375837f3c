// Package function is the Lambda functions' runtime: Main, which each
// functions/<name>/main.go calls with its name and nothing else; the
// handler that runs the steps that function hosts (workflow.Functions) and
// gives a failed step's stable name as the Lambda's errorType, which the
// state machine's Retry and Catch match; the JSON logs whose every line
// names its invocation, and the steps' embedded metrics. The steps are
// pkg/workflow's; nothing there imports the Lambda runtime.
package function

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"

	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// Main runs the Lambda function name (check, export, import, inplace):
// JSON logs on stdout, the steps' Env from the environment
// (runstate.EnvFromEnvironment), and the handler. A configuration that
// does not load ends the process, said in the log.
func Main(name string) {
	log := NewLambdaLogger(os.Stdout)
	slog.SetDefault(log)
	env, err := runstate.EnvFromEnvironment(context.Background())
	if err != nil {
		log.Error("configuration", "function", name, "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(Handler(env, name, log))
}

// Handler is a Lambda handler for the steps of one function. A failed step
// returns an error whose Lambda errorType is the step error's stable name,
// which the state machine's Retry and Catch match. Logs are JSON, and every
// line of an invocation carries its request id, step, migration id, shard
// and pointer (LogHandler); each step done logs its rows and duration in
// CloudWatch's embedded metric format.
func Handler(env runstate.Env, function string, log *slog.Logger) func(context.Context, workflow.Request) (json.RawMessage, error) {
	allowed := map[string]bool{}
	for _, s := range workflow.Functions[function] {
		allowed[s] = true
	}
	log = slog.New(NewLogHandler(log.Handler()))
	return func(ctx context.Context, req workflow.Request) (json.RawMessage, error) {
		attrs := requestLogAttrs(ctx, req.Step, req.Input)
		hasID := slices.ContainsFunc(attrs, func(a slog.Attr) bool { return a.Key == "migration_id" })
		ctx = WithLogAttrs(ctx, attrs...)
		if !allowed[req.Step] {
			log.ErrorContext(ctx, "step not hosted here", "function", function)
			return nil, messages.InvokeResponse_Error{Type: runstate.NameStepFailed, Message: fmt.Sprintf("function %s does not run step %q", function, req.Step)}
		}
		start := time.Now()
		out, err := workflow.RunStep(ctx, env, req.Step, req.Input)
		if err != nil {
			name := runstate.ErrorName(err)
			log.ErrorContext(ctx, "step failed", "error_name", name, "error", err.Error(), "ms", time.Since(start).Milliseconds())
			return nil, messages.InvokeResponse_Error{Type: name, Message: err.Error()}
		}
		raw, err := json.Marshal(out)
		if err != nil {
			return nil, messages.InvokeResponse_Error{Type: runstate.NameStepFailed, Message: fmt.Sprintf("workflow: encode the output of %s: %v", req.Step, err)}
		}
		d := time.Since(start)
		var rows uint64
		if rc, ok := out.(workflow.RowCounter); ok {
			rows = rc.StepRows()
		}
		done := []any{"ms", d.Milliseconds(), "rows", rows}
		if m, ok := out.(runstate.Migration); ok && m.MigrationID != "" && !hasID {
			done = append(done, "migration_id", m.MigrationID) // Check chose it
		}
		log.InfoContext(ctx, "step done", done...)
		logMetrics(ctx, log, req.Step, rows, d, time.Now())
		return raw, nil
	}
}
