// Package asl is rocklake-migrate's own interpreter for the Amazon States
// Language, the language of AWS Step Functions workflow definitions, so that
// the very definition deployed to Step Functions (statemachine/) runs
// locally, in the CLI and in tests. It owns exactly two things:
//
//   - Load: parsing and validating a definition (JSONPath query language
//     only) against the subset of the language the project uses. Anything
//     outside that subset, and every structural mistake the service itself
//     would refuse (a Next naming no state, an unreachable state, a state
//     with neither Next nor End, an invalid path or intrinsic function, a
//     misplaced States.ALL), is reported at load, each problem at its JSON
//     path in the definition, e.g.
//     $.States.Shards.ItemProcessor.States.ExportShard.Foo: unsupported field "Foo".
//   - Run: executing a loaded Machine with the semantics AWS documents for
//     input and output processing (InputPath, Parameters, task,
//     ResultSelector, ResultPath, OutputPath), error handling (Retry with
//     backoff, MaxDelaySeconds and jitter; Catch; the States.* error names),
//     the context object, Map iterations with bounded concurrency, state and
//     execution timeouts, and the 256 KiB payload quota between states.
//
// The subset: top-level Comment, StartAt, States, TimeoutSeconds and
// QueryLanguage; states Task, Choice, Map, Pass, Wait, Succeed and Fail
// (Parallel is rejected); paths $, $.a.b, $.a[0], $['a'] and $$ for the
// context object; the intrinsic functions States.Format, StringToJson,
// JsonToString, Array, ArrayRange, ArrayLength, MathAdd and UUID.
//
// Task states call a TaskRunner. Two are provided: Funcs (Go functions in
// this process, looked up by resource string, with Substitute for
// ${Name} placeholders) and LambdaInvoker (the Lambda Invoke API through
// aws-sdk-go-v2, with per-function endpoint overrides for the local Lambda
// emulators). The resource "arn:aws:states:::lambda:invoke" (the optimized
// Lambda integration) is unwrapped by the interpreter: the runner is called
// with the FunctionName and Payload parameters, and the result is wrapped as
// the service wraps it ({"Payload": ..., "StatusCode": 200, ...}).
//
// The callback pattern (a Resource ending in .waitForTaskToken, at the top
// level only) calls the runner with the base resource and $$.Task.Token in
// the context object, then suspends the execution instead of waiting in
// memory: Run returns a *Suspended (JSON, to be stored), and Resume, in
// this process or a later one, completes the token as SendTaskSuccess or
// SendTaskFailure would, applying the task's TimeoutSeconds and
// HeartbeatSeconds as of the completion, and runs the rest (callback.go).
//
// The package knows nothing about catalogs or migrations; the workflow's
// steps are registered by the caller.
package asl
