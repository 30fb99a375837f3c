package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"
)

// LambdaTarget routes one function to an endpoint.
type LambdaTarget struct {
	// Endpoint is the base URL of the Lambda API for this function, e.g.
	// http://127.0.0.1:9001. Empty: LambdaInvoker.Endpoint.
	Endpoint string
	// FunctionName is the name to invoke there. Empty: the resource as
	// given. The Lambda Runtime Interface Emulator serves only the name
	// "function" (POST /2015-03-31/functions/function/invocations).
	FunctionName string
	// Concurrency bounds the calls in flight to this target; further calls
	// queue (0: no bound). The emulator takes one call at a time.
	Concurrency int
}

// LambdaInvoker is a TaskRunner that calls the Lambda Invoke API
// (RequestResponse) with aws-sdk-go-v2. The resource is a function name or
// ARN. It maps failures to error names as Step Functions reports them:
//
//   - a function error (X-Amz-Function-Error set) becomes a TaskError named
//     by the payload's errorType ("Lambda.Unknown" without one), with the
//     payload itself as Cause, as the service does;
//   - a Lambda service error becomes "Lambda." + its code, e.g.
//     Lambda.ServiceException, Lambda.TooManyRequestsException,
//     Lambda.ResourceNotFoundException (Lambda.AWSLambdaException when it
//     has no code);
//   - a failure to get a response (connection refused, a bad response)
//     becomes Lambda.SdkClientException.
//
// The SDK's own retries are off: the definition's Retry is the only retry
// policy, as it is for the service's Lambda integration as the definition
// sees it. A LambdaInvoker must not be copied after first use.
type LambdaInvoker struct {
	// Config gives the region, credentials and HTTP client.
	Config aws.Config
	// Endpoint overrides the Lambda endpoint for every function without a
	// Targets entry. Empty: the SDK's endpoint resolution (real AWS).
	Endpoint string
	// Targets routes functions, keyed by the resource string or, for an
	// ARN, the function name in it.
	Targets map[string]LambdaTarget
	// FunctionErrorWithoutHeader also treats a response as a function error
	// when X-Amz-Function-Error is absent but the payload is an error
	// object ({"errorType", "errorMessage"} and at most a stack trace) or
	// empty. The Lambda Runtime Interface Emulator omits that header
	// (aws-lambda-runtime-interface-emulator issue #20) and answers a crashed
	// function with an empty body (issue #86). Off by default: on AWS the
	// header is authoritative.
	FunctionErrorWithoutHeader bool

	mu      sync.Mutex
	clients map[string]*lambda.Client
	sems    map[string]chan struct{}
}

func (l *LambdaInvoker) target(resource string) (key string, t LambdaTarget) {
	if t, ok := l.Targets[resource]; ok {
		return resource, t
	}
	if name := arnFunctionName(resource); name != "" {
		if t, ok := l.Targets[name]; ok {
			return name, t
		}
	}
	return "", LambdaTarget{}
}

// arnFunctionName returns NAME from arn:aws:lambda:REGION:ACCOUNT:function:NAME[:QUALIFIER].
func arnFunctionName(s string) string {
	parts := strings.Split(s, ":")
	if len(parts) >= 7 && parts[0] == "arn" && parts[2] == "lambda" && parts[5] == "function" {
		return parts[6]
	}
	return ""
}

func (l *LambdaInvoker) client(endpoint string) *lambda.Client {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c, ok := l.clients[endpoint]; ok {
		return c
	}
	if l.clients == nil {
		l.clients = map[string]*lambda.Client{}
	}
	c := lambda.NewFromConfig(l.Config, func(o *lambda.Options) {
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
		}
		o.Retryer = aws.NopRetryer{}
	})
	l.clients[endpoint] = c
	return c
}

func (l *LambdaInvoker) semaphore(key string, n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sems == nil {
		l.sems = map[string]chan struct{}{}
	}
	s, ok := l.sems[key]
	if !ok {
		s = make(chan struct{}, n)
		l.sems[key] = s
	}
	return s
}

// RunTask invokes the function named by resource with input as payload.
func (l *LambdaInvoker) RunTask(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error) {
	key, t := l.target(resource)
	endpoint := t.Endpoint
	if endpoint == "" {
		endpoint = l.Endpoint
	}
	name := t.FunctionName
	if name == "" {
		name = resource
	}
	if sem := l.semaphore(key, t.Concurrency); sem != nil {
		select {
		case sem <- struct{}{}:
			defer func() { <-sem }()
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out, err := l.client(endpoint).Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(name),
		InvocationType: types.InvocationTypeRequestResponse,
		Payload:        input,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, lambdaServiceError(resource, err)
	}
	if out.FunctionError != nil || l.FunctionErrorWithoutHeader && looksLikeFunctionError(out.Payload) {
		return nil, functionError(out.Payload)
	}
	return out.Payload, nil
}

func lambdaServiceError(resource string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) {
		code := api.ErrorCode()
		if code == "" {
			code = "AWSLambdaException"
		}
		return &TaskError{Name: "Lambda." + code, Cause: fmt.Sprintf("invoking %s: %s", resource, api.ErrorMessage()), Err: err}
	}
	return &TaskError{Name: "Lambda.SdkClientException", Cause: fmt.Sprintf("invoking %s: %v", resource, err), Err: err}
}

type lambdaErrorPayload struct {
	ErrorType    string `json:"errorType"`
	ErrorMessage string `json:"errorMessage"`
}

func functionError(payload []byte) error {
	var p lambdaErrorPayload
	_ = json.Unmarshal(payload, &p)
	name := p.ErrorType
	if name == "" {
		name = "Lambda.Unknown"
	}
	cause := string(payload)
	if strings.TrimSpace(cause) == "" {
		cause = "the function returned no payload (it may have crashed or run out of time)"
	}
	return &TaskError{Name: name, Cause: cause}
}

func looksLikeFunctionError(payload []byte) bool {
	if len(strings.TrimSpace(string(payload))) == 0 {
		return true
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(payload, &m) != nil {
		return false
	}
	var p lambdaErrorPayload
	if json.Unmarshal(payload, &p) != nil || p.ErrorType == "" {
		return false
	}
	if _, ok := m["errorMessage"]; !ok {
		return false
	}
	for k := range m {
		switch k {
		case "errorType", "errorMessage", "stackTrace", "trace":
		default:
			return false
		}
	}
	return true
}
