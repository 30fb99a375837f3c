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
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/jsii-runtime-go"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// One synthesis for the whole package: it is what costs (jsii, node).
var (
	tmpl    assertions.Template
	tj      map[string]any // the template as JSON
	testCfg Config
	// The same app deployed on existing buckets (existingCatalogBucket,
	// existingStagingBucket), synthesized with the first.
	existingTJ map[string]any
	// cdk-nag's findings on both stacks.
	nagErrors, nagWarnings []string
	// cdk-nag's errors on a canary stack with a plain-HTTP bucket.
	nagCanary []string
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
			"shardConcurrency": 24, "executionTimeoutHours": 40,
			// A fleet in three buckets: a prefix beside the stack's pointer, a
			// list, and the prefix its pointers lie under.
			"fleetSources":  []any{"s3://rlm-test-catalog/tenants/", "s3://acme-fleet-lists/eu.txt"},
			"fleetPrefixes": "s3://acme-eu/tenants/",
			"fleetCanary":   2, "fleetConcurrency": 3, "fleetMaxFailures": 5, "fleetName": "tenants",
		}})
		testCfg, err = ConfigFromContext(app.Node())
		if err != nil {
			panic(err)
		}
		env := &awscdk.StackProps{Env: &awscdk.Environment{Account: jsii.String("123456789012"), Region: jsii.String("eu-west-1")}}
		s, err := NewMigrateStack(app, "RlmTest", env, testCfg)
		if err != nil {
			panic(err)
		}
		existingCfg := testCfg
		existingCfg.Name, existingCfg.ExpectedVersionParameter = "rlm-existing", "/rlm-existing/expected-format-version"
		existingCfg.CatalogBucketName, existingCfg.StagingBucketName = "acme-existing-catalog", "acme-existing-staging"
		existingCfg.ExistingCatalogBucket, existingCfg.ExistingStagingBucket = true, true
		existingCfg.Fleet = Fleet{} // and no fleet
		existing, err := NewMigrateStack(app, "RlmExisting", env, existingCfg)
		if err != nil {
			panic(err)
		}
		// A canary the rules must catch: a bucket that allows plain HTTP.
		canary := awscdk.NewStack(app, jsii.String("NagCanary"), env)
		awss3.NewBucket(canary, jsii.String("PlainBucket"), &awss3.BucketProps{})
		CheckNag(app)
		tmpl = assertions.Template_FromStack(s.Stack, nil)
		b, _ := json.Marshal(tmpl.ToJSON())
		if err := json.Unmarshal(b, &tj); err != nil {
			panic(err)
		}
		b, _ = json.Marshal(assertions.Template_FromStack(existing.Stack, nil).ToJSON())
		if err := json.Unmarshal(b, &existingTJ); err != nil {
			panic(err)
		}
		for _, st := range []awscdk.Stack{s.Stack, existing.Stack} {
			ann := assertions.Annotations_FromStack(st)
			nagErrors = append(nagErrors, messages(ann.FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))))...)
			nagWarnings = append(nagWarnings, messages(ann.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))))...)
		}
		nagCanary = messages(assertions.Annotations_FromStack(canary).FindError(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-S10.*"))))
		return m.Run()
	}()
	jsii.Close()
	os.Exit(code)
}

// messages formats the synthesis messages an Annotations search found.
func messages(found any) []string {
	var ms []struct {
		ID    string `json:"id"`
		Entry struct {
			Data any `json:"data"`
		} `json:"entry"`
	}
	b, _ := json.Marshal(found)
	if err := json.Unmarshal(b, &ms); err != nil {
		panic(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, fmt.Sprintf("%s: %v", m.ID, m.Entry.Data))
	}
	return out
}

func resources(typ string) map[string]map[string]any { return resourcesOf(tj, typ) }

func resourcesOf(template map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range template["Resources"].(map[string]any) {
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
	for _, def := range statemachine.Definitions {
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
	tmpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(float64(len(Functions))))
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
		if f.Name == "export" && rc < mapConcurrency {
			t.Errorf("%s: reserved concurrency %v below the Map's MaxConcurrency %v", f.Name, rc, mapConcurrency)
		}
		// A fleet runs fleetConcurrency migrations at once (3 here), each
		// with one writer of its target.
		if f.Name == "import" && rc > float64(max(2, testCfg.Fleet.Concurrency)) {
			t.Errorf("import is the one writer of each target; concurrency %v", rc)
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
				if !strings.Contains(res, "/catalogs/*") && !strings.Contains(res, "/migrations/*") && !strings.Contains(res, "/rocklake/CURRENT") &&
					!inFleetScope(res) {
					t.Errorf("%s: object access beyond the prefixes: %s", f.Name, res)
				}
			}
		}
		has := func(a string) bool { return slices.Contains(acts, a) }
		all := asJSON(sts)
		switch f.Name {
		case "export":
			// Freeze's writer is passive: it deletes nothing, anywhere.
			if touchesPointer(all) || has("sns:Publish") || has("s3:DeleteObject") {
				t.Errorf("export may touch the pointer, delete or publish: %s", all)
			}
		case "import":
			if touchesPointer(all) || has("sns:Publish") {
				t.Errorf("import may touch the pointer or publish: %s", all)
			}
		case "inplace":
			// The catalog where it lies and the pointer's flip; no staging, no topic.
			if !strings.Contains(all, "rocklake/CURRENT") || !strings.Contains(all, "/catalogs/*") || !has("s3:DeleteObject") ||
				strings.Contains(all, "/migrations/*") || has("sns:Publish") {
				t.Errorf("inplace cannot migrate and flip, or reaches beyond: %s", all)
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
	// Only check and inplace write the pointer, take or free its lock and
	// write run records.
	for _, role := range []string{"CheckRole", "InplaceRole"} {
		lock, history, claims, withdraw := false, false, false, false
		for _, s := range policiesOf(t, role) {
			res := asJSON(s["Resource"])
			lock = lock || strings.Contains(res, "rocklake/CURRENT.lock")
			history = history || strings.Contains(res, "rocklake/CURRENT.history/*")
			claims = claims || strings.Contains(res, "rocklake/CURRENT.claims/*") && strings.Contains(asJSON(s["Action"]), "s3:PutObject")
			withdraw = withdraw || strings.Contains(res, "rocklake/CURRENT.claims/*") && strings.Contains(asJSON(s["Action"]), "s3:DeleteObject")
		}
		if !lock {
			t.Errorf("%s cannot take the pointer's lock (layout.Lock)", role)
		}
		if !history {
			t.Errorf("%s cannot write the run records (layout.HistoryDir)", role)
		}
		if !claims || !withdraw {
			t.Errorf("%s cannot write or withdraw the claims beside the pointer (layout.ClaimsDir)", role)
		}
	}
	// The steps from Freeze on read the lock, to confirm it is still their
	// run's before they write (issue 24 item 6), and nothing else of it.
	for _, f := range Functions[1:] {
		if f.Name == "inplace" {
			continue
		}
		lockRead := false
		for _, s := range policiesOf(t, title(f.Name)+"Role") {
			res := asJSON(s["Resource"])
			if !strings.Contains(res, "rocklake/CURRENT") {
				continue
			}
			if touchesPointer(res) || asJSON(s["Action"]) != `"s3:GetObject"` {
				t.Errorf("%s may access the pointer: %v on %s", f.Name, s["Action"], res)
			}
			lockRead = true
		}
		if !lockRead {
			t.Errorf("%s cannot read the pointer's lock", f.Name)
		}
	}
}

// touchesPointer: the policy text names the pointer object or its run
// records (its lock aside).
func touchesPointer(policy string) bool {
	return strings.Contains(policy, `rocklake/CURRENT"`) || strings.Contains(policy, "rocklake/CURRENT.history")
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
	tmpl.ResourceCountIs(jsii.String("AWS::StepFunctions::StateMachine"), jsii.Number(4))
	if n := len(resourcesOf(existingTJ, "AWS::StepFunctions::StateMachine")); n != 3 {
		t.Errorf("a stack without a fleet has %d state machines, want 3 (no fleet's)", n)
	}
	migration, err := MigrationDefinition(testCfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, def := range map[string][]byte{"rlm-test-migration": migration, "rlm-test-drift": statemachine.Drift, "rlm-test-rollback": statemachine.Rollback,
		"rlm-test-fleet": statemachine.Fleet} {
		p := stateMachine(t, name)
		if p["DefinitionString"] != string(def) {
			t.Errorf("%s: the definition is not the file (with the deployment's settings), inline", name)
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
	// The rollback's role: invoke check, publish, and run the migration
	// state machine as a child (the rollback run, startExecution.sync:2);
	// nothing else.
	rb := policiesOf(t, "RollbackStateMachineRole")
	for _, a := range actions(rb) {
		switch {
		case a == "lambda:InvokeFunction", a == "sns:Publish",
			a == "states:StartExecution", a == "states:DescribeExecution", a == "states:StopExecution",
			a == "events:PutTargets", a == "events:PutRule", a == "events:DescribeRule",
			strings.HasPrefix(a, "logs:"), strings.HasPrefix(a, "xray:"): // its own logging and tracing
		default:
			t.Errorf("rollback role may %s", a)
		}
	}
	if j := asJSON(rb); !strings.Contains(j, "StepFunctionsGetEventsForStepFunctionsExecutionRule") || !strings.Contains(j, "MigrationStateMachine") {
		t.Errorf("rollback role: no child runs of the migration state machine: %s", j)
	}
	if !strings.Contains(asJSON(rb), checkID) {
		t.Error("rollback role cannot invoke check")
	}
	for _, f := range Functions[1:] {
		id, _ := fnByName(t, f.Name)
		if strings.Contains(asJSON(rb), id) {
			t.Errorf("rollback role may invoke %s", f.Name)
		}
	}
}

// The deployed migration is the file with two settings of this deployment:
// the Map runs as many shards at once as export and transform may run
// (shardConcurrency, 24 here), and the execution times out after
// executionTimeoutHours (40 here), which the timed-out alarm needs.
func TestMigrationDefinitionSettings(t *testing.T) {
	var file, deployed map[string]any
	if err := json.Unmarshal(statemachine.Migration, &file); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(stateMachine(t, "rlm-test-migration")["DefinitionString"].(string)), &deployed); err != nil {
		t.Fatal(err)
	}
	if deployed["TimeoutSeconds"] != float64(40*3600) {
		t.Errorf("TimeoutSeconds %v, want 144000", deployed["TimeoutSeconds"])
	}
	// Check derives the lock's lease from what its function is told of the
	// execution's timeout: it must be the deployed one, or a run could
	// outlive its lock (issue 24 item 6).
	for _, f := range Functions {
		_, p := fnByName(t, f.Name)
		vars, _ := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got := fmt.Sprint(vars[ExecutionTimeoutEnv]); got != fmt.Sprint(deployed["TimeoutSeconds"]) {
			t.Errorf("%s: %s=%s, the migration's TimeoutSeconds %v", f.Name, ExecutionTimeoutEnv, got, deployed["TimeoutSeconds"])
		}
	}
	if got := mapMaxConcurrency(t); got != 24 {
		t.Errorf("the Map's MaxConcurrency %v, want shardConcurrency 24", got)
	}
	// Export holds every shard step of the fleet's 3 migrations at once:
	// 3 × min(shards 16, shardConcurrency 24).
	if _, p := fnByName(t, "export"); p["ReservedConcurrentExecutions"] != float64(48) {
		t.Errorf("export: reserved concurrency %v, want 48", p["ReservedConcurrentExecutions"])
	}
	// Without a fleet, the Map's MaxConcurrency.
	for _, p := range resourcesOf(existingTJ, "AWS::Lambda::Function") {
		if p["FunctionName"] == "rlm-existing-export" && p["ReservedConcurrentExecutions"] != float64(24) {
			t.Errorf("export without a fleet: reserved concurrency %v, want 24", p["ReservedConcurrentExecutions"])
		}
	}
	// Nothing else differs.
	delete(file, "TimeoutSeconds")
	delete(deployed, "TimeoutSeconds")
	delete(file["States"].(map[string]any)["Shards"].(map[string]any), "MaxConcurrency")
	delete(deployed["States"].(map[string]any)["Shards"].(map[string]any), "MaxConcurrency")
	if asJSON(file) != asJSON(deployed) {
		t.Error("the deployed migration differs from the file beyond TimeoutSeconds and MaxConcurrency")
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

// mapMaxConcurrency is the largest MaxConcurrency of the deployed
// migration's Map states.
func mapMaxConcurrency(t *testing.T) float64 {
	var d struct {
		States map[string]struct {
			Type           string
			MaxConcurrency float64
		}
	}
	if err := json.Unmarshal([]byte(stateMachine(t, "rlm-test-migration")["DefinitionString"].(string)), &d); err != nil {
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

// Every ${...} placeholder of a definition has a DefinitionSubstitution in
// the synthesized template and every substitution is used, and every Lambda
// Resource is a placeholder (never a hard-coded ARN).
func TestEveryTaskPlaceholderHasSubstitution(t *testing.T) {
	for name, def := range map[string][]byte{"rlm-test-migration": statemachine.Migration, "rlm-test-drift": statemachine.Drift, "rlm-test-rollback": statemachine.Rollback,
		"rlm-test-fleet": statemachine.Fleet} {
		subs, _ := stateMachine(t, name)["DefinitionSubstitutions"].(map[string]any)
		tasks := taskStates(t, def)
		if len(tasks) == 0 {
			t.Fatalf("%s: no Task states", name)
		}
		for _, st := range tasks {
			res, _ := st["Resource"].(string)
			if !strings.HasPrefix(res, "arn:aws:states:::") && !placeholderRe.MatchString(res) {
				t.Errorf("%s: Task resource %q is neither a placeholder nor a service integration", name, res)
			}
		}
		used := map[string]bool{}
		for _, m := range placeholderRe.FindAllStringSubmatch(string(def), -1) {
			used[m[1]] = true
			v, ok := subs[m[1]]
			if !ok || v == nil || asJSON(v) == `""` {
				t.Errorf("%s: ${%s} has no substitution", name, m[1])
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
	if len(rules) != 3 || len(resourcesOf(existingTJ, "AWS::Events::Rule")) != 1 {
		t.Fatalf("rules: %d (the pointer's and the fleet's two), %d without a fleet", len(rules), len(resourcesOf(existingTJ, "AWS::Events::Rule")))
	}
	for _, p := range rules {
		if p["Name"] != "rlm-test-release" {
			continue
		}
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
		for _, want := range []string{`"pointer":<detail-pointer>`, `"target_version":<detail-target_format_version>`, `"shards":16`, `"in_place_auto":false`, `"online":true`, `"trigger":"release:<id>"`} {
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
	if len(ss) != 2 || len(resourcesOf(existingTJ, "AWS::Scheduler::Schedule")) != 1 {
		t.Fatalf("schedules: %d (the pointer's and the fleet's), %d without a fleet", len(ss), len(resourcesOf(existingTJ, "AWS::Scheduler::Schedule")))
	}
	for _, p := range ss {
		if p["Name"] != "rlm-test-drift" {
			continue
		}
		if p["ScheduleExpression"] != testCfg.DriftSchedule || p["State"] != "ENABLED" {
			t.Errorf("schedule %v %v", p["ScheduleExpression"], p["State"])
		}
		tgt := asJSON(p["Target"])
		if !strings.Contains(tgt, "DriftStateMachine") {
			t.Errorf("schedule target %s", tgt)
		}
		// drift.asl.json's input: {"pointer", "topic"}; the expected version
		// is read at run time.
		for _, want := range []string{`\"pointer\":\"s3://`, `/rocklake/CURRENT\"`, `\"topic\":\"`, "AlertTopic"} {
			if !strings.Contains(tgt, want) {
				t.Errorf("schedule input lacks %s: %s", want, tgt)
			}
		}
		if strings.Contains(tgt, `\"expect\"`) {
			t.Errorf("the schedule fixes the expected version at deploy: %s", tgt)
		}
	}
}

// One page per event: no alarm pages on failed executions (their notices
// do); alarms page for timeouts, stopped executions, notices that could not
// be published and a drift check that could not look. Lambda error alarms
// exist, unpaged.
func TestTopicAndAlarms(t *testing.T) {
	tmpl.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(1))
	var topicID string
	for id := range resources("AWS::SNS::Topic") {
		topicID = id
	}
	if !strings.Contains(asJSON(resources("AWS::SNS::TopicPolicy")), `"aws:SecureTransport":"false"`) {
		t.Error("topic does not enforce TLS")
	}
	paged, unpaged := map[string]bool{}, map[string]bool{}
	for id, p := range resources("AWS::CloudWatch::Alarm") {
		if p["TreatMissingData"] != "notBreaching" {
			t.Errorf("alarm %s: missing data %v", id, p["TreatMissingData"])
		}
		key := fmt.Sprint(p["Namespace"], "/", p["MetricName"], "/", asJSON(p["Dimensions"]))
		if strings.Contains(asJSON(p["AlarmActions"]), topicID) {
			paged[key] = true
		} else {
			unpaged[key] = true
		}
		if p["MetricName"] == "ExecutionsFailed" && paged[key] {
			t.Errorf("alarm %s pages on ExecutionsFailed: a second page for a failure its notice reported", id)
		}
	}
	has := func(set map[string]bool, ns, metric, dim string) bool {
		for k := range set {
			if strings.HasPrefix(k, ns+"/"+metric+"/") && strings.Contains(k, dim) {
				return true
			}
		}
		return false
	}
	for _, sm := range []string{"MigrationStateMachine", "RollbackStateMachine", "FleetStateMachine"} {
		for _, m := range []string{"ExecutionsTimedOut", "ExecutionsAborted"} {
			if !has(paged, "AWS/States", m, sm) {
				t.Errorf("no paging alarm on %s %s", sm, m)
			}
		}
	}
	for _, m := range []string{"MigrationFailedUnreported", "RollbackFailedUnreported", "FleetFailedUnreported", "DriftCheckBroken"} {
		if !has(paged, MetricsNamespace, m, "") {
			t.Errorf("no paging alarm on %s", m)
		}
	}
	for _, f := range Functions {
		id, _ := fnByName(t, f.Name)
		if !has(unpaged, "AWS/Lambda", "Errors", id) {
			t.Errorf("no unpaged alarm on the %s Lambda's errors", f.Name)
		}
	}
	// The metric filters count exactly the events no notice reported.
	filters := map[string]string{}
	for _, p := range resources("AWS::Logs::MetricFilter") {
		mt := p["MetricTransformations"].([]any)[0].(map[string]any)
		filters[mt["MetricName"].(string)] = p["FilterPattern"].(string) + " on " + asJSON(p["LogGroupName"])
	}
	for name, want := range map[string][]string{
		"MigrationFailedUnreported": {`$.type = "FailStateEntered"`, `$.details.name = "FailedUnreported"`, "MigrationStateMachineLogs"},
		"RollbackFailedUnreported":  {`$.type = "FailStateEntered"`, `$.details.name = "FailedUnreported"`, "RollbackStateMachineLogs"},
		"FleetFailedUnreported":     {`$.type = "FailStateEntered"`, `$.details.name = "FailedUnreported"`, "FleetStateMachineLogs"},
		"DriftCheckBroken":          {`$.type = "ExecutionFailed"`, `$.details.error != "DriftFound"`, "DriftStateMachineLogs"},
	} {
		for _, w := range want {
			if !strings.Contains(filters[name], w) {
				t.Errorf("metric filter %s: %q lacks %s", name, filters[name], w)
			}
		}
	}
	for _, def := range [][]byte{statemachine.Migration, statemachine.Rollback, statemachine.Fleet} {
		if !strings.Contains(string(def), `"FailedUnreported": {`) {
			t.Error("a definition has no FailedUnreported state for the alarm to count")
		}
	}
}

// The expected version is read at run time from an SSM parameter the
// release pipeline sets; only check may read it, and only it.
func TestExpectedVersionParameter(t *testing.T) {
	tmpl.HasResourceProperties(jsii.String("AWS::SSM::Parameter"), map[string]any{
		"Name": "/rlm-test/expected-format-version", "Type": "String", "Value": "2",
	})
	_, check := fnByName(t, "check")
	if env := asJSON(check["Environment"]); !strings.Contains(env, `"ROCKLAKE_EXPECTED_VERSION_PARAMETER":"/rlm-test/expected-format-version"`) {
		t.Errorf("check's environment %s", env)
	}
	found := false
	for _, s := range policiesOf(t, "CheckRole") {
		if !strings.Contains(asJSON(s["Action"]), "ssm:") {
			continue
		}
		found = true
		// The parameter's ARN: ...:parameter + its name (a Ref to it).
		res := asJSON(s["Resource"])
		if asJSON(s["Action"]) != `"ssm:GetParameter"` || !strings.Contains(res, ":parameter\"") || !strings.Contains(res, `{"Ref":"ExpectedVersion`) {
			t.Errorf("check's SSM statement %s", asJSON(s))
		}
	}
	if !found {
		t.Error("check cannot read the expected-version parameter")
	}
	for _, f := range Functions[1:] {
		if strings.Contains(asJSON(policiesOf(t, title(f.Name)+"Role")), "ssm:") {
			t.Errorf("%s may read SSM", f.Name)
		}
	}
}

// existingCatalogBucket and existingStagingBucket: no bucket is created,
// and the roles reach the named buckets' prefixes.
func TestExistingBuckets(t *testing.T) {
	if n := len(resourcesOf(existingTJ, "AWS::S3::Bucket")); n != 0 {
		t.Errorf("%d buckets created on existing ones", n)
	}
	if n := len(resourcesOf(existingTJ, "AWS::S3::BucketPolicy")); n != 0 {
		t.Errorf("%d bucket policies written on existing buckets", n)
	}
	var check, export string
	for _, p := range resourcesOf(existingTJ, "AWS::IAM::Policy") {
		roles := asJSON(p["Roles"])
		switch {
		case strings.Contains(roles, `"Ref":"CheckRole`):
			check += asJSON(p)
		case strings.Contains(roles, `"Ref":"ExportRole`):
			export += asJSON(p)
		}
	}
	for _, want := range []string{":s3:::acme-existing-catalog/rocklake/CURRENT", ":s3:::acme-existing-catalog/catalogs/*", ":s3:::acme-existing-staging/migrations/*"} {
		if !strings.Contains(check, want) {
			t.Errorf("check's policy lacks %s: %s", want, check)
		}
	}
	if !strings.Contains(export, ":s3:::acme-existing-catalog/catalogs/*") || touchesPointer(export) {
		t.Errorf("export's policy on existing buckets: %s", export)
	}
	outs := asJSON(existingTJ["Outputs"])
	if !strings.Contains(outs, "s3://acme-existing-catalog/rocklake/CURRENT") || !strings.Contains(outs, "s3://acme-existing-staging/migrations") {
		t.Errorf("outputs %s", outs)
	}
}

// The dashboard shows the executions, the Map's progress, the Lambdas'
// errors and durations, rows per second from the steps' embedded metrics,
// the alarms and the failed steps' log lines.
func TestDashboard(t *testing.T) {
	ds := resources("AWS::CloudWatch::Dashboard")
	if len(ds) != 1 {
		t.Fatalf("dashboards: %d", len(ds))
	}
	for _, p := range ds {
		body := asJSON(p["DashboardBody"])
		for _, want := range []string{
			`\"AWS/States\",\"ExecutionsStarted\"`, "ExecutionsSucceeded", "ExecutionsFailed",
			`\"RockLakeMigrate\",\"Rows\",\"Step\",\"Import\"`, "rowsimport / PERIOD(rowsimport)", "ExportTransformShard", "SampleCount",
			`\"AWS/Lambda\",\"Errors\"`, `\"AWS/Lambda\",\"Duration\"`, "alarms", "step failed", "migration_id",
		} {
			if !strings.Contains(body, want) {
				t.Errorf("dashboard lacks %s", want)
			}
		}
		for _, f := range Functions {
			id, _ := fnByName(t, f.Name)
			if !strings.Contains(body, id) {
				t.Errorf("dashboard does not show the %s Lambda", f.Name)
			}
		}
	}
}

// cdk-nag's AwsSolutions rules: no unsuppressed error on either stack, and
// every suppression says why.
func TestNag(t *testing.T) {
	if len(nagCanary) == 0 {
		t.Fatal("cdk-nag did not flag the canary's plain-HTTP bucket (AwsSolutions-S10): the rules did not run")
	}
	for _, e := range nagErrors {
		t.Errorf("cdk-nag: %s", e)
	}
	for _, w := range nagWarnings {
		t.Logf("cdk-nag warning: %s", w)
	}
	for _, s := range nagSuppressions {
		if len(s.reason) < 40 {
			t.Errorf("suppression %s: reason %q says too little", s.id, s.reason)
		}
	}
	meta := asJSON(tj["Metadata"])
	if !strings.Contains(meta, "cdk_nag") || !strings.Contains(meta, "AwsSolutions-S1") {
		t.Errorf("the template does not carry its nag suppressions: %s", meta)
	}
}

func TestOutputs(t *testing.T) {
	outs := tj["Outputs"].(map[string]any)
	for _, k := range []string{"StateMachineArn", "RollbackStateMachineArn", "FleetStateMachineArn", "PointerLocation", "TopicArn", "ExpectedVersionParameter", "DashboardUrl"} {
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
		{"existingCatalogBucket": true},
		{"existingStagingBucket": "maybe", "stagingBucketName": "b"},
		{"expectedVersionParameter": "rocklake/expected"},
		{"executionTimeoutHours": 0},
		{"fleetSources": "tenants/"},                                // not an s3:// URL
		{"fleetSources": "s3://b/"},                                 // a bucket's root
		{"fleetSources": "s3://b/lists/eu.txt"},                     // a list, and no fleetPrefixes
		{"fleetSources": "s3://b/t/", "fleetPrefixes": "s3://b/eu"}, // a prefix not ending in /
		{"fleetPrefixes": "s3://b/t/"},                              // prefixes without sources
		{"fleetSources": "s3://b/t/", "fleetConcurrency": 0},        // nothing would run
		{"fleetSources": "s3://b/t/", "fleetConcurrency": 60},
		{"shardConcurrency": 900},                                   // reservations past the account's concurrency
		{"accountConcurrency": 99},                                  // 60 × 16 shard steps
		{"fleetSources": "s3://b/t/", "executionTimeoutHours": 200}, // a migration outlasting the fleet run (synthesis)
	} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
		if _, err := ConfigFromContext(app.Node()); err == nil {
			t.Errorf("context %v accepted", ctx)
		}
	}
}

// An execution timeout that a postponed migration's wait at the gate could
// outlast is refused: the run would end without its Abort.
func TestExecutionTimeoutCoversTheGate(t *testing.T) {
	cfg := testCfg
	cfg.ExecutionTimeoutHours = 12
	if _, err := MigrationDefinition(cfg); err == nil {
		t.Fatal("executionTimeoutHours 12 accepted though the gate waits 20 h")
	}
	cfg.ExecutionTimeoutHours = 33
	if _, err := MigrationDefinition(cfg); err != nil {
		t.Fatalf("executionTimeoutHours 33: %v", err)
	}
}

// The check function knows the inplace function's memory, which Check and
// Plan hold in_place_max_bytes to (issue 24, 7): the same figure.
func TestCheckKnowsTheInPlaceMemory(t *testing.T) {
	_, inplace := fnByName(t, "inplace")
	_, check := fnByName(t, "check")
	env, _ := check["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if got := fmt.Sprint(vars[InPlaceMemoryEnv]); got != fmt.Sprint(inplace["MemorySize"]) {
		t.Fatalf("check's %s = %s, the inplace function's memory %v", InPlaceMemoryEnv, got, inplace["MemorySize"])
	}
}
