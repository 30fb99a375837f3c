package workflow

import (
	"context"
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/gate"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

// GateInput is what the Gate state sends: the migration, its task token and
// where to say that it waits.
type GateInput struct {
	Migration runstate.Migration `json:"migration"`
	TaskToken string             `json:"task_token"`
	// Execution is $$.Execution.Id: the execution to complete.
	Execution string `json:"execution"`
	// Topic gets the gate's message ("" for none).
	Topic string `json:"topic,omitempty"`
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
func Gate(ctx context.Context, env runstate.Env, in GateInput) (GateOutput, error) {
	m := in.Migration
	out := GateOutput{MigrationID: m.MigrationID}
	if in.TaskToken == "" {
		return out, fmt.Errorf("workflow: gate %s: no task token", m.MigrationID)
	}
	if d, err := runstate.DecisionOf(ctx, env, m); err != nil {
		return out, err
	} else if d != "" {
		return out, fmt.Errorf("%w: migration %s decided to %s already", runstate.ErrDecided, m.MigrationID, d)
	}
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return out, err
	}
	now := time.Now().UTC()
	rec := gate.Record{
		Migration: m, Staging: env.Staging, TaskToken: in.TaskToken, Execution: in.Execution, Topic: in.Topic,
		OpenedAt: now, ExpiresAt: now.Add(gate.Timeout), Local: env.Local,
	}
	out.ExpiresAt = rec.ExpiresAt
	if in.Topic != "" {
		// A message that fails is a warning: the record is what approve
		// and abort need, and the execution shows the wait.
		if err := gate.Publish(ctx, env, rec); err != nil {
			rec.NotifyError = err.Error()
			out.NotifyError = rec.NotifyError
		}
	}
	return out, env.Store.PutJSON(ctx, env.StagingOf(m.MigrationID).Gate(), rec)
}
