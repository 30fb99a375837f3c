package workflow

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/notify"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// LocalRegion is the Region of a local run's console links: that of
// pkg/asl's default state machine ARN, which a local execution id is built on.
const LocalRegion = "us-east-1"

// LocalSubstitutions fill the definitions' placeholders for an in-process run:
// each function's name stands for its ARN.
func LocalSubstitutions(topic string) map[string]string {
	return map[string]string{
		"CheckFunctionArn": "check", "ExportFunctionArn": "export", "ImportFunctionArn": "import",
		"InPlaceFunctionArn": "inplace", "TopicArn": topic, "Region": LocalRegion,
	}
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

// LocalTasks runs the definition's tasks in-process: the same steps the
// Lambdas host, errors named as the Lambdas name them.
func LocalTasks(env Env, publish Publish) asl.Funcs {
	env.Local, env.Publish = true, publish
	funcs := asl.Funcs{}
	for fn, hosted := range Functions {
		allowed := map[string]bool{}
		for _, s := range hosted {
			allowed[s] = true
		}
		funcs[fn] = func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			var req Request
			if err := json.Unmarshal(in, &req); err != nil {
				return nil, &asl.TaskError{Name: NameStepFailed, Cause: err.Error(), Err: err}
			}
			if !allowed[req.Step] {
				return nil, &asl.TaskError{Name: NameStepFailed, Cause: fmt.Sprintf("function %s does not run step %q", fn, req.Step)}
			}
			out, err := Run(ctx, env, req.Step, req.Input)
			if err != nil {
				return nil, &asl.TaskError{Name: ErrorName(err), Cause: err.Error(), Err: err}
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
	return funcs
}

// LoadLocal loads the migration definition with LocalSubstitutions.
func LoadLocal(topic string) (*asl.Machine, error) {
	return LoadLocalDefinition(statemachine.Migration, topic)
}

// LoadLocalDefinition loads one of statemachine's definitions with
// LocalSubstitutions.
func LoadLocalDefinition(def []byte, topic string) (*asl.Machine, error) {
	sub, err := asl.Substitute(def, LocalSubstitutions(topic))
	if err != nil {
		return nil, err
	}
	return asl.Load(sub)
}
