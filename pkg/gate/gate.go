// Package gate owns the gate of a gated cut-over (input postpone_flip): the
// record a migration waiting for an operator keeps in its staging
// (<staging>/<id>/gate.json), the notice that says how to approve or abort
// it, and the names its failures answer to. The Gate step (pkg/workflow)
// writes the record; approve and abort (pkg/operator) read and complete it.
package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

// How it runs (input postpone_flip): after Verify the state machine
// waits in its Gate state, a callback task (.waitForTaskToken), with the
// target verified, the source frozen (Freeze fenced RockLake's writer, and
// any write since makes Flip refuse) and the lock held. The Gate step keeps
// the task token in staging (<staging>/<id>/gate.json), so that
// `rocklake-migrate approve ID` or `abort ID` completes it without anyone
// copying a token: on AWS by SendTaskSuccess or SendTaskFailure, for a run
// of the CLI by resuming the suspended local execution (pkg/asl) from the
// gate. Either way the definition's own states run after it: Flip and
// NotifySuccess, or Abort and NotifyFailure.

// The gate's named errors (errname).
var (
	// ErrNotAtGate: no migration of that id waits at the gate (unknown id,
	// a migration not postponed, another pointer or staging); nothing
	// changed.
	ErrNotAtGate = errname.New("gate", "NotAtGate", "")
	// ErrGateTimedOut: the gate's Timeout passed before approve; the
	// migration was aborted instead of flipped.
	ErrGateTimedOut = errname.New("gate", "GateTimedOut", "")
)

// Names of failures that no error carries: the state machine and the
// history give them as they give the errors' names.
const (
	// NameAbortedByOperator: the error an abort at the gate fails the Gate
	// state with (SendTaskFailure's error), which its Catch sends to Abort.
	NameAbortedByOperator = "AbortedByOperator"
)

// Timeout is how long a migration may wait at the gate: the Gate
// state's TimeoutSeconds, after which it goes to Abort. The wait is part of
// the execution, whose timeout the lock's lease covers (LockLease), so the
// lock outlives the wait and the Flip after it.
const Timeout = 20 * time.Hour

// Record is <staging>/<id>/gate.json: a migration waiting at the gate
// and what completes it.
type Record struct {
	Migration runstate.Migration `json:"migration"`
	Staging   string             `json:"staging"`
	TaskToken string             `json:"task_token"`
	Execution string             `json:"execution"`
	Topic     string             `json:"topic,omitempty"`
	OpenedAt  time.Time          `json:"opened_at"`
	// ExpiresAt is OpenedAt + Timeout: then the migration is aborted.
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

// Subject is the subject of the gate's message.
func Subject(id string) string {
	return "rocklake-migrate: migration " + id + " awaits approve or abort"
}

// Publish sends the gate's notice to the record's topic (env.Publish, else
// SNS).
func Publish(ctx context.Context, env runstate.Env, rec Record) error {
	publish, err := runstate.Publisher(ctx, env.Publish, rec.Topic)
	if err != nil {
		return err
	}
	return publish(ctx, rec.Topic, Subject(rec.Migration.MigrationID), Instructions(rec))
}

// Instructions says what waits at the gate and how to approve or
// abort it: the CLI's commands and, for a Step Functions execution, the
// AWS CLI's.
func Instructions(rec Record) string {
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

// Read reads the gate record of migration id and its version (for a
// conditional write); ErrNotAtGate if none.
func Read(ctx context.Context, env runstate.Env, id string) (Record, blob.Info, error) {
	var rec Record
	url := env.StagingOf(id).Gate()
	b, info, err := env.Store.Get(ctx, url)
	if errors.Is(err, blob.ErrNotFound) {
		return rec, info, fmt.Errorf("%w: no migration %s waits at the gate (no %s); nothing changed", ErrNotAtGate, id, url)
	}
	if err != nil {
		return rec, info, fmt.Errorf("gate: read %s: %w", url, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return rec, info, fmt.Errorf("gate: decode %s: %w", url, err)
	}
	return rec, info, nil
}

// RecordSuspension keeps the suspended local execution in the gate record
// of migration id, for approve and abort to resume: the CLI's migrate, once
// its run stopped at the gate.
func RecordSuspension(ctx context.Context, env runstate.Env, id string, s *asl.Suspended) (Record, error) {
	rec, info, err := Read(ctx, env, id)
	if err != nil {
		return rec, err
	}
	if rec.TaskToken != s.Token {
		return rec, fmt.Errorf("gate: the gate of %s holds another task token than the execution that stopped there", id)
	}
	rec.Suspended = s
	b, err := json.Marshal(rec)
	if err != nil {
		return rec, err
	}
	if _, err := env.Store.PutIfMatch(ctx, env.StagingOf(id).Gate(), b, info.ETag); err != nil {
		return rec, fmt.Errorf("gate: record the suspended run of %s: %w", id, err)
	}
	return rec, nil
}
