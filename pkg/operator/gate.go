package operator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rocklake/rocklake-migrate/statemachine"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/gate"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// TaskTokens completes Step Functions task tokens: the SFN API
// (NewStepFunctions), or anything speaking it.
type TaskTokens interface {
	SendTaskSuccess(ctx context.Context, token, output string) error
	SendTaskFailure(ctx context.Context, token, errorName, cause string) error
}

// NewStepFunctions is TaskTokens over the SFN API, with the process's one
// AWS configuration (pkg/awsconfig: credentials, limits).
func NewStepFunctions(ctx context.Context) (TaskTokens, error) {
	cfg, err := awsconfig.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("workflow: load the AWS configuration: %w", err)
	}
	return stepFunctions{sfn.NewFromConfig(cfg.AWS)}, nil
}

type stepFunctions struct{ c *sfn.Client }

func (s stepFunctions) SendTaskSuccess(ctx context.Context, token, output string) error {
	_, err := s.c.SendTaskSuccess(ctx, &sfn.SendTaskSuccessInput{TaskToken: aws.String(token), Output: aws.String(output)})
	return err
}

func (s stepFunctions) SendTaskFailure(ctx context.Context, token, errorName, cause string) error {
	_, err := s.c.SendTaskFailure(ctx, &sfn.SendTaskFailureInput{TaskToken: aws.String(token), Error: aws.String(errorName), Cause: aws.String(cause)})
	return err
}

// GateOptions configure Approve and AbortGate.
type GateOptions struct {
	// By names who completes the gate (the CLI's user).
	By string
	// Pointer, when set, must be the migration's.
	Pointer string
	// Publish sends the definition's notifications when a local run resumes
	// (default: SNSPublish, if the run has a topic).
	Publish runstate.Publish
	// Observer watches a local run resume.
	Observer asl.Observer
	// StepFunctions completes the gate of a Step Functions execution
	// (default: NewStepFunctions).
	StepFunctions TaskTokens
}

// GateResult is what completing the gate did.
type GateResult struct {
	Gate gate.Record
	// SentTo is the Step Functions execution the completion was sent to,
	// where the migration goes on; "" when a local run was resumed here.
	SentTo string
	// Output is a resumed local run's output after approve.
	Output json.RawMessage
	// Abort is what Abort removed after abort, in a resumed local run.
	Abort *workflow.AbortOutput
}

// gateClaimLease is how long an approve or abort that claimed the gate
// keeps another from completing it: longer than Flip or Abort with their
// retries. A command that died after its claim can be repeated after it.
const gateClaimLease = 15 * time.Minute

const (
	gateApprove = "approve"
	gateAbort   = "abort"
)

// Approve completes the gate of migration id with success: the definition
// goes on to Flip and NotifySuccess. A Flip that refuses (the source took
// a write at the gate, the pointer moved) goes to Abort, and Approve
// returns its error.
func Approve(ctx context.Context, env runstate.Env, id string, opts GateOptions) (GateResult, error) {
	return completeGate(ctx, env, id, gateApprove, opts)
}

// AbortGate completes the gate of migration id with the error
// AbortedByOperator: the definition goes on to Abort (the new catalog,
// staging and checkpoint removed, the lock released) and NotifyFailure.
func AbortGate(ctx context.Context, env runstate.Env, id string, opts GateOptions) (GateResult, error) {
	return completeGate(ctx, env, id, gateAbort, opts)
}

func completeGate(ctx context.Context, env runstate.Env, id, action string, opts GateOptions) (res GateResult, err error) {
	rec, err := claimGate(ctx, env, id, action, opts)
	res.Gate = rec
	if err != nil {
		return res, err
	}
	defer func() {
		if err != nil {
			// Nothing decided: the claim must not hold the gate shut for
			// a repeat of this command or the other one.
			releaseClaim(ctx, env, rec)
		}
	}()
	cause := fmt.Sprintf("aborted at the gate by %s", opts.By)
	approval, err := json.Marshal(map[string]any{"approved_by": opts.By, "approved_at": rec.CompletedAt})
	if err != nil {
		return res, err
	}
	if !rec.Local {
		tokens := opts.StepFunctions
		if tokens == nil {
			if tokens, err = NewStepFunctions(ctx); err != nil {
				return res, err
			}
		}
		if action == gateApprove {
			err = tokens.SendTaskSuccess(ctx, rec.TaskToken, string(approval))
		} else {
			err = tokens.SendTaskFailure(ctx, rec.TaskToken, gate.NameAbortedByOperator, cause)
		}
		if err != nil {
			return res, fmt.Errorf("workflow: %s %s: Step Functions: %w", action, id, err)
		}
		res.SentTo = rec.Execution
		return res, nil
	}
	if rec.Suspended == nil {
		// The run that opened the gate stopped before recording itself (an
		// approve was refused in claimGate): nothing to resume. Abort needs
		// no run: the step itself.
		ab, err := workflow.Abort(ctx, env, workflow.AbortInput{Migration: rec.Migration, Error: map[string]any{"Error": gate.NameAbortedByOperator, "Cause": cause}})
		res.Abort = &ab
		return res, err
	}
	return resumeGate(ctx, env, rec, action, approval, cause, opts)
}

// releaseClaim withdraws a claim that decided nothing, if it is still
// this one's; best effort, within its own short deadline.
func releaseClaim(ctx context.Context, env runstate.Env, claimed gate.Record) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	id := claimed.Migration.MigrationID
	rec, info, err := gate.Read(ctx, env, id)
	if err != nil || rec.Completed != claimed.Completed || !rec.CompletedAt.Equal(claimed.CompletedAt) {
		return
	}
	if d, err := runstate.DecisionOf(ctx, env, rec.Migration); err != nil || d != "" {
		return
	}
	rec.Completed, rec.CompletedBy, rec.CompletedAt = "", "", time.Time{}
	if b, err := json.Marshal(rec); err == nil {
		_, _ = env.Store.PutIfMatch(ctx, env.StagingOf(id).Gate(), b, info.ETag)
	}
}

// claimGate checks that migration id waits at the gate and claims it for
// action, once: a decided migration is refused (ErrDecided), and so is a
// gate another approve or abort claimed within gateClaimLease.
func claimGate(ctx context.Context, env runstate.Env, id, action string, opts GateOptions) (gate.Record, error) {
	rec, info, err := gate.Read(ctx, env, id)
	if err != nil {
		// Abort's cleanup removes the record; its decision stays.
		if d, derr := runstate.DecisionOf(ctx, env, runstate.Migration{Run: runstate.Run{MigrationID: id}}); errors.Is(err, gate.ErrNotAtGate) && derr == nil && d != "" {
			return rec, decidedError(id, d)
		}
		return rec, err
	}
	m := rec.Migration
	if opts.Pointer != "" && opts.Pointer != m.Pointer {
		return rec, fmt.Errorf("%w: migration %s is of pointer %s, not %s; nothing changed", gate.ErrNotAtGate, id, m.Pointer, opts.Pointer)
	}
	d, err := runstate.DecisionOf(ctx, env, m)
	if err != nil {
		return rec, err
	}
	if d != "" {
		return rec, decidedError(id, d)
	}
	if rec.Local && rec.Suspended == nil && action == gateApprove {
		return rec, fmt.Errorf("%w: the run that opened the gate of %s did not record its execution, so it cannot go on to Flip; abort it and migrate again", gate.ErrNotAtGate, id)
	}
	now := time.Now().UTC()
	if rec.Completed != "" && now.Sub(rec.CompletedAt) < gateClaimLease {
		return rec, fmt.Errorf("%w: %s of migration %s by %s at %s is under way; nothing changed", runstate.ErrDecided, rec.Completed, id, rec.CompletedBy, rec.CompletedAt.Format(time.RFC3339))
	}
	rec.Completed, rec.CompletedBy, rec.CompletedAt = action, opts.By, now
	b, err := json.Marshal(rec)
	if err != nil {
		return rec, err
	}
	if _, err := env.Store.PutIfMatch(ctx, env.StagingOf(id).Gate(), b, info.ETag); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) {
			return rec, fmt.Errorf("%w: another approve or abort of migration %s came first; nothing changed", runstate.ErrDecided, id)
		}
		return rec, fmt.Errorf("workflow: claim the gate of %s: %w", id, err)
	}
	return rec, nil
}

func decidedError(id, d string) error {
	if d == layout.DecisionFlip {
		return fmt.Errorf("%w: migration %s was approved and flipped already; nothing changed", runstate.ErrDecided, id)
	}
	return fmt.Errorf("%w: migration %s was aborted already; nothing changed", runstate.ErrDecided, id)
}

// resumeGate resumes the suspended local run from the gate, with the same
// definition and steps as the run that stopped there.
func resumeGate(ctx context.Context, env runstate.Env, rec gate.Record, action string, approval json.RawMessage, cause string, opts GateOptions) (GateResult, error) {
	res := GateResult{Gate: rec}
	m, err := localrun.Load(rec.Topic)
	if err != nil {
		return res, err
	}
	publish, err := runstate.Publisher(ctx, opts.Publish, rec.Topic)
	if err != nil {
		return res, err
	}
	c := asl.Completion{Token: rec.TaskToken, Output: approval}
	if action == gateAbort {
		c = asl.Completion{Token: rec.TaskToken, Error: gate.NameAbortedByOperator, Cause: cause}
	}
	// Abort's own outcome is in its state's output: the execution fails
	// (NotifyFailure, then Fail) whether Abort did its work or not.
	var mu sync.Mutex
	var aborted *abortState
	obs := asl.ObserverFuncs{Exited: func(ev asl.StateEvent) {
		if opts.Observer != nil {
			opts.Observer.StateExited(ev)
		}
		if ev.Name == statemachine.StepAbort && ev.Output != nil {
			var st abortState
			if json.Unmarshal(ev.Output, &st) == nil {
				mu.Lock()
				aborted = &st
				mu.Unlock()
			}
		}
	}, Entered: func(ev asl.StateEvent) {
		if opts.Observer != nil {
			opts.Observer.StateEntered(ev)
		}
	}}
	out, runErr := asl.Resume(ctx, m, rec.Suspended, c, asl.Options{Tasks: localrun.Tasks(env, publish), Observer: obs})
	mu.Lock()
	defer mu.Unlock()
	if aborted != nil {
		res.Abort = &aborted.Abort
	}
	var ee *asl.ExecutionError
	switch {
	case runErr == nil:
		res.Output = out
		if action == gateAbort {
			return res, fmt.Errorf("workflow: abort %s: the run went on without aborting", rec.Migration.MigrationID)
		}
		return res, nil
	case action == gateApprove && errors.As(runErr, &ee) && ee.Name == asl.ErrTimeout:
		return res, fmt.Errorf("%w: migration %s waited past %s and was aborted instead (%s)", gate.ErrGateTimedOut, rec.Migration.MigrationID, rec.ExpiresAt.Format(time.RFC3339), abortSummary(aborted))
	case action == gateAbort && errors.As(runErr, &ee) && (ee.Name == gate.NameAbortedByOperator || ee.Name == asl.ErrTimeout):
		// Aborted by the abort or, past the gate's timeout, by the timeout:
		// either way what was asked for, if Abort did its work.
		if aborted == nil || aborted.AbortError != nil {
			return res, fmt.Errorf("workflow: abort %s: the workflow.Abort step failed: %s", rec.Migration.MigrationID, abortSummary(aborted))
		}
		return res, nil
	}
	return res, fmt.Errorf("workflow: %s %s: %w (%s)", action, rec.Migration.MigrationID, runErr, abortSummary(aborted))
}

// abortState is the part of the state output after Abort that says how it
// went.
type abortState struct {
	Abort      workflow.AbortOutput           `json:"abort"`
	AbortError *struct{ Error, Cause string } `json:"abort_error"`
}

func abortSummary(a *abortState) string {
	switch {
	case a == nil:
		return "Abort did not run"
	case a.AbortError != nil:
		return "Abort failed: " + a.AbortError.Error + ": " + a.AbortError.Cause
	}
	return fmt.Sprintf("Abort removed %d target and %d staging objects and released the lock", a.Abort.TargetObjects, a.Abort.StagingObjects)
}
