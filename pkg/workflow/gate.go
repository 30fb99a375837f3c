package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sfn"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/awsconfig"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// The gated cut-over (input postpone_flip): after Verify the state machine
// waits in its Gate state, a callback task (.waitForTaskToken), with the
// target verified, the source frozen (Freeze fenced RockLake's writer, and
// any write since makes Flip refuse) and the lock held. The Gate step keeps
// the task token in staging (<staging>/<id>/gate.json), so that
// `rocklake-migrate approve ID` or `abort ID` completes it without anyone
// copying a token: on AWS by SendTaskSuccess or SendTaskFailure, for a run
// of the CLI by resuming the suspended local execution (pkg/asl) from the
// gate. Either way the definition's own states run after it: Flip and
// NotifySuccess, or Abort and NotifyFailure.

// GateTimeout is how long a migration may wait at the gate: the Gate
// state's TimeoutSeconds, after which it goes to Abort. The wait is part of
// the execution, whose timeout the lock's lease covers (LockLease), so the
// lock outlives the wait and the Flip after it.
const GateTimeout = 20 * time.Hour

// NameAbortedByOperator is the error an abort at the gate fails the Gate
// state with (SendTaskFailure's error), which its Catch sends to Abort.
const NameAbortedByOperator = "AbortedByOperator"

// ErrNotAtGate: no migration of that id waits at the gate (unknown id, a
// migration not postponed, another pointer or staging); nothing changed.
var ErrNotAtGate = errname.New("workflow", NameNotAtGate, "")

// ErrGateTimedOut: the gate's GateTimeout passed before approve; the
// migration was aborted instead of flipped.
var ErrGateTimedOut = errname.New("workflow", NameGateTimedOut, "")

// gateClaimLease is how long an approve or abort that claimed the gate
// keeps another from completing it: longer than Flip or Abort with their
// retries. A command that died after its claim can be repeated after it.
const gateClaimLease = 15 * time.Minute

// GateInput is what the Gate state sends: the migration, its task token and
// where to say that it waits.
type GateInput struct {
	Migration Migration `json:"migration"`
	TaskToken string    `json:"task_token"`
	// Execution is $$.Execution.Id: the execution to complete.
	Execution string `json:"execution"`
	// Topic gets the gate's message ("" for none).
	Topic string `json:"topic,omitempty"`
}

// GateRecord is <staging>/<id>/gate.json: a migration waiting at the gate
// and what completes it.
type GateRecord struct {
	Migration Migration `json:"migration"`
	Staging   string    `json:"staging"`
	TaskToken string    `json:"task_token"`
	Execution string    `json:"execution"`
	Topic     string    `json:"topic,omitempty"`
	OpenedAt  time.Time `json:"opened_at"`
	// ExpiresAt is OpenedAt + GateTimeout: then the migration is aborted.
	ExpiresAt time.Time `json:"expires_at"`
	// Local: the gate of a run of the CLI, whose token is pkg/asl's; the
	// CLI records the suspended execution (Suspended) once it stopped.
	Local     bool           `json:"local,omitempty"`
	Suspended *asl.Suspended `json:"suspended,omitempty"`
	// NotifyError: the gate's message could not be sent.
	NotifyError string `json:"notify_error,omitempty"`
	// Completed is "approve" or "abort" once a command claimed the gate.
	Completed   string    `json:"completed,omitempty"`
	CompletedBy string    `json:"completed_by,omitempty"`
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// GateOutput is the Gate step's answer (the state's result is the token's).
type GateOutput struct {
	MigrationID string    `json:"migration_id"`
	ExpiresAt   time.Time `json:"expires_at"`
	NotifyError string    `json:"notify_error,omitempty"`
}

// Gate opens the gate: it confirms that the migration still holds its
// lock (whose lease covers the execution, the wait included), keeps the
// task token in staging and sends the message saying how to approve or
// abort. A migration already decided is refused (ErrDecided), and so is one
// that lost its lock (ErrLockLost).
func Gate(ctx context.Context, env Env, in GateInput) (GateOutput, error) {
	m := in.Migration
	out := GateOutput{MigrationID: m.MigrationID}
	if in.TaskToken == "" {
		return out, fmt.Errorf("workflow: gate %s: no task token", m.MigrationID)
	}
	if d, err := decision(ctx, env, m); err != nil {
		return out, err
	} else if d != "" {
		return out, fmt.Errorf("%w: migration %s decided to %s already", ErrDecided, m.MigrationID, d)
	}
	if err := confirmLock(ctx, env, m.Pointer, m.MigrationID); err != nil {
		return out, err
	}
	now := time.Now().UTC()
	rec := GateRecord{
		Migration: m, Staging: env.Staging, TaskToken: in.TaskToken, Execution: in.Execution, Topic: in.Topic,
		OpenedAt: now, ExpiresAt: now.Add(GateTimeout), Local: env.Local,
	}
	out.ExpiresAt = rec.ExpiresAt
	if in.Topic != "" {
		// A message that fails is a warning: the record is what approve
		// and abort need, and the execution shows the wait.
		if err := publishGate(ctx, env, rec); err != nil {
			rec.NotifyError = err.Error()
			out.NotifyError = rec.NotifyError
		}
	}
	return out, putJSON(ctx, env.Store, env.staging(m.MigrationID).Gate(), rec)
}

// GateSubject is the subject of the gate's message.
func GateSubject(id string) string {
	return "rocklake-migrate: migration " + id + " awaits approve or abort"
}

func publishGate(ctx context.Context, env Env, rec GateRecord) error {
	publish := env.Publish
	if publish == nil {
		var err error
		if publish, err = SNSPublish(ctx); err != nil {
			return err
		}
	}
	return publish(ctx, rec.Topic, GateSubject(rec.Migration.MigrationID), GateInstructions(rec))
}

// GateInstructions says what waits at the gate and how to approve or
// abort it: the CLI's commands and, for a Step Functions execution, the
// AWS CLI's.
func GateInstructions(rec GateRecord) string {
	m := rec.Migration
	var b strings.Builder
	then := "then Step Functions aborts it"
	if rec.Local {
		then = "after that, approve aborts it instead"
	}
	fmt.Fprintf(&b, "Migration %s of %s waits at the gate until %s (%s).\n", m.MigrationID, m.Pointer, rec.ExpiresAt.Format(time.RFC3339), then)
	fmt.Fprintf(&b, "The new catalog %s (%s) is verified; the source %s (%s) is frozen: any write to it now makes the flip refuse. The pointer is unchanged and the migration holds its lock.\n\n", m.Target, m.To, m.Source, m.From)
	fmt.Fprintf(&b, "approve (flip the pointer):              rocklake-migrate approve %s --pointer %s --staging %s\n", m.MigrationID, m.Pointer, rec.Staging)
	fmt.Fprintf(&b, "abort (remove the new catalog, unfreeze): rocklake-migrate abort %s --pointer %s --staging %s\n", m.MigrationID, m.Pointer, rec.Staging)
	if !rec.Local {
		fmt.Fprintf(&b, "\nor with the AWS CLI (execution %s):\n", rec.Execution)
		fmt.Fprintf(&b, "  aws stepfunctions send-task-success --task-token '%s' --task-output '{\"approved_by\":\"YOUR NAME\"}'\n", rec.TaskToken)
		fmt.Fprintf(&b, "  aws stepfunctions send-task-failure --task-token '%s' --error %s --cause 'YOUR NAME: WHY'\n", rec.TaskToken, NameAbortedByOperator)
		if link := consoleLink(rec.Execution); link != "" {
			fmt.Fprintf(&b, "console: %s\n", link)
		}
	}
	return b.String()
}

// consoleLink is the Step Functions console page of an execution ARN
// (arn:aws:states:REGION:ACCOUNT:execution:MACHINE:NAME), "" for another.
func consoleLink(arn string) string {
	parts := strings.Split(arn, ":")
	if len(parts) < 7 || parts[0] != "arn" || parts[2] != "states" || parts[5] != "execution" || parts[3] == "" {
		return ""
	}
	return fmt.Sprintf("https://%s.console.aws.amazon.com/states/home?region=%s#/v2/executions/details/%s", parts[3], parts[3], arn)
}

// ReadGate reads the gate record of migration id; ErrNotAtGate if none.
func ReadGate(ctx context.Context, env Env, id string) (GateRecord, error) {
	rec, _, err := readGate(ctx, env, id)
	return rec, err
}

func readGate(ctx context.Context, env Env, id string) (GateRecord, blob.Info, error) {
	var rec GateRecord
	url := env.staging(id).Gate()
	b, info, err := env.Store.Get(ctx, url)
	if errors.Is(err, blob.ErrNotFound) {
		return rec, info, fmt.Errorf("%w: no migration %s waits at the gate (no %s); nothing changed", ErrNotAtGate, id, url)
	}
	if err != nil {
		return rec, info, fmt.Errorf("workflow: read %s: %w", url, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, info, fmt.Errorf("workflow: decode %s: %w", url, err)
	}
	return rec, info, nil
}

// RecordSuspension keeps the suspended local execution in the gate record
// of migration id, for approve and abort to resume: the CLI's migrate, once
// its run stopped at the gate.
func RecordSuspension(ctx context.Context, env Env, id string, s *asl.Suspended) (GateRecord, error) {
	rec, info, err := readGate(ctx, env, id)
	if err != nil {
		return rec, err
	}
	if rec.TaskToken != s.Token {
		return rec, fmt.Errorf("workflow: the gate of %s holds another task token than the execution that stopped there", id)
	}
	rec.Suspended = s
	b, err := json.Marshal(rec)
	if err != nil {
		return rec, err
	}
	if _, err := env.Store.PutIfMatch(ctx, env.staging(id).Gate(), b, info.ETag); err != nil {
		return rec, fmt.Errorf("workflow: record the suspended run of %s: %w", id, err)
	}
	return rec, nil
}

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
	Publish Publish
	// Observer watches a local run resume.
	Observer asl.Observer
	// StepFunctions completes the gate of a Step Functions execution
	// (default: NewStepFunctions).
	StepFunctions TaskTokens
}

// GateResult is what completing the gate did.
type GateResult struct {
	Gate GateRecord
	// SentTo is the Step Functions execution the completion was sent to,
	// where the migration goes on; "" when a local run was resumed here.
	SentTo string
	// Output is a resumed local run's output after approve.
	Output json.RawMessage
	// Abort is what Abort removed after abort, in a resumed local run.
	Abort *AbortOutput
}

const (
	gateApprove = "approve"
	gateAbort   = "abort"
)

// Approve completes the gate of migration id with success: the definition
// goes on to Flip and NotifySuccess. A Flip that refuses (the source took
// a write at the gate, the pointer moved) goes to Abort, and Approve
// returns its error.
func Approve(ctx context.Context, env Env, id string, opts GateOptions) (GateResult, error) {
	return completeGate(ctx, env, id, gateApprove, opts)
}

// AbortGate completes the gate of migration id with the error
// AbortedByOperator: the definition goes on to Abort (the new catalog,
// staging and checkpoint removed, the lock released) and NotifyFailure.
func AbortGate(ctx context.Context, env Env, id string, opts GateOptions) (GateResult, error) {
	return completeGate(ctx, env, id, gateAbort, opts)
}

func completeGate(ctx context.Context, env Env, id, action string, opts GateOptions) (res GateResult, err error) {
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
			err = tokens.SendTaskFailure(ctx, rec.TaskToken, NameAbortedByOperator, cause)
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
		ab, err := Abort(ctx, env, AbortInput{Migration: rec.Migration, Error: map[string]any{"Error": NameAbortedByOperator, "Cause": cause}})
		res.Abort = &ab
		return res, err
	}
	return resumeGate(ctx, env, rec, action, approval, cause, opts)
}

// releaseClaim withdraws a claim that decided nothing, if it is still
// this one's; best effort, within its own short deadline.
func releaseClaim(ctx context.Context, env Env, claimed GateRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	id := claimed.Migration.MigrationID
	rec, info, err := readGate(ctx, env, id)
	if err != nil || rec.Completed != claimed.Completed || !rec.CompletedAt.Equal(claimed.CompletedAt) {
		return
	}
	if d, err := decision(ctx, env, rec.Migration); err != nil || d != "" {
		return
	}
	rec.Completed, rec.CompletedBy, rec.CompletedAt = "", "", time.Time{}
	if b, err := json.Marshal(rec); err == nil {
		_, _ = env.Store.PutIfMatch(ctx, env.staging(id).Gate(), b, info.ETag)
	}
}

// claimGate checks that migration id waits at the gate and claims it for
// action, once: a decided migration is refused (ErrDecided), and so is a
// gate another approve or abort claimed within gateClaimLease.
func claimGate(ctx context.Context, env Env, id, action string, opts GateOptions) (GateRecord, error) {
	rec, info, err := readGate(ctx, env, id)
	if err != nil {
		// Abort's cleanup removes the record; its decision stays.
		if d, derr := decision(ctx, env, Migration{MigrationID: id}); errors.Is(err, ErrNotAtGate) && derr == nil && d != "" {
			return rec, decidedError(id, d)
		}
		return rec, err
	}
	m := rec.Migration
	if opts.Pointer != "" && opts.Pointer != m.Pointer {
		return rec, fmt.Errorf("%w: migration %s is of pointer %s, not %s; nothing changed", ErrNotAtGate, id, m.Pointer, opts.Pointer)
	}
	d, err := decision(ctx, env, m)
	if err != nil {
		return rec, err
	}
	if d != "" {
		return rec, decidedError(id, d)
	}
	if rec.Local && rec.Suspended == nil && action == gateApprove {
		return rec, fmt.Errorf("%w: the run that opened the gate of %s did not record its execution, so it cannot go on to Flip; abort it and migrate again", ErrNotAtGate, id)
	}
	now := time.Now().UTC()
	if rec.Completed != "" && now.Sub(rec.CompletedAt) < gateClaimLease {
		return rec, fmt.Errorf("%w: %s of migration %s by %s at %s is under way; nothing changed", ErrDecided, rec.Completed, id, rec.CompletedBy, rec.CompletedAt.Format(time.RFC3339))
	}
	rec.Completed, rec.CompletedBy, rec.CompletedAt = action, opts.By, now
	b, err := json.Marshal(rec)
	if err != nil {
		return rec, err
	}
	if _, err := env.Store.PutIfMatch(ctx, env.staging(id).Gate(), b, info.ETag); err != nil {
		if errors.Is(err, blob.ErrPreconditionFailed) {
			return rec, fmt.Errorf("%w: another approve or abort of migration %s came first; nothing changed", ErrDecided, id)
		}
		return rec, fmt.Errorf("workflow: claim the gate of %s: %w", id, err)
	}
	return rec, nil
}

func decidedError(id, d string) error {
	if d == layout.DecisionFlip {
		return fmt.Errorf("%w: migration %s was approved and flipped already; nothing changed", ErrDecided, id)
	}
	return fmt.Errorf("%w: migration %s was aborted already; nothing changed", ErrDecided, id)
}

// resumeGate resumes the suspended local run from the gate, with the same
// definition and steps as the run that stopped there.
func resumeGate(ctx context.Context, env Env, rec GateRecord, action string, approval json.RawMessage, cause string, opts GateOptions) (GateResult, error) {
	res := GateResult{Gate: rec}
	m, err := LoadLocal(rec.Topic)
	if err != nil {
		return res, err
	}
	publish := opts.Publish
	if publish == nil && rec.Topic != "" {
		if publish, err = SNSPublish(ctx); err != nil {
			return res, err
		}
	}
	c := asl.Completion{Token: rec.TaskToken, Output: approval}
	if action == gateAbort {
		c = asl.Completion{Token: rec.TaskToken, Error: NameAbortedByOperator, Cause: cause}
	}
	// Abort's own outcome is in its state's output: the execution fails
	// (NotifyFailure, then Fail) whether Abort did its work or not.
	var mu sync.Mutex
	var aborted *abortState
	obs := asl.ObserverFuncs{Exited: func(ev asl.StateEvent) {
		if opts.Observer != nil {
			opts.Observer.StateExited(ev)
		}
		if ev.Name == "Abort" && ev.Output != nil {
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
	out, runErr := asl.Resume(ctx, m, rec.Suspended, c, asl.Options{Tasks: LocalTasks(env, publish), Observer: obs})
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
		return res, fmt.Errorf("%w: migration %s waited past %s and was aborted instead (%s)", ErrGateTimedOut, rec.Migration.MigrationID, rec.ExpiresAt.Format(time.RFC3339), abortSummary(aborted))
	case action == gateAbort && errors.As(runErr, &ee) && (ee.Name == NameAbortedByOperator || ee.Name == asl.ErrTimeout):
		// Aborted by the abort or, past the gate's timeout, by the timeout:
		// either way what was asked for, if Abort did its work.
		if aborted == nil || aborted.AbortError != nil {
			return res, fmt.Errorf("workflow: abort %s: the Abort step failed: %s", rec.Migration.MigrationID, abortSummary(aborted))
		}
		return res, nil
	}
	return res, fmt.Errorf("workflow: %s %s: %w (%s)", action, rec.Migration.MigrationID, runErr, abortSummary(aborted))
}

// abortState is the part of the state output after Abort that says how it
// went.
type abortState struct {
	Abort      AbortOutput                    `json:"abort"`
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
