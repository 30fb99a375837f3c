// Package asl is rocklake-migrate's own interpreter for the Amazon States
// Language, the language of AWS Step Functions workflow definitions. It owns
// exactly two things:
//
//   - Load: parsing and validating a definition (JSONPath query language
//     only) against the subset of the language this project uses. Anything
//     outside that subset, and every structural mistake the service itself
//     would refuse (a Next naming no state, an unreachable state, a state with
//     neither Next nor End, an invalid path or intrinsic function), is
//     reported at load, each problem named by its JSON path in the
//     definition, e.g.
//     $.States.Shards.ItemProcessor.States.ExportShard.Foo: unsupported field "Foo".
//   - Run: executing a loaded Machine with the semantics AWS documents for
//     input and output processing (InputPath, Parameters, ResultSelector,
//     ResultPath, OutputPath), error handling (Retry with backoff, jitter and
//     MaxDelaySeconds, Catch, the States.* error names), the context object,
//     Map iterations with bounded concurrency, state and execution timeouts,
//     and the 256 KiB payload quota between states.
//
// Task states call a TaskRunner. Two are provided: Funcs (Go functions in
// this process, looked up by resource string) and LambdaInvoker (the Lambda
// Invoke API through aws-sdk-go-v2, with per-function endpoint overrides, for
// the local Lambda emulator stack). The resource
// "arn:aws:states:::lambda:invoke" (the optimized Lambda integration) is
// unwrapped by the interpreter: the runner is called with the FunctionName
// and Payload parameters, and the result is wrapped as the service wraps it
// ({"Payload": ..., "StatusCode": 200, ...}).
//
// The package knows nothing about catalogs or migrations; the workflow's
// steps are registered by the caller.
package asl
