package runstate

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

// ExecutionTimeoutEnv names the variable in which infra gives the Lambdas
// the migration state machine's TimeoutSeconds (executionTimeoutHours), from
// which Check derives the lock's lease (Env.LockLease).
const ExecutionTimeoutEnv = "ROCKLAKE_EXECUTION_TIMEOUT_SECONDS"

// EnvFromEnvironment builds a step Env from the process environment, as the
// Lambdas are configured: ROCKLAKE_STAGING (required),
// ROCKLAKE_EXPECTED_VERSION_PARAMETER (optional, the SSM parameter holding
// the expected format version), ROCKLAKE_EXECUTION_TIMEOUT_SECONDS
// (optional, ExecutionTimeoutEnv), ROCKLAKE_INPLACE_MEMORY_MB (the inplace
// function's memory, on the check function; else the Lambda's own,
// AWS_LAMBDA_FUNCTION_MEMORY_SIZE) and the standard AWS_* variables.
func EnvFromEnvironment(ctx context.Context) (Env, error) {
	staging := os.Getenv("ROCKLAKE_STAGING")
	if staging == "" {
		return Env{}, fmt.Errorf("runstate: ROCKLAKE_STAGING is not set (the staging s3:// prefix)")
	}
	store, err := blob.New(ctx)
	if err != nil {
		return Env{}, err
	}
	memory, err := memoryFromEnvironment()
	if err != nil {
		return Env{}, err
	}
	env := Env{Store: store, Staging: staging, CreatedBy: "rocklake-migrate lambda", InPlaceMemory: memory}
	if v := os.Getenv(ExecutionTimeoutEnv); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil || s <= 0 {
			return Env{}, fmt.Errorf("runstate: %s=%q: want a positive number of seconds", ExecutionTimeoutEnv, v)
		}
		env.ExecutionTimeout = time.Duration(s) * time.Second
	}
	if name := os.Getenv(ExpectedVersionParameterEnv); name != "" {
		if env.ExpectedVersion, err = SSMParameter(ctx, name); err != nil {
			return Env{}, err
		}
	}
	return env, nil
}
