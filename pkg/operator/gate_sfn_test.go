package operator_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/gate"
	"github.com/rocklake/rocklake-migrate/pkg/operator"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sfn"
	sfntypes "github.com/aws/aws-sdk-go-v2/service/sfn/types"

	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// A gate on Step Functions: the token the Gate step keeps is one a Step
// Functions engine issued, and approve and abort complete it with
// SendTaskSuccess and SendTaskFailure. The engine is moto's (its state
// machine execution mode, in the SNS emulator's moto_server): its waiting
// task publishes the token, as the Gate Lambda gets it; Lambda itself
// does not run there, so the test calls the Gate step as the Lambda would.
func TestGateOnStepFunctions(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	moto := snsserver.Start(t)
	moto.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_SFN", moto.Endpoint())
	enable, _ := json.Marshal(map[string]any{"stepfunctions": map[string]any{"execute_state_machine": true}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, moto.Endpoint()+"/moto-api/config", bytes.NewReader(enable))
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	tokens := moto.CreateTopic(t, "tokens")
	alerts := moto.CreateTopic(t, "alerts")
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api := sfn.NewFromConfig(cfg)
	def, _ := json.Marshal(map[string]any{"StartAt": "Gate", "States": map[string]any{"Gate": map[string]any{
		"Type": "Task", "Resource": "arn:aws:states:::sns:publish.waitForTaskToken",
		"Parameters": map[string]any{"TopicArn": tokens, "Message.$": "$$.Task.Token"},
		"ResultPath": "$.gate", "End": true}}})
	sm, err := api.CreateStateMachine(ctx, &sfn.CreateStateMachineInput{Name: aws.String("gate"), Definition: aws.String(string(def)), RoleArn: aws.String("arn:aws:iam::123456789012:role/states")})
	if err != nil {
		t.Fatal(err)
	}

	// open starts an execution, waits for its token, and runs the Gate step
	// with it for a migration that holds the lock.
	open := func(name string) (runstate.Migration, string) {
		t.Helper()
		m, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, PostponeFlip: true})
		if err != nil {
			t.Fatal(err)
		}
		before := len(moto.Messages(t, tokens))
		ex, err := api.StartExecution(ctx, &sfn.StartExecutionInput{StateMachineArn: sm.StateMachineArn, Name: aws.String(name), Input: aws.String("{}")})
		if err != nil {
			t.Fatal(err)
		}
		var token string
		for range 100 {
			if msgs := moto.Messages(t, tokens); len(msgs) > before {
				token = msgs[before].Body
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if token == "" {
			t.Fatal("the execution published no task token")
		}
		if _, err := workflow.Gate(ctx, f.Env, workflow.GateInput{Migration: m, TaskToken: token, Execution: *ex.ExecutionArn, Topic: alerts}); err != nil {
			t.Fatalf("the Gate step: %v", err)
		}
		return m, *ex.ExecutionArn
	}
	finished := func(arn string) *sfn.DescribeExecutionOutput {
		t.Helper()
		for range 100 {
			d, err := api.DescribeExecution(ctx, &sfn.DescribeExecutionInput{ExecutionArn: aws.String(arn)})
			if err != nil {
				t.Fatal(err)
			}
			if d.Status != sfntypes.ExecutionStatusRunning {
				return d
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("execution %s still running", arn)
		return nil
	}

	m, arn := open("e1")
	rec, _, err := gate.Read(ctx, f.Env, m.MigrationID)
	if err != nil || rec.Local || rec.Execution != arn {
		t.Fatalf("gate record %+v, %v", rec, err)
	}
	msgs := moto.Messages(t, alerts)
	if len(msgs) != 1 || !strings.Contains(msgs[0].Body, "aws stepfunctions send-task-success --task-token '"+rec.TaskToken+"'") ||
		!strings.Contains(msgs[0].Body, "rocklake-migrate approve "+m.MigrationID) || !strings.Contains(msgs[0].Body, "console.aws.amazon.com") {
		t.Fatalf("the gate's message: %+v", msgs)
	}
	opts := operator.GateOptions{By: "ops", Pointer: f.Pointer}
	res, err := operator.Approve(ctx, f.Env, m.MigrationID, opts)
	if err != nil || res.SentTo != arn {
		t.Fatalf("approve: %+v, %v", res, err)
	}
	d := finished(arn)
	var out struct {
		Gate struct {
			ApprovedBy string `json:"approved_by"`
		} `json:"gate"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(d.Output)), &out); d.Status != sfntypes.ExecutionStatusSucceeded || err != nil || out.Gate.ApprovedBy != "ops" {
		t.Fatalf("the execution after approve: %s %s (%v)", d.Status, aws.ToString(d.Output), err)
	}
	if _, err := operator.AbortGate(ctx, f.Env, m.MigrationID, opts); !errors.Is(err, runstate.ErrDecided) {
		t.Fatalf("abort after approve was sent: %v", err)
	}

	// The execution goes on in Step Functions (here it ends); free the lock
	// as its Flip would, and abort a second one.
	if _, err := runstate.Unlock(ctx, f.Env, f.Pointer, m.MigrationID); err != nil {
		t.Fatal(err)
	}
	m, arn = open("e2")
	// A completion Step Functions refuses (here a token it never issued)
	// leaves the gate open for the next command.
	gateURL := layout.Staging{Root: f.Env.Staging, MigrationID: m.MigrationID}.Gate()
	rec, _, _ = gate.Read(ctx, f.Env, m.MigrationID)
	token := rec.TaskToken
	rec.TaskToken = "not-a-token"
	body, _ := json.Marshal(rec)
	if _, err := f.Env.Store.Put(ctx, gateURL, body); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.AbortGate(ctx, f.Env, m.MigrationID, opts); err == nil || !strings.Contains(err.Error(), "InvalidToken") {
		t.Fatalf("abort with a token Step Functions refuses: %v", err)
	}
	if rec, _, err = gate.Read(ctx, f.Env, m.MigrationID); err != nil || rec.Completed != "" {
		t.Fatalf("the refused abort kept its claim: %+v, %v", rec, err)
	}
	rec.TaskToken = token
	body, _ = json.Marshal(rec)
	if _, err := f.Env.Store.Put(ctx, gateURL, body); err != nil {
		t.Fatal(err)
	}
	if _, err := operator.AbortGate(ctx, f.Env, m.MigrationID, opts); err != nil {
		t.Fatalf("abort: %v", err)
	}
	if d := finished(arn); d.Status != sfntypes.ExecutionStatusFailed || aws.ToString(d.Error) != gate.NameAbortedByOperator {
		t.Fatalf("the execution after abort: %s %s", d.Status, aws.ToString(d.Error))
	}
}
