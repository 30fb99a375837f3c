// Command inplace is the in-place Lambda of the migration workflow; it hosts the steps
// workflow.Functions["inplace"] lists. Wiring only: the steps live in pkg/workflow.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

func main() {
	log := workflow.NewLambdaLogger(os.Stdout)
	slog.SetDefault(log)
	env, err := workflow.EnvFromEnvironment(context.Background())
	if err != nil {
		log.Error("configuration", "error", err.Error())
		os.Exit(1)
	}
	lambda.Start(workflow.Handler(env, "inplace", log))
}
