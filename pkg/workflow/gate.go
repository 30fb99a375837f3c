package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/notify"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
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
// that lost its lock (lock.ErrLost).
func Gate(ctx context.Context, env Env, in GateInput) (GateOutput, error) {
	m := in.Migration
	out := GateOutput{MigrationID: m.MigrationID}
	if in.TaskToken == "" {
		return out, fmt.Errorf("workflow: gate %s: no task token", m.MigrationID)
	}
	if d, err := DecisionOf(ctx, env, m); err != nil {
		return out, err
	} else if d != "" {
		return out, fmt.Errorf("%w: migration %s decided to %s already", ErrDecided, m.MigrationID, d)
	}
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
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
	return out, env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).Gate(), rec)
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

// ReadGate reads the gate record of migration id and its version (for a
// conditional write); ErrNotAtGate if none.
func ReadGate(ctx context.Context, env Env, id string) (GateRecord, blob.Info, error) {
	var rec GateRecord
	url := env.StagingOf(id).Gate()
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
	rec, info, err := ReadGate(ctx, env, id)
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
	if _, err := env.Store.PutIfMatch(ctx, env.StagingOf(id).Gate(), b, info.ETag); err != nil {
		return rec, fmt.Errorf("workflow: record the suspended run of %s: %w", id, err)
	}
	return rec, nil
}

// Publish sends an SNS message for the definition's sns:publish tasks.
type Publish func(ctx context.Context, topic, subject, message string) error

// SNSPublish is Publish through SNS (pkg/notify), configured by the
// standard AWS environment.
func SNSPublish(ctx context.Context) (Publish, error) {
	pub, err := notify.NewPublisher(ctx, notify.Options{})
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, topic, subject, msg string) error {
		_, err := pub.PublishOutcome(ctx, topic, subject, msg)
		return err
	}, nil
}
