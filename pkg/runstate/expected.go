package runstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

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
