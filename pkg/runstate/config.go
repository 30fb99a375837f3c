package runstate

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
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

// ExpectedVersionParameterEnv names the environment variable that holds the
// name of the SSM parameter in which the release pipeline records the
// catalog format version the deployed RockLake release expects. The
// deployed stack sets it on the check function; Check and Drift read the
// parameter at run time when their input names no version.
const ExpectedVersionParameterEnv = "ROCKLAKE_EXPECTED_VERSION_PARAMETER"

// ResolveVersion is the version a step works towards: the input's when it
// names one, else the expected-version parameter's value at this moment.
func ResolveVersion(ctx context.Context, env Env, given uint64) (format.Version, error) {
	if given != 0 {
		return format.Version(given), nil
	}
	if env.ExpectedVersion == nil {
		return 0, fmt.Errorf("%w: the input names no target version and no expected-version parameter is configured (%s)", ErrNoTargetVersion, ExpectedVersionParameterEnv)
	}
	s, err := env.ExpectedVersion(ctx)
	if err != nil {
		return 0, fmt.Errorf("runstate: read the expected version: %w", err)
	}
	return ParseExpectedVersion(s)
}

// ParseExpectedVersion reads the parameter's value: "2" or "v2", spaces
// around it ignored. Whether this binary supports the version is the
// caller's check (Check refuses one it does not with FormatVersionMismatch).
func ParseExpectedVersion(s string) (format.Version, error) {
	t := strings.TrimPrefix(strings.TrimSpace(s), "v")
	n, err := strconv.ParseUint(t, 10, 32)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("%w: %q is not a catalog format version (want, for example, 2 or v2)", ErrBadExpectedVersion, s)
	}
	return format.Version(n), nil
}

// SSMParameter reads the SSM parameter name on each call, so that a value
// the release pipeline set after the function started counts. The process's
// one AWS configuration (pkg/awsconfig: credentials, limits) makes the
// client (AWS_ENDPOINT_URL_SSM for a local emulator).
func SSMParameter(ctx context.Context, name string) (func(context.Context) (string, error), error) {
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("runstate: load AWS configuration for SSM: %w", err)
	}
	client := ssm.NewFromConfig(cfg.AWS)
	return func(ctx context.Context) (string, error) {
		out, err := client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
		if err != nil {
			return "", fmt.Errorf("runstate: get SSM parameter %s: %w", name, err)
		}
		if out.Parameter == nil || out.Parameter.Value == nil {
			return "", fmt.Errorf("runstate: SSM parameter %s has no value", name)
		}
		return *out.Parameter.Value, nil
	}, nil
}

// Where the InPlace step's memory is read from.
const (
	// InPlaceMemoryEnv is set by infra on the check function: the inplace
	// function's memory in MB, which Check and Plan hold the limit to.
	InPlaceMemoryEnv = "ROCKLAKE_INPLACE_MEMORY_MB"
	// lambdaMemoryEnv is a Lambda's own memory in MB (the inplace
	// function's, where the InPlace step runs).
	lambdaMemoryEnv = "AWS_LAMBDA_FUNCTION_MEMORY_SIZE"
)

// memoryFromEnvironment is the memory of the function that runs InPlace,
// in bytes: InPlaceMemoryEnv, else this Lambda's own; 0 outside a Lambda.
func memoryFromEnvironment() (int64, error) {
	for _, name := range []string{InPlaceMemoryEnv, lambdaMemoryEnv} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		mb, err := strconv.ParseInt(v, 10, 64)
		if err != nil || mb <= 0 {
			return 0, fmt.Errorf("runstate: %s=%q is not a memory size in MB", name, v)
		}
		return mb << 20, nil
	}
	return 0, nil
}

// InPlaceMemoryHolds refuses (ErrInPlaceLimitTooLarge) a limit maxBytes (0:
// the default) whose peak does not fit the memory the InPlace step runs in:
// env.InPlaceMemory, else this machine's (a local run's).
func InPlaceMemoryHolds(env Env, maxBytes int64) error {
	if maxBytes <= 0 {
		maxBytes = inplace.DefaultMaxBytes
	}
	memory, where := env.InPlaceMemory, "the inplace function's memory"
	if memory <= 0 {
		var err error
		if memory, err = machineMemory(); err != nil {
			return fmt.Errorf("%w: the memory this process may use cannot be read (%w), so the in-place limit of %d bytes cannot be checked against it; nothing was touched", ErrInPlaceLimitTooLarge, err, maxBytes)
		}
		where = "this machine's memory"
	}
	if fits := inplace.MaxBytesFor(memory); maxBytes > fits {
		return fmt.Errorf("%w: an in-place limit of %d bytes needs up to %d MiB (%d MiB + %d bytes per byte of the transformed catalog, the undo included), more than %s (%d MiB, a tenth kept spare) holds: at most %d bytes here; nothing was touched: lower in_place_max_bytes or use Strategy B",
			ErrInPlaceLimitTooLarge, maxBytes, inplace.PeakBytes(maxBytes)>>20, inplace.PeakBaseBytes>>20, inplace.PeakPerByte, where, memory>>20, fits)
	}
	return nil
}

// machineMemory is what this process may use: its cgroup's limit (v2), else
// the machine's RAM.
func machineMemory() (int64, error) {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if v := strings.TrimSpace(string(b)); v != "max" {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				return n, nil
			}
		}
	}
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 3 && f[0] == "MemTotal:" && f[2] == "kB" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: %w", err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/meminfo has no MemTotal")
}
