package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/gate"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/inplace"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// Region is the Region of a local run's console links: that of
// pkg/asl's default state machine ARN, which a local execution id is built on.
const Region = "us-east-1"

// Substitutions fill the definitions' placeholders for an in-process run:
// each function's name stands for its ARN.
func Substitutions(topic string) map[string]string {
	return map[string]string{
		"CheckFunctionArn": "check", "ExportFunctionArn": "export", "ImportFunctionArn": "import",
		"InPlaceFunctionArn": "inplace", "TopicArn": topic, "Region": Region,
		"MigrationStateMachineArn": localMigrationARN, "RollbackStateMachineArn": localRollbackARN,
	}
}

// localMigrationARN and localRollbackARN stand for the state machines'
// ARNs in a local run: the rollback and fleet definitions' child
// executions run them in-process.
const (
	localMigrationARN = "migration"
	localRollbackARN  = "rollback"
)

// children are the definitions a local child execution runs, by the ARN
// that stands for each.
var children = map[string][]byte{localMigrationARN: statemachine.Migration, localRollbackARN: statemachine.Rollback}

// Tasks runs the definition's tasks in-process: the same steps the
// Lambdas host, errors named as the Lambdas name them.
func Tasks(env runstate.Env, publish runstate.Publish) asl.Funcs {
	env.Local, env.Publish = true, publish
	funcs := asl.Funcs{}
	for fn, hosted := range workflow.Functions {
		allowed := map[string]bool{}
		for _, s := range hosted {
			allowed[s] = true
		}
		funcs[fn] = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			var req workflow.Request
			if err := json.Unmarshal(in, &req); err != nil {
				return nil, &asl.TaskError{Name: runstate.NameStepFailed, Cause: err.Error(), Err: err}
			}
			if !allowed[req.Step] {
				return nil, &asl.TaskError{Name: runstate.NameStepFailed, Cause: fmt.Sprintf("function %s does not run step %q", fn, req.Step)}
			}
			out, err := workflow.Run(ctx, env, req.Step, req.Input)
			if err != nil {
				return nil, &asl.TaskError{Name: runstate.ErrorName(err), Cause: err.Error(), Err: err}
			}
			return out, nil
		}
	}
	funcs[statemachine.SNSPublish] = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var p struct{ TopicArn, Subject, Message string }
		if err := json.Unmarshal(in, &p); err != nil {
			return nil, &asl.TaskError{Name: "SNS.InvalidParameterException", Cause: err.Error()}
		}
		if publish != nil && p.TopicArn != "" {
			if err := publish(ctx, p.TopicArn, p.Subject, p.Message); err != nil {
				return nil, &asl.TaskError{Name: "SNS.SdkClientException", Cause: err.Error(), Err: err}
			}
		}
		return json.RawMessage(`{"MessageId":"local"}`), nil
	}
	// A child execution of the migration (or rollback) definition, as Step
	// Functions' startExecution.sync:2 runs it: the parent waits, and gets
	// its output as JSON or fails with States.TaskFailed.
	funcs[statemachine.StartExecutionSync] = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		var p struct {
			StateMachineArn string
			Input           json.RawMessage
		}
		err := json.Unmarshal(in, &p)
		def, ok := children[p.StateMachineArn]
		if err != nil || !ok {
			return nil, &asl.TaskError{Name: "StepFunctions.StateMachineDoesNotExistException", Cause: fmt.Sprintf("%s (%v)", p.StateMachineArn, err)}
		}
		m, err := LoadDefinition(def, "")
		if err != nil {
			return nil, &asl.TaskError{Name: asl.ErrTaskFailed, Cause: err.Error(), Err: err}
		}
		out, err := asl.Run(ctx, m, p.Input, asl.Options{Tasks: funcs})
		if err != nil {
			return nil, &asl.TaskError{Name: asl.ErrTaskFailed, Cause: err.Error(), Err: err}
		}
		return json.Marshal(map[string]any{"ExecutionArn": "local:" + p.StateMachineArn, "Status": "SUCCEEDED", "Output": out})
	}
	return funcs
}

// Load loads the migration definition with Substitutions.
func Load(topic string) (*asl.Machine, error) {
	return LoadDefinition(statemachine.Migration, topic)
}

// LoadDefinition loads one of statemachine's definitions with
// Substitutions.
func LoadDefinition(def []byte, topic string) (*asl.Machine, error) {
	sub, err := asl.Substitute(def, Substitutions(topic))
	if err != nil {
		return nil, err
	}
	return asl.Load(sub)
}

// Options configure Run.
type Options struct {
	// Check is the run's input. InPlace runs Strategy A; InPlaceAuto
	// chooses between A and B first (ChooseInPlace, read-only). An empty
	// MigrationID is given a new one, so that every report names the
	// migration, even one Check refused.
	Check workflow.CheckInput
	// Topic is the SNS topic of the outcome messages ("" for none);
	// Publish sends them (nil: SNSPublish when there is a topic).
	Topic   string
	Publish runstate.Publish
	// Concurrency is the Map's MaxConcurrency: shards worked on at once.
	Concurrency int
	// Display, when set, is called once a Strategy B run starts, for the
	// display of its states and long stages, which Run closes.
	Display func() Display
	// Log gets the run's plain lines (nil: none): the strategy InPlaceAuto
	// chose, and a Strategy A run's states and warnings.
	Log io.Writer
}

// Report is what a local run did: the CLI's migrate report.
type Report struct {
	MigrationID      string             `json:"migration_id"`
	Outcome          string             `json:"outcome"`
	Source           string             `json:"source,omitempty"`
	Target           string             `json:"target,omitempty"`
	From             format.Version     `json:"from,omitempty"`
	To               format.Version     `json:"to,omitempty"`
	Counts           map[string]uint64  `json:"counts,omitempty"`
	Digest           string             `json:"digest,omitempty"`
	PointerVersionID string             `json:"pointer_version_id,omitempty"`
	StateSeconds     map[string]float64 `json:"state_seconds"`
	Error            string             `json:"error,omitempty"`
	// NotifyError: the outcome message could not be sent. It does not
	// change the outcome, which is what happened to the pointer.
	NotifyError string `json:"notify_error,omitempty"`
	// HistoryError: the run's record beside the pointer could not be
	// finished. It does not change the outcome either.
	HistoryError string `json:"history_error,omitempty"`
	// WouldFence: a dry run touches nothing in the source; this says what a
	// real run would fence.
	WouldFence string `json:"would_fence,omitempty"`
	// Carried and Dropped: records of unknown tags, by tag.
	Carried map[string]uint64 `json:"carried_unknown,omitempty"`
	Dropped map[string]uint64 `json:"dropped_unknown,omitempty"`
	// Gate: the migration waits at the gate (PostponeFlip); GateHow says
	// how to approve or abort it.
	Gate    *gate.Record `json:"gate,omitempty"`
	GateHow string       `json:"gate_instructions,omitempty"`
	// InPlace: what a Strategy A run did.
	InPlace *inplace.Result `json:"in_place,omitempty"`
	// Online: an online run's catch-up rounds and write freeze.
	Online *history.Online `json:"online,omitempty"`
	// RollbackOf: the run rolled back that migration's flip, carrying
	// CarriedKeys keys back.
	RollbackOf  string `json:"rollback_of,omitempty"`
	CarriedKeys int    `json:"carried_keys,omitempty"`
}

// FinalState is the state a migration's execution ends with: the
// migration, what Verify found and, within it so that the outcome message
// carries both, what Flip did.
type FinalState struct {
	Migration runstate.Migration `json:"migration"`
	Verify    struct {
		workflow.VerifyOutput
		Flip workflow.FlipOutput `json:"flip"`
	} `json:"verify"`
	NotifyError *struct{ Error, Cause string } `json:"notify_error"`
}

// Run runs a migration in this process, as the CLI's migrate does:
// Strategy A as Check then MigrateInPlace; Strategy B as the migration
// definition under pkg/asl with Tasks. A run interrupted (its context
// ended) after Check runs Abort on a fresh context, the state machine's own
// Abort having not run; a run that stops at the gate is recorded there
// (RecordSuspension) for approve and abort to resume, and reported as
// waiting, not failed. The report says what happened to the pointer; the
// error is the run's (an execution's FormatVersionMismatch as
// *format.FormatVersionMismatch). A nil report comes with an error only: the
// run's outcome cannot be told.
func Run(ctx context.Context, env runstate.Env, opts Options) (*Report, error) {
	in := opts.Check
	if in.MigrationID == "" {
		in.MigrationID = runstate.NewMigrationID()
	}
	publish, err := runstate.Publisher(ctx, opts.Publish, opts.Topic)
	if err != nil {
		return nil, err
	}
	if in.InPlaceAuto {
		// Chosen here, read-only, since A and B run differently here; Check
		// then runs with the choice made.
		a, why, err := workflow.ChooseInPlace(ctx, env, workflow.CheckInput{Pointer: in.Pointer, TargetVersion: in.TargetVersion, UnknownTags: in.UnknownTags, InPlaceMaxBytes: in.InPlaceMaxBytes})
		if err != nil {
			return nil, err
		}
		logf(opts.Log, "strategy: %s\n", why)
		in.InPlaceAuto, in.InPlace = false, a
		if a {
			in.Online = nil // online is Strategy B's
		}
	}
	if in.InPlace {
		return runInPlace(ctx, env, in, publish, opts)
	}
	in.InPlaceMaxBytes = 0
	m, err := Load(opts.Topic)
	if err != nil {
		return nil, err
	}
	return runMachine(ctx, env, m, in, publish, opts)
}

func logf(w io.Writer, format string, a ...any) {
	if w != nil {
		fmt.Fprintf(w, format, a...)
	}
}

// runMachine is a Strategy B run: the definition m, its states and long
// stages shown as they go (a line per top-level state as it starts and
// ends; export and transform, the Shards map, by shard, their totals not
// known up front; import and verify by rows, totals from the shards).
func runMachine(ctx context.Context, env runstate.Env, m *asl.Machine, in workflow.CheckInput, publish runstate.Publish, opts Options) (*Report, error) {
	raw, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	w := newWatch(&env, in, opts)
	out, runErr := asl.Run(ctx, m, raw, asl.Options{Tasks: Tasks(env, publish), Observer: w.observer(), MaxConcurrency: opts.Concurrency})
	w.close(runErr)
	rep := &Report{StateSeconds: w.times, Outcome: "migrated"}
	if runErr != nil && ctx.Err() != nil && w.checked.NeedsMigration {
		runErr = abortInterrupted(ctx, env, w.checked, runErr)
	}
	var state FinalState
	state.Migration = w.checked
	if state.Migration.MigrationID == "" {
		state.Migration.MigrationID = in.MigrationID
	}
	var suspended *asl.Suspended
	if errors.As(runErr, &suspended) {
		// At the gate: the run is over for this process, not failed.
		rec, err := gate.RecordSuspension(ctx, env, in.MigrationID, suspended)
		if err != nil {
			return nil, fmt.Errorf("localrun: migration %s waits at the gate, but its run could not be recorded for approve (abort %s still works): %w", in.MigrationID, in.MigrationID, err)
		}
		runErr, out = nil, w.verified
		rep.Outcome, rep.Gate, rep.GateHow = "waiting at the gate for approve or abort", &rec, gate.Instructions(rec)
	}
	if runErr == nil {
		if err := json.Unmarshal(out, &state); err != nil {
			return nil, fmt.Errorf("localrun: the run's output: %w", err)
		}
	}
	rep.fill(state, runErr)
	var ee *asl.ExecutionError
	if errors.As(runErr, &ee) && ee.Name == format.ErrVersionMismatch.ErrorName() {
		if mm, ok := format.ParseMismatch(ee.Cause); ok {
			return rep, mm
		}
		v := in.TargetVersion
		if v == 0 { // a rebuild's: the format the pointer names
			v = uint64(state.Migration.To)
		}
		return rep, &format.FormatVersionMismatch{Found: uint64(state.Migration.From), Expected: v}
	}
	return rep, runErr
}

// Display shows a local run as it goes: its states, and its long stages'
// progress (the CLI's is pkg/progress's). A stage only stops; only its
// first Stop counts.
type Display interface {
	State(name string, end bool, at time.Time, took time.Duration)
	Stage(name, unit string, p *shard.Progress) interface{ Stop(err error) }
	Close()
}

// watch is what a local run keeps of its states as they go: their times,
// the migration Check made (every report names it, a failed one's too), the
// state after Verify (for a run that stops at the gate), and the display's
// stages fed by the steps' progress counters.
type watch struct {
	in       workflow.CheckInput
	mu       sync.Mutex
	times    map[string]float64
	checked  runstate.Migration
	verified json.RawMessage
	d        Display
	stages   map[string]interface{ Stop(err error) }
	progress runstate.Progress
}

// newWatch makes a run's watch and gives env its progress counters.
func newWatch(env *runstate.Env, in workflow.CheckInput, opts Options) *watch {
	w := &watch{in: in, times: map[string]float64{}, stages: map[string]interface{ Stop(err error) }{}}
	if opts.Display != nil {
		w.d = opts.Display()
	}
	w.progress = runstate.Progress{Export: new(shard.Progress), Transform: new(shard.Progress), Import: new(shard.Progress), Verify: new(shard.Progress)}
	env.Progress = w.progress
	return w
}

// stage shows name's progress (Import loops until done: one stage).
func (w *watch) stage(name string, p *shard.Progress) {
	if w.d != nil && w.stages[name] == nil {
		w.stages[name] = w.d.Stage(name, "rows", p)
	}
}

// stop ends stage name's display, if it has one.
func (w *watch) stop(name string, err error) {
	if st := w.stages[name]; st != nil {
		st.Stop(err)
	}
}

// failedState is the error a state ended with (nil when it had an output).
func failedState(ev asl.StateEvent) error {
	if ev.Output != nil {
		return nil
	}
	return fmt.Errorf("%s: %s", ev.Error, ev.Cause)
}

func (w *watch) observer() asl.ObserverFuncs {
	return asl.ObserverFuncs{Entered: w.entered, Exited: w.exited}
}

func (w *watch) entered(ev asl.StateEvent) {
	if len(ev.MapIndex) > 0 {
		return
	}
	if w.d != nil {
		w.d.State(ev.Name, false, ev.Time, 0)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	switch ev.Name {
	case "Shards":
		w.progress.Export.ShardsTotal.Store(int64(w.in.Shards))
		w.progress.Transform.ShardsTotal.Store(int64(w.in.Shards))
		w.stage("export", w.progress.Export)
		w.stage("transform", w.progress.Transform)
	case statemachine.StepImport:
		w.stage("import", w.progress.Import)
	case statemachine.StepVerify:
		w.stage("verify", w.progress.Verify)
	}
}

func (w *watch) exited(ev asl.StateEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.times[ev.Name] += ev.Duration.Seconds()
	switch {
	case (ev.Name == statemachine.StepExportTransformShard || ev.Name == statemachine.StepTransformShard) && ev.Output != nil:
		w.progress.Transform.ShardsDone.Add(1)
	case len(ev.MapIndex) > 0:
		return
	case ev.Name == statemachine.StepCheck && ev.Output != nil:
		var st struct {
			Migration runstate.Migration `json:"migration"`
		}
		if json.Unmarshal(ev.Output, &st) == nil {
			w.checked = st.Migration
		}
	case ev.Name == "Shards":
		w.stop("export", failedState(ev))
		w.stop("transform", failedState(ev))
	case ev.Name == statemachine.StepImport:
		var st struct {
			Import workflow.ImportOutput `json:"import"`
		}
		if ev.Output == nil || json.Unmarshal(ev.Output, &st) != nil || st.Import.Done {
			w.stop("import", failedState(ev))
		}
	case ev.Name == statemachine.StepVerify:
		w.stop("verify", failedState(ev))
		w.verified = ev.Output
	}
	if len(ev.MapIndex) == 0 && w.d != nil {
		w.d.State(ev.Name, true, ev.Time, ev.Duration)
	}
}

// close ends the display once the run is over.
func (w *watch) close(runErr error) {
	for _, st := range w.stages {
		st.Stop(runErr) // a no-op for a stage already ended
	}
	if w.d != nil {
		w.d.Close()
	}
}

// abortInterrupted runs Abort for a run a signal or the deadline
// interrupted (the state machine's own Abort did not run), on a fresh
// context, so that no checkpoint, staging, lock or half-made target is
// left; it refuses to touch a target the pointer already names.
func abortInterrupted(ctx context.Context, env runstate.Env, checked runstate.Migration, runErr error) error {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	ab, err := workflow.Abort(actx, env, workflow.AbortInput{Migration: checked, Error: map[string]any{"Error": "Interrupted", "Cause": runErr.Error()}})
	if err != nil {
		return fmt.Errorf("%w; the cleanup after the interruption failed too: %w", runErr, err)
	}
	return fmt.Errorf("%w; cleaned up after the interruption (%d target and %d staging objects removed)", runErr, ab.TargetObjects, ab.StagingObjects)
}

// fill is the report of a run that ended in state, or with runErr.
func (rep *Report) fill(state FinalState, runErr error) {
	if state.NotifyError != nil {
		rep.NotifyError = state.NotifyError.Error + ": " + state.NotifyError.Cause
	}
	rep.MigrationID, rep.Source, rep.Target = state.Migration.MigrationID, state.Migration.Source, state.Migration.Target
	rep.From, rep.To, rep.Counts, rep.Digest = state.Migration.From, state.Migration.To, state.Verify.Counts, state.Verify.Digest
	rep.PointerVersionID = state.Verify.Flip.PointerVersionID
	rep.HistoryError = state.Verify.Flip.HistoryError
	rep.Online = state.Verify.Flip.Online
	rep.RollbackOf, rep.CarriedKeys = state.Migration.RollbackOf, state.Verify.Flip.CarriedKeys
	rep.WouldFence = state.Migration.WouldFence
	rep.Carried, rep.Dropped = state.Verify.Carried, state.Verify.Dropped
	switch {
	case runErr != nil:
		rep.Outcome, rep.Error = "failed", runErr.Error()
	case !state.Migration.NeedsMigration:
		rep.Outcome = "nothing to do"
	case state.Migration.DryRun:
		rep.Outcome = "dry run verified (pointer unchanged)"
	case state.Migration.RollbackOf != "":
		rep.Outcome = "rolled back"
	case state.Migration.Rebuild:
		rep.Outcome = "rebuilt"
	}
}

// runInPlace is a Strategy A run: Check (the lock and the refusals, before
// anything is touched), then MigrateInPlace, each state's start logged,
// reported as a Strategy B run is, with the outcome message sent.
func runInPlace(ctx context.Context, env runstate.Env, in workflow.CheckInput, publish runstate.Publish, opts Options) (*Report, error) {
	times := map[string]float64{}
	rep := &Report{MigrationID: in.MigrationID, StateSeconds: times, Outcome: "migrated in place"}
	timed := func(state string, f func() error) error {
		logf(opts.Log, "%s → %s\n", time.Now().Format("15:04:05"), state)
		start := time.Now()
		err := f()
		times[state] = time.Since(start).Seconds()
		return err
	}
	var m runstate.Migration
	err := timed(statemachine.StepCheck, func() (err error) {
		m, err = workflow.Check(ctx, env, in)
		return err
	})
	if err == nil {
		rep.Source, rep.Target, rep.From, rep.To = m.Source, m.Target, m.From, m.To
	}
	if err == nil && m.NeedsMigration {
		var out workflow.InPlaceOutput
		err = timed(statemachine.StepInPlace, func() (err error) {
			out, err = workflow.MigrateInPlace(ctx, env, m)
			return err
		})
		res := out.InPlace
		rep.InPlace, rep.PointerVersionID = &res, out.PointerVersionID
		if err == nil {
			rep.Counts, rep.Digest = res.Digest.Counts(), res.Digest.Sum()
		}
		for t, n := range res.Carried {
			rep.Carried = countTag(rep.Carried, t.String(), n)
		}
		for t, n := range res.Dropped {
			rep.Dropped = countTag(rep.Dropped, t.String(), n)
		}
		for _, w := range []string{out.Warning, out.CleanupError} {
			if w != "" {
				logf(opts.Log, "warning: %s\n", w)
			}
		}
	}
	switch {
	case err != nil:
		rep.Outcome, rep.Error = "failed", err.Error()
	case !m.NeedsMigration:
		rep.Outcome = "nothing to do"
	case m.DryRun:
		rep.Outcome = "dry run (nothing written; the pointer unchanged)"
	}
	if publish != nil && opts.Topic != "" {
		msg := fmt.Sprintf("migration %s (in place) of %s: %s", rep.MigrationID, rep.Source, rep.Outcome)
		if rep.Error != "" {
			msg += ": " + rep.Error
		}
		if perr := publish(ctx, opts.Topic, "rocklake-migrate "+rep.MigrationID+": "+rep.Outcome, msg); perr != nil {
			rep.NotifyError = perr.Error()
		}
	}
	return rep, err
}

func countTag(m map[string]uint64, tag string, n uint64) map[string]uint64 {
	if m == nil {
		m = map[string]uint64{}
	}
	m[tag] += n
	return m
}
