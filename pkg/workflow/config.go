package workflow

import (
	"context"
	"fmt"
	"os"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

// EnvFromEnvironment builds a step Env from the process environment, as the
// Lambdas are configured: ROCKLAKE_STAGING (required), and the standard AWS_*
// variables for S3.
func EnvFromEnvironment(ctx context.Context) (Env, error) {
	staging := os.Getenv("ROCKLAKE_STAGING")
	if staging == "" {
		return Env{}, fmt.Errorf("workflow: ROCKLAKE_STAGING is not set (the staging s3:// prefix)")
	}
	store, err := blob.New(ctx)
	if err != nil {
		return Env{}, err
	}
	return Env{Store: store, Staging: staging, CreatedBy: "rocklake-migrate lambda"}, nil
}
