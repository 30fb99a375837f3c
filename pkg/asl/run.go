package asl

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
)

// TaskRunner runs the work of a Task state. resource is the state's
// Resource (or, for arn:aws:states:::lambda:invoke, its FunctionName) and
// input the effective task input as JSON. The context is canceled when the
// state's TimeoutSeconds passes, the execution times out, a sibling Map
// iteration fails, or the caller of Run cancels; a runner should return
// promptly then (one that does not is abandoned, as the service abandons a
// timed-out Lambda). An error with an ErrorName (errname.Of) is matched by
// its name in Retry and Catch; any other error is States.TaskFailed.
type TaskRunner interface {
	RunTask(ctx context.Context, resource string, input json.RawMessage) (json.RawMessage, error)
}

// Observer is told about state transitions, for live progress. Its methods
// are called synchronously from the goroutine running the state, and
// concurrently from Map iterations, so an implementation must be safe for
// concurrent use and should return quickly.
type Observer interface {
	StateEntered(StateEvent)
	StateExited(StateEvent)
}

// RetryObserver is an Observer that is also told about retries.
type RetryObserver interface {
	Observer
	StateRetrying(RetryEvent)
}

// StateEvent describes a state entered or exited.
type StateEvent struct {
	Name     string // state name
	Type     string // "Task", "Map", ...
	MapIndex []int  // indexes of the enclosing Map iterations, outermost first; nil at the top level
	Time     time.Time

	Input json.RawMessage // entered: the raw state input

	// Exited only:
	Duration time.Duration   // since entered, retries included
	Output   json.RawMessage // the state output, nil on failure
	Next     string          // the next state ("" at an end or on failure)
	Error    string          // the error name on failure (a Fail state, an unhandled error)
	Cause    string          //
}

// RetryEvent describes a retry about to be made.
type RetryEvent struct {
	Name     string
	MapIndex []int
	Time     time.Time
	Error    string        // the error being retried
	Cause    string        //
	Attempt  int           // 1 for the first retry of the state
	Delay    time.Duration // the wait before it
}

// ObserverFuncs adapts functions to a RetryObserver; nil fields are skipped.
type ObserverFuncs struct {
	Entered  func(StateEvent)
	Exited   func(StateEvent)
	Retrying func(RetryEvent)
}

func (o ObserverFuncs) StateEntered(e StateEvent) {
	if o.Entered != nil {
		o.Entered(e)
	}
}

func (o ObserverFuncs) StateExited(e StateEvent) {
	if o.Exited != nil {
		o.Exited(e)
	}
}

func (o ObserverFuncs) StateRetrying(e RetryEvent) {
	if o.Retrying != nil {
		o.Retrying(e)
	}
}

// Options configure a run. The zero value runs with real time and no task
// runner (a Task state then fails with States.Runtime).
type Options struct {
	Tasks    TaskRunner
	Observer Observer

	// Sleep waits d (Retry intervals and Wait states), returning early with
	// ctx's error. Default: a timer. Tests inject one that records and
	// returns at once.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for the context object and Wait timestamps.
	// Default: time.Now.
	Now func() time.Time
	// Rand returns a number in [0, 1) for JitterStrategy "FULL".
	// Default: math/rand/v2.
	Rand func() float64

	// StateMachineArn is $$.StateMachine.Id. Default:
	// arn:aws:states:us-east-1:000000000000:stateMachine:local.
	StateMachineArn string
	// ExecutionName is $$.Execution.Name; Execution.Id is derived from it
	// and StateMachineArn. Default: a random UUID.
	ExecutionName string

	// MaxConcurrency bounds the iterations of each Map state run at once
	// (a Map's own MaxConcurrency, when smaller, wins; 0 there means this
	// bound). Default: 40, the inline Map limit of the service.
	MaxConcurrency int
	// MaxTransitions bounds the states entered by one execution, a guard
	// against a loop that never ends (the service fails an execution whose
	// history passes 25,000 events). Default: 25,000; a DISTRIBUTED Map
	// item counts as its own execution.
	MaxTransitions int
}

const (
	// PayloadLimit is the service's quota on state input and output and on
	// task results: 256 KiB as UTF-8 JSON.
	PayloadLimit = 256 * 1024

	defaultMaxConcurrency = 40
	defaultMaxTransitions = 25000
	defaultStateMachine   = "arn:aws:states:us-east-1:000000000000:stateMachine:local"
)

func sleepTimer(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type execution struct {
	m        *Machine
	opts     Options
	smArn    string
	smName   string
	execRoot map[string]any // the top-level $$.Execution
}

// frame is what a scope runs in: its execution object, the Map index path
// and the transition budget of its execution.
type frame struct {
	exec        map[string]any
	mapIndex    []int
	transitions *atomic.Int64
}

// Run executes m on input (empty input is {}) and returns the execution's
// output. A failed execution returns an *ExecutionError; a canceled ctx
// returns an error wrapping ctx.Err(); an execution waiting at a callback
// task (.waitForTaskToken) returns a *Suspended, which Resume continues;
// other errors (invalid input JSON) are returned as they are.
func Run(ctx context.Context, m *Machine, input json.RawMessage, opts Options) (json.RawMessage, error) {
	if m == nil {
		return nil, errors.New("asl: Run: nil Machine")
	}
	opts.defaults()
	if opts.ExecutionName == "" {
		opts.ExecutionName = newUUID()
	}
	if len(strings.TrimSpace(string(input))) == 0 {
		input = json.RawMessage("{}")
	}
	in, err := decodeValue(input)
	if err != nil {
		return nil, fmt.Errorf("asl: execution input is not valid JSON: %w", err)
	}
	if len(input) > PayloadLimit {
		if b, _ := encodeValue(in); len(b) > PayloadLimit {
			return nil, &ExecutionError{Name: ErrDataLimitExceeded, Cause: fmt.Sprintf("the execution input has %d bytes, over the %d-byte quota", len(b), PayloadLimit)}
		}
	}
	execArn := opts.StateMachineArn + ":" + opts.ExecutionName
	if strings.Contains(opts.StateMachineArn, ":stateMachine:") {
		execArn = strings.Replace(opts.StateMachineArn, ":stateMachine:", ":execution:", 1) + ":" + opts.ExecutionName
	}
	x := newExecution(m, opts, map[string]any{
		"Id":           execArn,
		"Name":         opts.ExecutionName,
		"Input":        in,
		"StartTime":    isoTime(opts.Now()),
		"RedriveCount": json.Number("0"),
	})
	return x.run(ctx, m.timeout, m.root.startAt, in, nil)
}

func (o *Options) defaults() {
	if o.Sleep == nil {
		o.Sleep = sleepTimer
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rand == nil {
		o.Rand = rand.Float64
	}
	if o.MaxConcurrency <= 0 {
		o.MaxConcurrency = defaultMaxConcurrency
	}
	if o.MaxTransitions <= 0 {
		o.MaxTransitions = defaultMaxTransitions
	}
	if o.StateMachineArn == "" {
		o.StateMachineArn = defaultStateMachine
	}
}

func newExecution(m *Machine, opts Options, execRoot map[string]any) *execution {
	x := &execution{m: m, opts: opts, smArn: opts.StateMachineArn, execRoot: execRoot}
	x.smName = opts.StateMachineArn[strings.LastIndexByte(opts.StateMachineArn, ':')+1:]
	return x
}

// run runs the top level from state name, with what is left of the
// execution's TimeoutSeconds, and maps how it ended to Run's results.
func (x *execution) run(ctx context.Context, left time.Duration, name string, in any, res *resumption) (json.RawMessage, error) {
	runCtx, cancel := ctx, context.CancelFunc(func() {})
	if x.m.timeout > 0 {
		runCtx, cancel = context.WithTimeout(ctx, left)
	}
	defer cancel()
	var budget atomic.Int64
	out, err := x.runScope(runCtx, x.m.root, name, in, frame{exec: x.execRoot, transitions: &budget}, res)
	if err != nil {
		var sig *suspendSignal
		if errors.As(err, &sig) {
			return nil, x.suspended(sig)
		}
		if isCanceled(err) {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("asl: execution stopped: %w", context.Cause(ctx))
			}
			if runCtx.Err() != nil {
				return nil, &ExecutionError{Name: ErrTimeout, Cause: fmt.Sprintf("the execution timed out after %v (TimeoutSeconds)", x.m.timeout)}
			}
		}
		var se *stateError
		if errors.As(err, &se) {
			return nil, &ExecutionError{Name: se.name, Cause: se.cause, State: se.state}
		}
		return nil, err
	}
	b, err := encodeValue(out)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func isoTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// runScope runs the states of sc from name until an end. res, if set,
// completes the callback task name suspended at.
func (x *execution) runScope(ctx context.Context, sc *scope, name string, input any, fr frame, res *resumption) (any, error) {
	for {
		if err := ctx.Err(); err != nil {
			return nil, &canceledError{err}
		}
		if n := fr.transitions.Add(1); n > int64(x.opts.MaxTransitions) {
			return nil, &stateError{name: ErrRuntime, state: name,
				cause: fmt.Sprintf("the execution entered more than %d states (Options.MaxTransitions); is a loop not ending?", x.opts.MaxTransitions)}
		}
		st := sc.states[name]
		out, next, err := x.runState(ctx, st, input, fr, res)
		res = nil
		if err != nil {
			return nil, err
		}
		if next == "" {
			return out, nil
		}
		input, name = out, next
	}
}

// stateRun is one entry into a state.
type stateRun struct {
	x       *execution
	st      *state
	fr      frame
	entered time.Time
	retries int
	raw     any    // the raw state input
	token   string // $$.Task.Token of a callback task's current attempt
	res     *resumption
}

// contextObject builds $$ for the state; mapItem is set in ItemSelector.
func (r *stateRun) contextObject(mapItem map[string]any) any {
	c := map[string]any{
		"Execution": r.fr.exec,
		"State": map[string]any{
			"Name":        r.st.name,
			"EnteredTime": isoTime(r.entered),
			"RetryCount":  intNumber(int64(r.retries)),
		},
		"StateMachine": map[string]any{"Id": r.x.smArn, "Name": r.x.smName},
	}
	if r.token != "" {
		c["Task"] = map[string]any{"Token": r.token}
	}
	if mapItem != nil {
		c["Map"] = map[string]any{"Item": mapItem}
	}
	return c
}

func (r *stateRun) env(input any) *env {
	var once sync.Once
	var c any
	return &env{input: input, ctx: func() any {
		once.Do(func() { c = r.contextObject(nil) })
		return c
	}}
}

func (x *execution) runState(ctx context.Context, st *state, raw any, fr frame, res *resumption) (out any, next string, err error) {
	r := &stateRun{x: x, st: st, fr: fr, entered: x.opts.Now(), raw: raw, res: res}
	obs := x.opts.Observer
	if res != nil {
		// Entered before the execution suspended, and told then.
		r.entered, r.retries = res.entered, res.retries
	} else if obs != nil {
		obs.StateEntered(StateEvent{Name: st.name, Type: st.typ, MapIndex: fr.mapIndex, Time: r.entered, Input: rawJSON(raw)})
	}
	switch st.typ {
	case "Task", "Map":
		out, next, err = r.runRetrying(ctx)
	case "Pass":
		out, err = r.pass()
		next = st.next
	case "Choice":
		out, next, err = r.choice()
	case "Wait":
		out, err = r.wait(ctx)
		next = st.next
	case "Succeed":
		out, err = r.succeed()
	case "Fail":
		err = r.fail()
	default:
		err = newErr(ErrRuntime, "unsupported state type %q", st.typ)
	}
	if err == nil {
		if serr := checkSize(out, "the output of state "+st.name); serr != nil {
			err = serr
		}
	}
	var se *stateError
	if errors.As(err, &se) && se.state == "" {
		se.state = st.name
	}
	var sig *suspendSignal
	if errors.As(err, &sig) {
		// Not exited: it waits for its token, and exits when resumed.
		return nil, "", err
	}
	if obs != nil {
		now := x.opts.Now()
		ev := StateEvent{Name: st.name, Type: st.typ, MapIndex: fr.mapIndex, Time: now, Duration: now.Sub(r.entered)}
		switch {
		case err == nil:
			ev.Output, ev.Next = rawJSON(out), next
		case se != nil:
			ev.Error, ev.Cause = se.name, se.cause
		default:
			ev.Error, ev.Cause = "canceled", err.Error()
		}
		obs.StateExited(ev)
	}
	if err != nil {
		return nil, "", err
	}
	return out, next, nil
}

func rawJSON(v any) json.RawMessage {
	b, err := encodeValue(v)
	if err != nil {
		return nil
	}
	return b
}

// checkSize enforces the payload quota.
func checkSize(v any, what string) error {
	b, err := encodeValue(v)
	if err != nil {
		return newErr(ErrRuntime, "%s cannot be encoded as JSON: %v", what, err)
	}
	if len(b) > PayloadLimit {
		return newErr(ErrDataLimitExceeded, "%s has %d bytes, over the %d-byte payload quota", what, len(b), PayloadLimit)
	}
	return nil
}

func (r *stateRun) inputPath() (any, error) {
	return applyPath(r.st.inputPath, r.raw, r.env(r.raw), "InputPath")
}

func (r *stateRun) outputPath(v any) (any, error) {
	return applyPath(r.st.outputPath, v, r.env(v), "OutputPath")
}

// applyPath applies an InputPath or OutputPath: absent selects all, null
// gives {}.
func applyPath(p optPath, v any, e *env, field string) (any, error) {
	switch {
	case !p.set:
		return v, nil
	case p.null:
		return map[string]any{}, nil
	}
	out, ok := e.lookup(p.p)
	if !ok {
		return nil, newErr(ErrRuntime, "invalid path '%s' in %s: no value at that path in %s", p.p, field, excerpt(v, 1024))
	}
	return out, nil
}

// resultPath places result into raw: absent replaces, null discards.
func resultPath(p optPath, raw, result any) (any, error) {
	switch {
	case !p.set:
		return result, nil
	case p.null:
		return raw, nil
	}
	out, err := setPath(raw, p.p.steps, result)
	if err != nil {
		return nil, newErr(ErrResultPathMatchFailure, "unable to apply ResultPath '%s' to the input %s: %v", p.p, excerpt(raw, 1024), err)
	}
	return out, nil
}

func (r *stateRun) pass() (any, error) {
	in, err := r.inputPath()
	if err != nil {
		return nil, err
	}
	if r.st.parameters != nil {
		if in, err = r.st.parameters.eval(r.env(in), "Parameters"); err != nil {
			return nil, err
		}
	}
	result := in
	if r.st.hasResult {
		result = r.st.result
	}
	out, err := resultPath(r.st.resultPath, r.raw, result)
	if err != nil {
		return nil, err
	}
	return r.outputPath(out)
}

func (r *stateRun) succeed() (any, error) {
	in, err := r.inputPath()
	if err != nil {
		return nil, err
	}
	return r.outputPath(in)
}

func (r *stateRun) choice() (any, string, error) {
	in, err := r.inputPath()
	if err != nil {
		return nil, "", err
	}
	e := r.env(in)
	next := ""
	for _, rule := range r.st.choices {
		ok, err := rule.eval(e)
		if err != nil {
			return nil, "", err
		}
		if ok {
			next = rule.next
			break
		}
	}
	if next == "" {
		if r.st.def == "" {
			return nil, "", newErr(ErrNoChoiceMatched, "no choice rule matched the input %s and there is no Default", excerpt(in, 1024))
		}
		next = r.st.def
	}
	out, err := r.outputPath(in)
	return out, next, err
}

func (r *stateRun) fail() error {
	e := r.env(r.raw)
	name, cause := r.st.failError, r.st.failCause
	for _, f := range []struct {
		t     *tmpl
		dst   *string
		field string
	}{{r.st.failErrorDyn, &name, "ErrorPath"}, {r.st.failCauseDyn, &cause, "CausePath"}} {
		if f.t == nil {
			continue
		}
		var v any
		var err error
		if f.t.path != nil {
			var ok bool
			if v, ok = e.lookup(f.t.path); !ok {
				return newErr(ErrRuntime, "invalid path '%s' in %s: no value at that path in %s", f.t.path, f.field, excerpt(r.raw, 1024))
			}
		} else if v, err = f.t.call.eval(e); err != nil {
			return err
		}
		s, ok := v.(string)
		if !ok {
			return newErr(ErrRuntime, "%s must give a string, not %s", f.field, typeName(v))
		}
		*f.dst = s
	}
	return &stateError{name: name, cause: cause, state: r.st.name}
}

func (r *stateRun) wait(ctx context.Context) (any, error) {
	in, err := r.inputPath()
	if err != nil {
		return nil, err
	}
	st := r.st
	var d time.Duration
	e := r.env(in)
	switch {
	case st.waitSecondsPath != nil:
		v, ok := e.lookup(st.waitSecondsPath)
		n, isNum := v.(json.Number)
		secs, isInt := numInt(n)
		if !ok || !isNum || !isInt || secs < 0 || secs > maxIntField {
			return nil, newErr(ErrRuntime, "SecondsPath '%s' must name a non-negative integer in %s", st.waitSecondsPath, excerpt(in, 1024))
		}
		d = time.Duration(secs) * time.Second
	case st.waitTimestampPath != nil:
		v, ok := e.lookup(st.waitTimestampPath)
		s, isStr := v.(string)
		t, perr := time.Parse(time.RFC3339Nano, s)
		if !ok || !isStr || perr != nil {
			return nil, newErr(ErrRuntime, "TimestampPath '%s' must name an RFC 3339 timestamp in %s", st.waitTimestampPath, excerpt(in, 1024))
		}
		d = t.Sub(r.x.opts.Now())
	case !st.waitTimestamp.IsZero():
		d = st.waitTimestamp.Sub(r.x.opts.Now())
	default:
		d = time.Duration(st.waitSeconds) * time.Second
	}
	if d > 0 {
		if err := r.x.opts.Sleep(ctx, d); err != nil {
			return nil, &canceledError{err}
		}
	}
	return r.outputPath(in)
}

// runRetrying runs a Task or Map state with its Retry and Catch. A resumed
// callback task's first outcome is its completion, not a new attempt.
func (r *stateRun) runRetrying(ctx context.Context) (any, string, error) {
	st := r.st
	counts := make([]int, len(st.retry))
	for {
		var out any
		var err error
		if res := r.res; res != nil {
			r.res = nil
			copy(counts, res.retryCounts)
			out, err = r.complete(res)
		} else {
			out, err = r.attempt(ctx)
		}
		if err == nil {
			return out, st.next, nil
		}
		var sig *suspendSignal
		if errors.As(err, &sig) {
			sig.run, sig.retryCounts = r, slices.Clone(counts)
			return nil, "", sig
		}
		var se *stateError
		if !errors.As(err, &se) {
			return nil, "", err // canceled
		}
		if i := matchRetrier(st.retry, se.name); i >= 0 && counts[i] < st.retry[i].maxAttempts {
			delay := retryDelay(st.retry[i], counts[i], r.x.opts.Rand)
			counts[i]++
			r.retries++
			if ro, ok := r.x.opts.Observer.(RetryObserver); ok {
				ro.StateRetrying(RetryEvent{Name: st.name, MapIndex: r.fr.mapIndex, Time: r.x.opts.Now(),
					Error: se.name, Cause: se.cause, Attempt: r.retries, Delay: delay})
			}
			if err := r.x.opts.Sleep(ctx, delay); err != nil {
				return nil, "", &canceledError{err}
			}
			continue
		}
		for _, c := range st.catch {
			if !matchesAny(c.errs, se.name) {
				continue
			}
			errOut := map[string]any{"Error": se.name}
			if se.cause != "" {
				errOut["Cause"] = se.cause
			}
			out, err := resultPath(c.resultPath, r.raw, errOut)
			if err != nil {
				return nil, "", err
			}
			if err := checkSize(out, "the output of state "+st.name+" (caught error)"); err != nil {
				return nil, "", err
			}
			return out, c.next, nil
		}
		return nil, "", se
	}
}

func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if errorMatches(p, name) {
			return true
		}
	}
	return false
}

// matchRetrier returns the first retrier whose ErrorEquals matches name,
// or -1. Only that retrier applies, even when its attempts are used up.
func matchRetrier(rs []retrier, name string) int {
	for i, r := range rs {
		if matchesAny(r.errs, name) {
			return i
		}
	}
	return -1
}

// retryDelay is IntervalSeconds × BackoffRate^n for the n-th retry (from
// 0) of this retrier, capped by MaxDelaySeconds, then, with FULL jitter, a
// random fraction of that.
func retryDelay(r retrier, n int, rnd func() float64) time.Duration {
	secs := r.interval * math.Pow(r.backoff, float64(n))
	if r.maxDelay > 0 && secs > r.maxDelay {
		secs = r.maxDelay
	}
	if r.fullJitter {
		secs *= rnd()
	}
	const maxSecs = float64(math.MaxInt64) / float64(time.Second)
	if secs > maxSecs || math.IsInf(secs, 0) || math.IsNaN(secs) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(secs * float64(time.Second))
}

// attempt runs a Task or Map state once: InputPath, Parameters (Task) or
// ItemsPath/ItemSelector (Map), the work, ResultSelector, ResultPath and
// OutputPath.
func (r *stateRun) attempt(ctx context.Context) (any, error) {
	in, err := r.inputPath()
	if err != nil {
		return nil, err
	}
	var result any
	if r.st.typ == "Map" {
		result, err = r.runMap(ctx, in)
	} else {
		if r.st.callback {
			r.token = newTaskToken() // each attempt its own, as the service does
		}
		if r.st.parameters != nil {
			if in, err = r.st.parameters.eval(r.env(in), "Parameters"); err != nil {
				return nil, err
			}
		}
		if err := checkSize(in, "the input of task "+r.st.name); err != nil {
			return nil, err
		}
		result, err = r.runTask(ctx, in)
	}
	if err != nil {
		return nil, err
	}
	return r.result(result)
}

// result applies ResultSelector, ResultPath and OutputPath to a task's
// result.
func (r *stateRun) result(result any) (any, error) {
	var err error
	if r.st.resultSelector != nil {
		if result, err = r.st.resultSelector.eval(r.env(result), "ResultSelector"); err != nil {
			return nil, err
		}
	}
	out, err := resultPath(r.st.resultPath, r.raw, result)
	if err != nil {
		return nil, err
	}
	return r.outputPath(out)
}

type taskResult struct {
	out json.RawMessage
	err error
}

func (r *stateRun) runTask(ctx context.Context, input any) (any, error) {
	st := r.st
	resource := st.resource
	if st.lambdaInvoke {
		params, _ := input.(map[string]any)
		fn, ok := params["FunctionName"].(string)
		if !ok || fn == "" {
			return nil, newErr(ErrRuntime, "%s: the FunctionName parameter must be a non-empty string", lambdaInvokeResource)
		}
		resource = fn
		if p, ok := params["Payload"]; ok {
			input = p
		} else {
			input = map[string]any{}
		}
	}
	if r.x.opts.Tasks == nil {
		return nil, newErr(ErrRuntime, "no TaskRunner is configured to run %q", resource)
	}
	payload, err := encodeValue(input)
	if err != nil {
		return nil, newErr(ErrRuntime, "the task input cannot be encoded: %v", err)
	}
	tctx, cancel := ctx, context.CancelFunc(func() {})
	if st.timeout > 0 {
		tctx, cancel = context.WithTimeout(ctx, st.timeout)
	}
	defer cancel()
	ch := make(chan taskResult, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- taskResult{err: &TaskError{Name: ErrTaskFailed, Cause: fmt.Sprintf("the task panicked: %v\n%s", p, debug.Stack())}}
			}
		}()
		out, err := r.x.opts.Tasks.RunTask(tctx, resource, payload)
		ch <- taskResult{out, err}
	}()
	var res taskResult
	select {
	case res = <-ch:
	case <-tctx.Done():
	}
	if ctx.Err() != nil {
		return nil, &canceledError{ctx.Err()}
	}
	if tctx.Err() != nil {
		return nil, newErr(ErrTimeout, "the task %q did not finish within TimeoutSeconds (%v)", resource, st.timeout)
	}
	if res.err != nil {
		return nil, taskErrorOf(res.err)
	}
	if st.callback {
		// The runner's own answer is not the result: the token's is.
		return nil, &suspendSignal{token: r.token}
	}
	if len(strings.TrimSpace(string(res.out))) == 0 {
		res.out = json.RawMessage("null")
	}
	if len(res.out) > PayloadLimit {
		return nil, newErr(ErrDataLimitExceeded, "the result of task %q has %d bytes, over the %d-byte payload quota", resource, len(res.out), PayloadLimit)
	}
	v, err := decodeValue(res.out)
	if err != nil {
		return nil, newErr(ErrRuntime, "the result of task %q is not valid JSON: %v", resource, err)
	}
	if st.lambdaInvoke {
		v = map[string]any{
			"ExecutedVersion":     "$LATEST",
			"Payload":             v,
			"SdkHttpMetadata":     map[string]any{"HttpHeaders": map[string]any{}, "HttpStatusCode": json.Number("200")},
			"SdkResponseMetadata": map[string]any{"RequestId": newUUID()},
			"StatusCode":          json.Number("200"),
		}
	}
	return v, nil
}

// taskErrorOf names a task error: by its ErrorName, else States.TaskFailed.
func taskErrorOf(err error) *stateError {
	var te *TaskError
	if errors.As(err, &te) {
		name := te.Name
		if name == "" {
			name = ErrTaskFailed
		}
		return &stateError{name: name, cause: te.Cause}
	}
	var ee *ExecutionError
	if errors.As(err, &ee) {
		return &stateError{name: ee.Name, cause: ee.Cause}
	}
	if name := errname.Of(err); name != "" {
		return &stateError{name: name, cause: err.Error()}
	}
	return &stateError{name: ErrTaskFailed, cause: err.Error()}
}

// runMap runs the ItemProcessor once per item, at most MaxConcurrency
// (or MaxConcurrencyPath's) at a time, and returns the outputs in item
// order. Without tolerated failures the first failing item cancels the
// others and fails the state: with its own error in INLINE mode, with
// States.ExceedToleratedFailureThreshold in DISTRIBUTED mode (as a Map Run
// with the default tolerated failure of zero does). A Distributed Map that
// tolerates failures goes on past them, each failed item's output its
// Error and Cause; past the tolerance it starts no more items, lets those
// running end (where a Map Run on AWS may stop their child executions), and
// fails with States.ExceedToleratedFailureThreshold.
func (r *stateRun) runMap(ctx context.Context, in any) (any, error) {
	st := r.st
	items := in
	if st.itemsPath != nil {
		v, ok := r.env(in).lookup(st.itemsPath)
		if !ok {
			return nil, newErr(ErrRuntime, "invalid path '%s' in ItemsPath: no value at that path in %s", st.itemsPath, excerpt(in, 1024))
		}
		items = v
	}
	arr, ok := items.([]any)
	if !ok {
		return nil, newErr(ErrRuntime, "the Map items (ItemsPath %s) must be an array, not %s", pathOrRoot(st.itemsPath), typeName(items))
	}
	n := len(arr)
	results := make([]any, n)
	if n == 0 {
		return results, nil
	}
	lim, err := r.mapLimits(in, n)
	if err != nil {
		return nil, err
	}
	conc := r.x.opts.MaxConcurrency
	if lim.conc > 0 && lim.conc < conc {
		conc = lim.conc
	}
	conc = min(conc, n)

	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		next      atomic.Int64
		wg        sync.WaitGroup
		mu        sync.Mutex
		failure   *stateError
		failIndex int
		failed    int
		stopped   atomic.Bool
	)
	fail := func(i int, se *stateError) {
		mu.Lock()
		defer mu.Unlock()
		failed++
		if st.tolerates && !lim.exceeded(failed) {
			results[i] = map[string]any{"Error": se.name, "Cause": se.cause}
			return
		}
		if failure == nil {
			failure, failIndex = se, i
			if st.tolerates {
				stopped.Store(true) // no more items; those running end
			} else {
				cancel()
			}
		}
	}
	for range conc {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n || mctx.Err() != nil || stopped.Load() {
					return
				}
				out, err := r.mapItem(mctx, in, arr, i)
				if err != nil {
					var se *stateError
					if !errors.As(err, &se) {
						return // canceled: a sibling failed or the run stopped
					}
					fail(i, se)
					continue
				}
				results[i] = out
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil, &canceledError{ctx.Err()}
	}
	if failure != nil {
		if st.distributed {
			return nil, &stateError{name: ErrExceedToleratedFailure, state: st.name,
				cause: fmt.Sprintf("the tolerated failure threshold (%s) was exceeded: item %d failed in state %q with %s: %s (%d of %d items failed)", lim, failIndex, failure.state, failure.name, failure.cause, failed, n)}
		}
		return nil, failure
	}
	if err := checkSize(results, "the result of Map state "+st.name); err != nil {
		return nil, err
	}
	return results, nil
}

// mapLimits are a Map's concurrency and tolerated failures for this run.
type mapLimits struct {
	conc    int
	count   int64   // tolerated failed items; -1: no count given
	percent float64 // tolerated failed items in percent of n; -1: none given
	n       int
}

// exceeded reports whether failed items pass what is tolerated: either
// limit, when given; neither given, none is tolerated.
func (l mapLimits) exceeded(failed int) bool {
	switch {
	case l.count < 0 && l.percent < 0:
		return failed > 0
	case l.count >= 0 && int64(failed) > l.count:
		return true
	case l.percent >= 0 && float64(failed)*100 > l.percent*float64(l.n):
		return true
	}
	return false
}

func (l mapLimits) String() string {
	var parts []string
	if l.count >= 0 {
		parts = append(parts, fmt.Sprintf("%d items", l.count))
	}
	if l.percent >= 0 {
		parts = append(parts, fmt.Sprintf("%g%%", l.percent))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, ", ")
}

// mapLimits reads the Map's limits, from the state's input where a Path
// names them: a value missing there, or not a non-negative integer (a
// percentage from 0 to 100), is States.Runtime.
func (r *stateRun) mapLimits(in any, n int) (mapLimits, error) {
	st := r.st
	lim := mapLimits{conc: st.maxConc, count: -1, percent: -1, n: n}
	num := func(p *jpath, field string, hi float64) (float64, error) {
		v, ok := r.env(in).lookup(p)
		if !ok {
			return 0, newErr(ErrRuntime, "invalid path '%s' in %s: no value at that path", p.raw, field)
		}
		jn, ok := v.(json.Number)
		f, err := jn.Float64()
		if !ok || err != nil || f < 0 || f > hi {
			return 0, newErr(ErrRuntime, "%s %s: want a number from 0 to %g, not %s", field, p.raw, hi, excerpt(v, 64))
		}
		return f, nil
	}
	if st.maxConcPath != nil {
		f, err := num(st.maxConcPath, "MaxConcurrencyPath", maxIntField)
		if err != nil {
			return lim, err
		}
		lim.conc = int(f)
	}
	if st.tolCount != nil {
		lim.count = *st.tolCount
	}
	if st.tolCountPath != nil {
		f, err := num(st.tolCountPath, "ToleratedFailureCountPath", maxIntField)
		if err != nil {
			return lim, err
		}
		lim.count = int64(f)
	}
	if st.tolPercent != nil {
		lim.percent = *st.tolPercent
	}
	if st.tolPercentPath != nil {
		f, err := num(st.tolPercentPath, "ToleratedFailurePercentagePath", 100)
		if err != nil {
			return lim, err
		}
		lim.percent = f
	}
	return lim, nil
}

func pathOrRoot(p *jpath) string {
	if p == nil {
		return "$"
	}
	return p.raw
}

// mapItem runs one iteration.
func (r *stateRun) mapItem(ctx context.Context, in any, items []any, i int) (any, error) {
	st := r.st
	item := items[i]
	input := item
	if st.itemSelector != nil {
		mapItem := map[string]any{"Index": intNumber(int64(i)), "Value": item}
		c := r.contextObject(mapItem)
		v, err := st.itemSelector.eval(&env{input: in, ctx: func() any { return c }}, "ItemSelector")
		if err != nil {
			var se *stateError
			if errors.As(err, &se) {
				se.state = st.name
			}
			return nil, err
		}
		input = v
	}
	if err := checkSize(input, fmt.Sprintf("the input of item %d of Map state %s", i, st.name)); err != nil {
		var se *stateError
		errors.As(err, &se)
		se.state = st.name
		return nil, err
	}
	fr := frame{
		exec:        r.fr.exec,
		mapIndex:    append(append(make([]int, 0, len(r.fr.mapIndex)+1), r.fr.mapIndex...), i),
		transitions: r.fr.transitions,
	}
	if st.distributed {
		name := fmt.Sprintf("%s-%d", st.name, i)
		fr.exec = map[string]any{
			"Id":           fmt.Sprintf("%s/%s:%d", r.fr.exec["Id"], st.name, i),
			"Name":         name,
			"Input":        input,
			"StartTime":    isoTime(r.x.opts.Now()),
			"RedriveCount": json.Number("0"),
		}
		fr.transitions = new(atomic.Int64)
	}
	return r.x.runScope(ctx, st.processor, st.processor.startAt, input, fr, nil)
}
