package workflow

import (
	"context"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/notify"
)

// DriftInput is the scheduled drift check's input (statemachine/drift.asl.json,
// from the EventBridge schedule).
type DriftInput struct {
	Pointer string `json:"pointer"`
	// Expect 0 (left out): the expected-version parameter's value, read now.
	Expect uint64 `json:"expect,omitempty"`
	// Topic, when set, gets one SNS message if there are findings.
	Topic string `json:"topic,omitempty"`
}

// DriftOutput is the report and whether an alert went out.
type DriftOutput struct {
	Report    drift.Report `json:"report"`
	Healthy   bool         `json:"healthy"`
	MessageID string       `json:"message_id,omitempty"`
}

// Drift compares the pointer's catalog with the version the deployed release
// expects and looks for leftovers of aborted runs, telling them from what the
// migration holding the lock uses; findings are the output, not an error, so
// the schedule's execution fails only when it cannot look.
func Drift(ctx context.Context, env runstate.Env, in DriftInput) (DriftOutput, error) {
	expect, err := runstate.ResolveVersion(ctx, env, in.Expect)
	if err != nil {
		return DriftOutput{}, err
	}
	active, unknown, silent := lock.Holder(ctx, env.Store, in.Pointer, time.Now())
	if silent != nil {
		return DriftOutput{}, silent
	}
	rep, err := drift.Find(ctx, env.Store, drift.Options{Pointer: in.Pointer, Expect: expect, Staging: env.Staging,
		Active: active, ActiveUnknown: unknown, Store: env.SlateDB})
	if err != nil {
		return DriftOutput{}, err
	}
	out := DriftOutput{Report: rep, Healthy: rep.Healthy}
	if in.Topic != "" && !rep.Healthy {
		pub, err := notify.NewPublisher(ctx, notify.Options{})
		if err != nil {
			return out, err
		}
		if out.MessageID, err = pub.PublishDrift(ctx, in.Topic, rep); err != nil {
			return out, err
		}
	}
	return out, nil
}
