package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// One synthesis for the whole package: it is what costs (jsii, node).
var (
	tmpl    assertions.Template
	tj      map[string]any // the template as JSON
	testCfg Config
)

func TestMain(m *testing.M) {
	os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	code := func() int {
		dist, err := os.MkdirTemp("", "rocklake-infra-dist")
		if err != nil {
			panic(err)
		}
		defer os.RemoveAll(dist)
		for _, f := range Functions { // stand-ins for `make build`'s zips
			if err := os.WriteFile(filepath.Join(dist, f.Name+".zip"), []byte("bootstrap stand-in "+f.Name), 0o644); err != nil {
				panic(err)
			}
		}
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{
			"name": "rlm-test", "distDir": dist, "stagingExpireDays": 3, "pointerNoncurrentDays": 45,
			"catalogBucketName": "rlm-test-catalog", "stagingBucketName": "rlm-test-staging",
		}})
		testCfg, err = ConfigFromContext(app.Node())
		if err != nil {
			panic(err)
		}
		s, err := NewMigrateStack(app, "RlmTest", &awscdk.StackProps{
			Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")},
		}, testCfg)
		if err != nil {
			panic(err)
		}
		tmpl = assertions.Template_FromStack(s.Stack, nil)
		b, _ := json.Marshal(tmpl.ToJSON())
		if err := json.Unmarshal(b, &tj); err != nil {
			panic(err)
		}
		return m.Run()
	}()
	jsii.Close()
	os.Exit(code)
}

func resources(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range tj["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			p, _ := r["Properties"].(map[string]any)
			out[id] = p
		}
	}
	return out
}

func asJSON(v any) string { b, _ := json.Marshal(v); return string(b) }

func bucket(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, p := range resources("AWS::S3::Bucket") {
		if p["BucketName"] == name {
			return p
		}
	}
	t.Fatalf("no bucket %s", name)
	return nil
}

func TestBuckets(t *testing.T) {
	tmpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(2))
	for _, n := range []string{"rlm-test-catalog", "rlm-test-staging"} {
		tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"BucketName": n,
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
			}},
		})
	}
	tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"BucketName": "rlm-test-catalog", "VersioningConfiguration": map[string]any{"Status": "Enabled"},
	})
	if _, ok := bucket(t, "rlm-test-staging")["VersioningConfiguration"]; ok {
		t.Error("staging bucket is versioned: expiring staging would leave noncurrent versions")
	}
	// Lifecycle, with the days from context (3 and 45, not the defaults).
	tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"BucketName": "rlm-test-staging",
		"LifecycleConfiguration": map[string]any{"Rules": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{"ExpirationInDays": 3, "Status": "Enabled"}),
		})},
	})
	tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"BucketName": "rlm-test-catalog",
		"LifecycleConfiguration": map[string]any{"Rules": assertions.Match_ArrayWith(&[]any{
			assertions.Match_ObjectLike(&map[string]any{
				"Prefix": "rocklake/CURRENT", "Status": "Enabled",
				"NoncurrentVersionExpiration": assertions.Match_ObjectLike(&map[string]any{"NoncurrentDays": 45}),
			}),
		})},
	})
	if strings.Contains(asJSON(bucket(t, "rlm-test-catalog")["LifecycleConfiguration"]), "ExpirationInDays") {
		t.Error("a current catalog or pointer object must never expire")
	}
	// TLS enforced on both.
	pols := resources("AWS::S3::BucketPolicy")
	if len(pols) != 2 {
		t.Fatalf("bucket policies: %d, want 2", len(pols))
	}
	for id, p := range pols {
		s := asJSON(p)
		if !strings.Contains(s, `"aws:SecureTransport":"false"`) || !strings.Contains(s, `"Effect":"Deny"`) {
			t.Errorf("%s does not deny insecure transport: %s", id, s)
		}
		if !strings.Contains(s, `"s3:TlsVersion":1.2`) {
			t.Errorf("%s does not require TLS 1.2: %s", id, s)
		}
	}
}

// stepTimeouts is the smallest TimeoutSeconds of the Task states each
// placeholder serves, in both definitions.
func stepTimeouts(t *testing.T) map[string]float64 {
	out := map[string]float64{}
	for _, def := range [][]byte{statemachine.Migration, statemachine.Drift} {
		for _, st := range taskStates(t, def) {
			for _, p := range Placeholders([]byte(asJSON(st["Resource"]))) {
				ts, ok := st["TimeoutSeconds"].(float64)
				if !ok {
					t.Errorf("a state served by %s has no TimeoutSeconds", p)
					continue
				}
				if cur, seen := out[p]; !seen || ts < cur {
					out[p] = ts
				}
			}
		}
	}
	return out
}

// lambdaMargin is how much sooner than any of its states a Lambda times out.
const lambdaMargin = 10

func fnByName(t *testing.T, name string) (string, map[string]any) {
	t.Helper()
	for id, p := range resources("AWS::Lambda::Function") {
		if p["FunctionName"] == "rlm-test-"+name {
			return id, p
		}
	}
	t.Fatalf("no function %s", name)
	return "", nil
}

func TestFunctions(t *testing.T) {
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(4))
	timeouts := stepTimeouts(t)
	mapConcurrency := mapMaxConcurrency(t)
	roles := map[string]bool{}
	for _, f := range Functions {
		_, p := fnByName(t, f.Name)
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || asJSON(p["Architectures"]) != `["x86_64"]` {
			t.Errorf("%s: runtime %v handler %v arch %v", f.Name, p["Runtime"], p["Handler"], p["Architectures"])
		}
		if asJSON(p["TracingConfig"]) != `{"Mode":"Active"}` {
			t.Errorf("%s: tracing %v", f.Name, p["TracingConfig"])
		}
		env := asJSON(p["Environment"])
		if !strings.Contains(env, "ROCKLAKE_STAGING") || !strings.Contains(env, "s3://") {
			t.Errorf("%s: environment %s", f.Name, env)
		}
		// A step must never outlive its state: after a state timeout the
		// Catch runs Abort, which must not race a Flip still running.
		if p["Timeout"].(float64)+lambdaMargin > timeouts[f.Placeholder] {
			t.Errorf("%s: timeout %v not %ds below the shortest state timeout %v of its steps", f.Name, p["Timeout"], lambdaMargin, timeouts[f.Placeholder])
		}
		rc, ok := p["ReservedConcurrentExecutions"].(float64)
		if !ok || rc < 1 || rc > 100 {
			t.Errorf("%s: reserved concurrency %v", f.Name, p["ReservedConcurrentExecutions"])
		}
		if (f.Name == "export" || f.Name == "transform") && rc < mapConcurrency {
			t.Errorf("%s: reserved concurrency %v below the Map's MaxConcurrency %v", f.Name, rc, mapConcurrency)
		}
		if f.Name == "import" && rc > 2 {
			t.Errorf("import is the one writer of the target; concurrency %v", rc)
		}
		if f.Name != "check" && p["MemorySize"].(float64) < 2048 {
			t.Errorf("%s: memory %v too small for a shard", f.Name, p["MemorySize"])
		}
		if !strings.Contains(asJSON(p["LoggingConfig"]), "LogGroup") {
			t.Errorf("%s: no log group of its own", f.Name)
		}
		role := asJSON(p["Role"])
		if roles[role] {
			t.Errorf("%s shares a role", f.Name)
		}
		roles[role] = true
	}
}

// policiesOf returns the statements of every AWS::IAM::Policy attached to
// the role whose logical id starts with prefix.
func policiesOf(t *testing.T, rolePrefix string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, p := range resources("AWS::IAM::Policy") {
		if !strings.Contains(asJSON(p["Roles"]), `"Ref":"`+rolePrefix) {
			continue
		}
		for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			out = append(out, s.(map[string]any))
		}
	}
	if len(out) == 0 {
		t.Fatalf("no policy for %s", rolePrefix)
	}
	return out
}

func list(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			out = append(out, asJSON(x))
		}
		return out
	}
	return []string{asJSON(v)}
}

func actions(sts []map[string]any) []string {
	var out []string
	for _, s := range sts {
		for _, a := range list(s["Action"]) {
			out = append(out, strings.Trim(a, `"`))
		}
	}
	return out
}

func TestNoWildcardActions(t *testing.T) {
	for id, p := range resources("AWS::IAM::Policy") {
		for _, s := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			for _, a := range list(s.(map[string]any)["Action"]) {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %s", id, a)
				}
			}
		}
	}
	for id, p := range resources("AWS::IAM::Role") {
		if p["ManagedPolicyArns"] != nil || p["Policies"] != nil {
			t.Errorf("%s: managed or inline policies %v %v", id, p["ManagedPolicyArns"], p["Policies"])
		}
	}
}

func TestLambdaLeastPrivilege(t *testing.T) {
	for _, f := range Functions {
		sts := policiesOf(t, title(f.Name)+"Role")
		acts := actions(sts)
		for _, s := range sts {
			for _, r := range list(s["Resource"]) {
				if r == "*" || r == `"*"` {
					if !strings.HasPrefix(strings.Trim(list(s["Action"])[0], `"`), "xray:") {
						t.Errorf("%s: %v on every resource", f.Name, s["Action"])
					}
				}
			}
			if strings.Contains(asJSON(s["Action"]), "s3:ListBucket") && s["Condition"] == nil {
				t.Errorf("%s: s3:ListBucket without a prefix condition", f.Name)
			}
			// Object actions are scoped to a prefix of one bucket.
			if strings.Contains(asJSON(s["Action"]), "s3:GetObject") || strings.Contains(asJSON(s["Action"]), "s3:PutObject") {
				res := asJSON(s["Resource"])
				if !strings.Contains(res, "/catalogs/*") && !strings.Contains(res, "/migrations/*") && !strings.Contains(res, "/rocklake/CURRENT") {
					t.Errorf("%s: object access beyond the prefixes: %s", f.Name, res)
				}
			}
		}
		has := func(a string) bool { return slices.Contains(acts, a) }
		all := asJSON(sts)
		switch f.Name {
		case "transform":
			if strings.Contains(all, "/catalogs/") || strings.Contains(all, "rocklake/CURRENT") || has("s3:DeleteObject") || has("sns:Publish") {
				t.Errorf("transform reaches beyond staging: %s", all)
			}
		case "export":
			// Freeze's writer is passive: it deletes nothing, anywhere.
			if strings.Contains(all, "rocklake/CURRENT") || has("sns:Publish") || has("s3:DeleteObject") {
				t.Errorf("export may touch the pointer, delete or publish: %s", all)
			}
		case "import":
			if strings.Contains(all, "rocklake/CURRENT") || has("sns:Publish") {
				t.Errorf("import may touch the pointer or publish: %s", all)
			}
		case "check":
			if !has("s3:GetObjectVersion") || !has("s3:ListBucketVersions") || !has("s3:GetBucketVersioning") || !has("sns:Publish") {
				t.Errorf("check cannot flip, roll back or alert: %v", acts)
			}
		}
		if !has("logs:PutLogEvents") || !has("xray:PutTraceSegments") {
			t.Errorf("%s: cannot log or trace: %v", f.Name, acts)
		}
	}
	// Only check writes the pointer, and takes its lock.
	lock, history := false, false
	for _, s := range policiesOf(t, "CheckRole") {
		lock = lock || strings.Contains(asJSON(s["Resource"]), "rocklake/CURRENT.lock")
		history = history || strings.Contains(asJSON(s["Resource"]), "rocklake/CURRENT.history/*")
	}
	if !lock {
		t.Error("check cannot take the pointer's lock (workflow.LockURL)")
	}
	if !history {
		t.Error("check cannot write the run records (history.Dir)")
	}
	for _, f := range Functions[1:] {
		for _, s := range policiesOf(t, title(f.Name)+"Role") {
			if strings.Contains(asJSON(s["Resource"]), "rocklake/CURRENT") {
				t.Errorf("%s may access the pointer", f.Name)
			}
		}
	}
}

func stateMachine(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, p := range resources("AWS::StepFunctions::StateMachine") {
		if p["StateMachineName"] == name {
			return p
		}
	}
	t.Fatalf("no state machine %s", name)
	return nil
}

func TestStateMachines(t *testing.T) {
	tmpl.ResourceCountIs(jsii.String("AWS::StepFunctions::StateMachine"), jsii.Number(2))
	for name, def := range map[string][]byte{"rlm-test-migration": statemachine.Migration, "rlm-test-drift": statemachine.Drift} {
		p := stateMachine(t, name)
		if p["DefinitionString"] != string(def) {
			t.Errorf("%s: the definition is not the file, inline and byte for byte", name)
		}
		if asJSON(p["TracingConfiguration"]) != `{"Enabled":true}` {
			t.Errorf("%s: tracing %v", name, p["TracingConfiguration"])
		}
		lc := asJSON(p["LoggingConfiguration"])
		if !strings.Contains(lc, `"Level":"ALL"`) || !strings.Contains(lc, "CloudWatchLogsLogGroup") {
			t.Errorf("%s: logging %s", name, lc)
		}
		if p["StateMachineType"] != "STANDARD" {
			t.Errorf("%s: type %v", name, p["StateMachineType"])
		}
	}
	// The migration's role: invoke exactly the four functions, publish to
	// the topic, run its own Distributed Map children.
	acts := actions(policiesOf(t, "MigrationStateMachineRole"))
	for _, a := range []string{"lambda:InvokeFunction", "sns:Publish", "states:StartExecution", "states:DescribeExecution", "states:StopExecution"} {
		if !slices.Contains(acts, a) {
			t.Errorf("migration role lacks %s: %v", a, acts)
		}
	}
	inv := asJSON(policiesOf(t, "MigrationStateMachineRole"))
	for _, f := range Functions {
		id, _ := fnByName(t, f.Name)
		if !strings.Contains(inv, id) {
			t.Errorf("migration role cannot invoke %s", f.Name)
		}
	}
	if !strings.Contains(inv, ":stateMachine:rlm-test-migration") || !strings.Contains(inv, ":execution:rlm-test-migration/*") {
		t.Errorf("distributed map permissions not scoped to itself: %s", inv)
	}
	drift := asJSON(policiesOf(t, "DriftStateMachineRole"))
	checkID, _ := fnByName(t, "check")
	for _, f := range Functions[1:] {
		id, _ := fnByName(t, f.Name)
		if strings.Contains(drift, id) {
			t.Errorf("drift role may invoke %s", f.Name)
		}
	}
	if !strings.Contains(drift, checkID) {
		t.Error("drift role cannot invoke check")
	}
}

var placeholderRe = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)\}`)

// taskStates walks a definition, Map item processors included.
func taskStates(t *testing.T, def []byte) []map[string]any {
	t.Helper()
	var d map[string]any
	if err := json.Unmarshal(def, &d); err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	var walk func(states map[string]any)
	walk = func(states map[string]any) {
		for _, s := range states {
			s := s.(map[string]any)
			if s["Type"] == "Task" {
				out = append(out, s)
			}
			for _, k := range []string{"ItemProcessor", "Iterator"} {
				if p, ok := s[k].(map[string]any); ok {
					walk(p["States"].(map[string]any))
				}
			}
			if bs, ok := s["Branches"].([]any); ok {
				for _, b := range bs {
					walk(b.(map[string]any)["States"].(map[string]any))
				}
			}
		}
	}
	walk(d["States"].(map[string]any))
	return out
}

func mapMaxConcurrency(t *testing.T) float64 {
	var d struct {
		States map[string]struct {
			Type           string
			MaxConcurrency float64
		}
	}
	if err := json.Unmarshal(statemachine.Migration, &d); err != nil {
		t.Fatal(err)
	}
	m := 0.0
	for _, s := range d.States {
		if s.Type == "Map" {
			m = max(m, s.MaxConcurrency)
		}
	}
	return m
}

// Every Task state's ${...} placeholder (Resource and Parameters) has a
// DefinitionSubstitution in the synthesized template, and every Lambda
// Resource is a placeholder (never a hard-coded ARN).
func TestEveryTaskPlaceholderHasSubstitution(t *testing.T) {
	for name, def := range map[string][]byte{"rlm-test-migration": statemachine.Migration, "rlm-test-drift": statemachine.Drift} {
		subs, _ := stateMachine(t, name)["DefinitionSubstitutions"].(map[string]any)
		tasks := taskStates(t, def)
		if len(tasks) == 0 {
			t.Fatalf("%s: no Task states", name)
		}
		used := map[string]bool{}
		for _, st := range tasks {
			res, _ := st["Resource"].(string)
			if !strings.HasPrefix(res, "arn:aws:states:::") && !placeholderRe.MatchString(res) {
				t.Errorf("%s: Task resource %q is neither a placeholder nor a service integration", name, res)
			}
			for _, m := range placeholderRe.FindAllStringSubmatch(asJSON(st), -1) {
				used[m[1]] = true
				v, ok := subs[m[1]]
				if !ok || v == nil || asJSON(v) == `""` {
					t.Errorf("%s: ${%s} has no substitution", name, m[1])
				}
			}
		}
		for k := range subs {
			if !used[k] {
				t.Errorf("%s: substitution %s is not used by any Task", name, k)
			}
		}
	}
	// The statemachine package's list is exactly what the migration uses.
	subs := stateMachine(t, "rlm-test-migration")["DefinitionSubstitutions"].(map[string]any)
	for _, p := range statemachine.Placeholders {
		if _, ok := subs[p]; !ok {
			t.Errorf("statemachine.Placeholders %s not substituted", p)
		}
	}
	if len(subs) != len(statemachine.Placeholders) {
		t.Errorf("substitutions %d, statemachine.Placeholders %d", len(subs), len(statemachine.Placeholders))
	}
}

func TestReleaseRule(t *testing.T) {
	rules := resources("AWS::Events::Rule")
	if len(rules) != 1 {
		t.Fatalf("rules: %d", len(rules))
	}
	for _, p := range rules {
		pat := p["EventPattern"].(map[string]any)
		if asJSON(pat["source"]) != `["rocklake.release"]` || asJSON(pat["detail-type"]) != `["RockLake Release Deployed"]` {
			t.Errorf("pattern %s", asJSON(pat))
		}
		det := asJSON(pat["detail"])
		if !strings.Contains(det, "target_format_version") || !strings.Contains(det, "/rocklake/CURRENT") {
			t.Errorf("detail pattern %s", det)
		}
		tgt := p["Targets"].([]any)[0].(map[string]any)
		if !strings.Contains(asJSON(tgt["Arn"]), "MigrationStateMachine") {
			t.Errorf("target %v", tgt["Arn"])
		}
		it := tgt["InputTransformer"].(map[string]any)
		tmplStr := it["InputTemplate"].(string)
		// The Check step's input, with the version as a JSON number.
		for _, want := range []string{`"pointer":<detail-pointer>`, `"target_version":<detail-target_format_version>`, `"shards":16`, `"trigger":"release:<id>"`} {
			if !strings.Contains(tmplStr, want) {
				t.Errorf("input template %s lacks %s", tmplStr, want)
			}
		}
		if asJSON(it["InputPathsMap"]) != `{"detail-pointer":"$.detail.pointer","detail-target_format_version":"$.detail.target_format_version","id":"$.id"}` {
			t.Errorf("paths %s", asJSON(it["InputPathsMap"]))
		}
		if tgt["RoleArn"] == nil || tgt["RetryPolicy"] == nil {
			t.Errorf("target role/retry: %s", asJSON(tgt))
		}
	}
}

func TestDriftSchedule(t *testing.T) {
	ss := resources("AWS::Scheduler::Schedule")
	if len(ss) != 1 {
		t.Fatalf("schedules: %d", len(ss))
	}
	for _, p := range ss {
		if p["ScheduleExpression"] != testCfg.DriftSchedule || p["State"] != "ENABLED" {
			t.Errorf("schedule %v %v", p["ScheduleExpression"], p["State"])
		}
		tgt := asJSON(p["Target"])
		if !strings.Contains(tgt, "DriftStateMachine") {
			t.Errorf("schedule target %s", tgt)
		}
		// drift.asl.json's input: {"pointer", "expect", "topic"}.
		for _, want := range []string{`\"pointer\":\"s3://`, `/rocklake/CURRENT\"`, `\"expect\":2`, `\"topic\":\"`, "AlertTopic"} {
			if !strings.Contains(tgt, want) {
				t.Errorf("schedule input lacks %s: %s", want, tgt)
			}
		}
	}
}

func TestTopicAndAlarms(t *testing.T) {
	tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(1))
	var topicID string
	for id := range resources("AWS::SNS::Topic") {
		topicID = id
	}
	if !strings.Contains(asJSON(resources("AWS::SNS::TopicPolicy")), `"aws:SecureTransport":"false"`) {
		t.Error("topic does not enforce TLS")
	}
	alarms := resources("AWS::CloudWatch::Alarm")
	seen := map[string]bool{}
	for id, p := range alarms {
		if !strings.Contains(asJSON(p["AlarmActions"]), topicID) {
			t.Errorf("alarm %s does not notify the topic", id)
		}
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm %s: missing data %v", id, p["TreatMissingData"])
		}
		seen[fmt.Sprint(p["Namespace"], "/", p["MetricName"], "/", asJSON(p["Dimensions"]))] = true
	}
	need := func(ns, metric, dim string) {
		for k := range seen {
			if strings.HasPrefix(k, ns+"/"+metric+"/") && strings.Contains(k, dim) {
				return
			}
		}
		t.Errorf("no alarm on %s %s %s", ns, metric, dim)
	}
	need("AWS/States", "ExecutionsFailed", "MigrationStateMachine")
	need("AWS/States", "ExecutionsTimedOut", "MigrationStateMachine")
	need("AWS/States", "ExecutionsFailed", "DriftStateMachine")
	for _, f := range Functions {
		id, _ := fnByName(t, f.Name)
		need("AWS/Lambda", "Errors", id)
	}
}

func TestOutputs(t *testing.T) {
	outs := tj["Outputs"].(map[string]any)
	for _, k := range []string{"StateMachineArn", "PointerLocation", "TopicArn"} {
		if _, ok := outs[k]; !ok {
			t.Errorf("no output %s (have %v)", k, outs)
		}
	}
	if s := asJSON(outs["PointerLocation"]); !strings.Contains(s, "s3://") || !strings.Contains(s, "/rocklake/CURRENT") {
		t.Errorf("pointer location %s", s)
	}
	if s := asJSON(outs["StateMachineArn"]); !strings.Contains(s, "MigrationStateMachine") {
		t.Errorf("state machine output %s", s)
	}
}

func TestConfigRejectsBadContext(t *testing.T) {
	for _, ctx := range []map[string]any{
		{"stagingExpireDays": 0},
		{"pointerNoncurrentDays": "soon"},
		{"catalogPrefix": "catalogs"},
		{"pointerKey": "catalogs/CURRENT"},
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		if _, err := ConfigFromContext(app.Node()); err == nil {
			t.Errorf("context %v accepted", ctx)
		}
	}
}
