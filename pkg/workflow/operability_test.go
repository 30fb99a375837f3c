package workflow_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/rocklake/rocklake-migrate/internal/testenv/snsserver"
	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/function"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// runRollback runs statemachine/rollback.asl.json under pkg/asl, as the
// console would start it, with the in-process tasks.
func runRollback(t *testing.T, ctx context.Context, f seeded.Fixture, in workflow.RollbackInput, publish runstate.Publish) (json.RawMessage, []string, error) {
	t.Helper()
	m, err := localrun.LoadDefinition(statemachine.Rollback, "arn:aws:sns:us-east-1:000000000000:rocklake")
	if err != nil {
		t.Fatalf("load rollback.asl.json: %v", err)
	}
	raw, _ := json.Marshal(in)
	var states []string
	out, err := asl.Run(ctx, m, raw, asl.Options{
		Tasks:    localrun.Tasks(f.Env, publish),
		Observer: asl.ObserverFuncs{Entered: func(e asl.StateEvent) { states = append(states, e.Name) }},
		Sleep:    func(context.Context, time.Duration) error { return nil },
	})
	return out, states, err
}

// The rollback state machine runs the CLI's rollback: a dry run changes
// nothing, a real one makes the source current again, and each says so on
// the topic; a rollback that cannot be done leaves the pointer and names
// the pointer, the state, the error and the console link.
func TestRollbackDefinition(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	if _, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2}, nil); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	migrated, flipped, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)

	pub := &seeded.Published{}
	out, _, err := runRollback(t, ctx, f, workflow.RollbackInput{Pointer: f.Pointer, DryRun: true}, pub.Publish)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if p, ref, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != migrated.Catalog || ref.ETag != flipped.ETag {
		t.Fatalf("the dry run moved the pointer to %s", p.Catalog)
	}
	var state struct {
		Rollback workflow.RollbackOutput `json:"rollback"`
	}
	if err := json.Unmarshal(out, &state); err != nil || !state.Rollback.DryRun || state.Rollback.Catalog != f.Source || state.Rollback.From != migrated.Catalog {
		t.Fatalf("dry run output %s (%v)", out, err)
	}

	if _, _, err := runRollback(t, ctx, f, workflow.RollbackInput{Pointer: f.Pointer}, pub.Publish); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	if p, _, _ := pointer.Read(ctx, f.Env.Store, f.Pointer); p.Catalog != f.Source || p.FormatVersion != format.V1 {
		t.Fatalf("after the rollback the pointer names %s (%s)", p.Catalog, p.FormatVersion)
	}
	if len(pub.Subjects) != 2 || pub.Subjects[0] != "rocklake-migrate: rollback done" || pub.Subjects[1] != pub.Subjects[0] {
		t.Fatalf("notifications = %v", pub.Subjects)
	}
	var done struct {
		Pointer  string                  `json:"pointer"`
		Rollback workflow.RollbackOutput `json:"rollback"`
		Console  string                  `json:"console"`
	}
	if err := json.Unmarshal([]byte(pub.Bodies[1]), &done); err != nil || done.Pointer != f.Pointer || done.Rollback.Catalog != f.Source ||
		!strings.HasPrefix(done.Console, "https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/arn:aws:states:us-east-1:") {
		t.Fatalf("rollback notice %s (%v)", pub.Bodies[1], err)
	}

	// A pointer with no earlier version: nothing to roll back to.
	fresh := "s3://rocklake/OTHER"
	if _, err := pointer.Create(ctx, f.Env.Store, fresh, pointer.Pointer{Catalog: f.Source, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	_, before, _ := pointer.Read(ctx, f.Env.Store, fresh)
	failed := &seeded.Published{}
	_, states, err := runRollback(t, ctx, f, workflow.RollbackInput{Pointer: fresh}, failed.Publish)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != pointer.ErrNoPreviousVersion.ErrorName() {
		t.Fatalf("rollback of a pointer with one version: %v", err)
	}
	if _, after, _ := pointer.Read(ctx, f.Env.Store, fresh); after.ETag != before.ETag {
		t.Fatal("a failed rollback changed the pointer")
	}
	if states[len(states)-1] != "Failed" || len(failed.Subjects) != 1 || failed.Subjects[0] != "rocklake-migrate: rollback failed" {
		t.Fatalf("states %v, notifications %v", states, failed.Subjects)
	}
	var notice struct {
		Request     workflow.RollbackInput `json:"request"`
		FailedState string                 `json:"failed_state"`
		Error       struct{ Error, Cause string }
		Console     string `json:"console"`
	}
	if err := json.Unmarshal([]byte(failed.Bodies[0]), &notice); err != nil || notice.Request.Pointer != fresh || notice.FailedState != "Rollback" ||
		notice.Error.Error != pointer.ErrNoPreviousVersion.ErrorName() || !strings.Contains(notice.Console, "#/v2/executions/details/arn:aws:states:") {
		t.Fatalf("failure notice %s (%v)", failed.Bodies[0], err)
	}

	// The notice cannot be published: the execution fails all the same, in
	// the state the stack alarms on (no page is lost, none is doubled).
	_, states, err = runRollback(t, ctx, f, workflow.RollbackInput{Pointer: fresh}, func(context.Context, string, string, string) error {
		return fmt.Errorf("SNS is down")
	})
	if !errors.As(err, &ee) || ee.Name != pointer.ErrNoPreviousVersion.ErrorName() || states[len(states)-1] != "FailedUnreported" {
		t.Fatalf("unpublished notice: %v, states %v", err, states)
	}
}

// Every state that can fail a migration reaches the failure notice through
// a Pass that records its own name, so that the notice names the failed
// state; and an unpublishable notice ends in FailedUnreported, which the
// stack alarms on. (A state added later without this fails here.)
func TestEveryFailureNamesItsState(t *testing.T) {
	var def struct {
		TimeoutSeconds int
		States         map[string]struct {
			Type   string
			Result any
			Next   string
			Catch  []struct {
				ErrorEquals []string
				Next        string
			}
			Resource string
		}
	}
	if err := json.Unmarshal(statemachine.Migration, &def); err != nil {
		t.Fatal(err)
	}
	if def.TimeoutSeconds <= 0 {
		t.Error("the migration has no top-level TimeoutSeconds: a hung execution would never time out")
	}
	notices := map[string]bool{"NotifySuccess": true, "NotifyFailure": true}
	for name, st := range def.States {
		if (st.Type != "Task" && st.Type != "Map") || notices[name] {
			continue
		}
		if len(st.Catch) == 0 {
			t.Errorf("%s catches nothing: its failure would end the execution without a notice", name)
			continue
		}
		for _, c := range st.Catch {
			next := def.States[c.Next]
			switch {
			case name == "Check" && c.Next == "CheckFailureNotice":
			case name == "Abort" && c.Next == "FailureNotice":
			case next.Type == "Pass" && next.Result == name:
			default:
				t.Errorf("%s's Catch goes to %s, which does not record %q as the failed state", name, c.Next, name)
			}
		}
	}
	for _, c := range def.States["NotifyFailure"].Catch {
		if c.Next != "FailedUnreported" {
			t.Errorf("NotifyFailure's Catch goes to %s, not FailedUnreported", c.Next)
		}
	}
}

// Every log line of a Lambda invocation names its request, migration and
// shard, and a step done logs its rows and duration in CloudWatch's
// embedded metric format.
func TestHandlerLogsCarryIDsAndMetrics(t *testing.T) {
	ctx, f := seeded.Setup(t, 400)
	m := frozen(t, ctx, f, 2)
	var buf bytes.Buffer
	h := function.Handler(f.Env, "export", function.NewLambdaLogger(&buf))
	lctx := lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: "req-1234"})
	raw, _ := json.Marshal(workflow.ShardInput{MigrationID: m.MigrationID, Index: 1})
	out, err := h(lctx, workflow.Request{Step: "ExportShard", Input: raw})
	if err != nil {
		t.Fatalf("export through the handler: %v", err)
	}
	var shard workflow.ShardOutput
	if err := json.Unmarshal(out, &shard); err != nil || shard.Records == 0 {
		t.Fatalf("output %s (%v)", out, err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	var metrics map[string]any
	for _, l := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if rec["request_id"] != "req-1234" || rec["migration_id"] != m.MigrationID || rec["shard"] != float64(1) || rec["step"] != "ExportShard" {
			t.Errorf("log line without the invocation's ids: %s", l)
		}
		if _, ok := rec["_aws"]; ok {
			metrics = rec
		}
	}
	if metrics == nil {
		t.Fatalf("no embedded-metric line in:\n%s", buf.String())
	}
	var emf struct {
		Timestamp         int64
		CloudWatchMetrics []struct {
			Namespace  string
			Dimensions [][]string
			Metrics    []struct{ Name, Unit string }
		}
	}
	b, _ := json.Marshal(metrics["_aws"])
	if err := json.Unmarshal(b, &emf); err != nil || len(emf.CloudWatchMetrics) != 1 {
		t.Fatalf("_aws = %s (%v)", b, err)
	}
	cw := emf.CloudWatchMetrics[0]
	if emf.Timestamp < time.Now().Add(-time.Hour).UnixMilli() || cw.Namespace != function.MetricsNamespace || len(cw.Dimensions) != 1 || cw.Dimensions[0][0] != "Step" {
		t.Fatalf("EMF metadata %s", b)
	}
	// EMF: every metric and dimension named in _aws is a root member.
	for _, mt := range cw.Metrics {
		if _, ok := metrics[mt.Name].(float64); !ok {
			t.Errorf("metric %s has no numeric root value", mt.Name)
		}
	}
	if metrics["Step"] != "ExportShard" || metrics[function.MetricRows] != float64(shard.Records) {
		t.Fatalf("metric line %v, output %+v", metrics, shard)
	}

	// A failed step's line carries the ids too, and its error name.
	buf.Reset()
	raw, _ = json.Marshal(workflow.ShardInput{MigrationID: m.MigrationID, Index: 9})
	if _, err := h(lctx, workflow.Request{Step: "ExportShard", Input: raw}); err == nil {
		t.Fatal("shard 9 of 2 exported")
	}
	if l := buf.String(); !strings.Contains(l, `"request_id":"req-1234"`) || !strings.Contains(l, `"shard":9`) || !strings.Contains(l, `"error_name":"StepFailed"`) {
		t.Fatalf("failure line: %s", l)
	}
}

// Check and Drift read the expected version at run time when their input
// names none; a parameter that holds no version, or none configured, is a
// named error before anything is touched.
func TestTargetVersionFromTheExpectedVersion(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	env := f.Env
	param := "2"
	env.ExpectedVersion = func(context.Context) (string, error) { return param, nil }
	m, err := workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, Shards: 1, DryRun: true})
	if err != nil || m.To != format.V2 || !m.NeedsMigration {
		t.Fatalf("check with the parameter at 2: %+v, %v", m, err)
	}
	if _, err := workflow.Abort(ctx, env, workflow.AbortInput{Migration: m}); err != nil {
		t.Fatal(err)
	}
	param = "v1"
	if m, err := workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer}); err != nil || m.NeedsMigration {
		t.Fatalf("check with the parameter at v1: %+v, %v", m, err)
	}
	// The input wins over the parameter.
	if m, err := workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 1}); err != nil || m.To != format.V1 {
		t.Fatalf("check with target_version 1: %+v, %v", m, err)
	}
	param = "two"
	_, err = workflow.Check(ctx, env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer})
	if runstate.ErrorName(err) != "BadExpectedVersion" || !strings.Contains(err.Error(), `"two"`) {
		t.Fatalf("parameter %q: %v", param, err)
	}
	if _, err := workflow.Check(ctx, f.Env, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer}); runstate.ErrorName(err) != "NoTargetVersion" {
		t.Fatalf("no version anywhere: %v", err)
	}
	// The refusals took no lock (the dry run's Abort freed its own).
	raw, _, err := f.Env.Store.Get(ctx, layout.Lock(f.Pointer))
	var lock lock.Lock
	if err != nil || json.Unmarshal(raw, &lock) != nil || lock.MigrationID != "" {
		t.Fatalf("lock after refusals: %s, %v", raw, err)
	}
	param = "2"
	if out, err := workflow.Drift(ctx, env, workflow.DriftInput{Pointer: f.Pointer}); err != nil || out.Healthy {
		t.Fatalf("drift with the parameter at 2 over a v1 catalog: %+v, %v", out, err)
	}
	param = "1"
	if out, err := workflow.Drift(ctx, env, workflow.DriftInput{Pointer: f.Pointer}); err != nil || !out.Healthy {
		t.Fatalf("drift with the parameter at 1: %+v, %v", out.Report, err)
	}
}

func TestParseExpectedVersion(t *testing.T) {
	for in, want := range map[string]format.Version{"2": 2, "v2": 2, " 1\n": 1, "v17": 17} {
		if got, err := runstate.ParseExpectedVersion(in); err != nil || got != want {
			t.Errorf("%q: %v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "v", "0", "-1", "2.0", "two", "v 2", "99999999999"} {
		if _, err := runstate.ParseExpectedVersion(in); !errors.Is(err, runstate.ErrBadExpectedVersion) {
			t.Errorf("%q: %v, want BadExpectedVersion", in, err)
		}
	}
}

// The SSM reader against moto: the value the release pipeline put, read at
// each call (a new value counts without a restart); a missing parameter is
// an error naming it.
func TestSSMParameterRoundTrip(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	emu := snsserver.Start(t)
	emu.SetEnv(t)
	t.Setenv("AWS_ENDPOINT_URL_SSM", emu.Endpoint())
	client := ssm.New(ssm.Options{Region: snsserver.Region, BaseEndpoint: aws.String(emu.Endpoint()),
		Credentials: credentials.NewStaticCredentialsProvider(snsserver.AccessKey, snsserver.SecretKey, "")})
	put := func(v string) {
		if _, err := client.PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String("/rocklake/expected-format-version"),
			Value: aws.String(v), Type: ssmtypes.ParameterTypeString, Overwrite: aws.Bool(true)}); err != nil {
			t.Fatal(err)
		}
	}
	put("2")
	get, err := runstate.SSMParameter(ctx, "/rocklake/expected-format-version")
	if err != nil {
		t.Fatal(err)
	}
	if v, err := get(ctx); err != nil || v != "2" {
		t.Fatalf("get = %q, %v", v, err)
	}
	put("v3")
	if v, err := get(ctx); err != nil || v != "v3" {
		t.Fatalf("after the release set v3: %q, %v", v, err)
	}
	missing, _ := runstate.SSMParameter(ctx, "/rocklake/nope")
	if _, err := missing(ctx); err == nil || !strings.Contains(err.Error(), "/rocklake/nope") {
		t.Fatalf("missing parameter: %v", err)
	}
}

// The definitions load under pkg/asl with the local substitutions (the
// interpreter refuses anything outside the subset AWS and it share).
func TestDefinitionsLoad(t *testing.T) {
	for name, def := range statemachine.Definitions {
		if _, err := localrun.LoadDefinition(def, "arn:aws:sns:us-east-1:000000000000:rocklake"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// The step table is the definitions' steps: every Task of every state
// machine names a step of StepTable, and calls the function that hosts it
// (its Resource, ${<Function>FunctionArn}) and retries it as its retry
// class says (RetryErrors); every step of the table is some Task's.
func TestStepTableIsTheDefinitions(t *testing.T) {
	used := map[string]bool{}
	var walk func(def string, states map[string]any)
	walk = func(def string, states map[string]any) {
		for name, raw := range states {
			st, _ := raw.(map[string]any)
			for _, k := range []string{"ItemProcessor", "Iterator"} {
				if sub, ok := st[k].(map[string]any); ok {
					walk(def, sub["States"].(map[string]any))
				}
			}
			if br, ok := st["Branches"].([]any); ok {
				for _, b := range br {
					walk(def, b.(map[string]any)["States"].(map[string]any))
				}
			}
			params, _ := st["Parameters"].(map[string]any)
			resource := st["Resource"]
			if payload, ok := params["Payload"].(map[string]any); ok {
				// lambda:invoke(.waitForTaskToken): the function and the
				// step are parameters.
				resource, params = params["FunctionName"], payload
			}
			stepName, _ := params["step"].(string)
			if st["Type"] != "Task" || stepName == "" {
				continue
			}
			used[stepName] = true
			var host string
			for fn, steps := range workflow.Functions {
				if slices.Contains(steps, stepName) {
					host = fn
				}
			}
			if host == "" {
				t.Errorf("%s: state %s runs step %q, which StepTable lacks", def, name, stepName)
				continue
			}
			want := "${" + host + "FunctionArn}"
			if r, _ := resource.(string); !strings.EqualFold(r, want) {
				t.Errorf("%s: state %s runs %s on %v, but %s hosts it (%s)", def, name, stepName, resource, host, want)
			}
			if got, class := retriedErrors(st), retryOf(stepName); !slices.Equal(got, workflow.RetryErrors[class]) {
				t.Errorf("%s: state %s retries %s on %v; its retry class, %s, retries %v", def, name, stepName, got, class, workflow.RetryErrors[class])
			}
		}
	}
	for name, def := range statemachine.Definitions {
		var d struct{ States map[string]any }
		if err := json.Unmarshal(def, &d); err != nil {
			t.Fatal(err)
		}
		walk(name, d.States)
	}
	// The Map's item's two halves, which an operator may run by hand.
	byHand := map[string]bool{"ExportShard": true, "TransformShard": true}
	for _, st := range workflow.StepTable {
		if !used[st.Name] && !byHand[st.Name] {
			t.Errorf("step %s is in no definition", st.Name)
		}
	}
}

// retriedErrors is every error name a state's Retry lists, in order.
func retriedErrors(st map[string]any) []string {
	var names []string
	retry, _ := st["Retry"].([]any)
	for _, r := range retry {
		eq, _ := r.(map[string]any)["ErrorEquals"].([]any)
		for _, e := range eq {
			names = append(names, e.(string))
		}
	}
	return names
}

// retryOf is the retry class StepTable gives the step called name.
func retryOf(name string) workflow.Retry {
	for _, st := range workflow.StepTable {
		if st.Name == name {
			return st.Retry
		}
	}
	return ""
}
