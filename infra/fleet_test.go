package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	"github.com/rocklake/rocklake-migrate/statemachine"
)

// The test stack's fleet (TestMain): a prefix in the catalog bucket, a list
// in its own bucket, and the prefix the list's pointers lie under.
var (
	fleetObjects = []string{`:s3:::rlm-test-catalog/tenants/*"`, `:s3:::acme-eu/tenants/*"`}
	fleetRecords = []string{`:s3:::rlm-test-catalog/tenants.fleet/*"`, `:s3:::acme-fleet-lists/eu.txt.fleet/*"`}
	fleetList    = `:s3:::acme-fleet-lists/eu.txt"`
)

// inFleetScope: a statement's resources all lie in the fleet's scope, its
// runs' records or its list.
func inFleetScope(res string) bool {
	for _, r := range list(jsonValue(res)) {
		ok := strings.Contains(r, fleetList)
		for _, want := range append(slices.Clone(fleetObjects), fleetRecords...) {
			ok = ok || strings.Contains(r, want)
		}
		if !ok {
			return false
		}
	}
	return true
}

// jsonValue is asJSON's inverse, for list.
func jsonValue(s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return s
	}
	return v
}

// fleetStatements are the statements of role whose Sid starts with Fleet.
func fleetStatements(t *testing.T, role string) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, s := range policiesOf(t, role) {
		if sid, _ := s["Sid"].(string); strings.HasPrefix(sid, "Fleet") {
			out[sid] = s
		}
	}
	return out
}

// IAM covers the fleet's prefixes only: each function reaches the objects
// under them with exactly the actions it has on the stack's own pointer
// and catalogs; only check reaches the fleet runs' records and the list;
// every ListBucket has an s3:prefix condition naming those prefixes; and
// a stack without a fleet grants none of it.
func TestFleetIAMScope(t *testing.T) {
	want := map[string][]string{
		"check":   {"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObjectVersion"},
		"inplace": {"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObjectVersion"},
		"export":  {"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload"}, // Freeze deletes nothing
		"import":  {"s3:GetObject", "s3:PutObject", "s3:AbortMultipartUpload", "s3:DeleteObject"},
	}
	for _, f := range Functions {
		sts := fleetStatements(t, title(f.Name)+"Role")
		var objects []string
		records, lists, versions := false, false, false
		for sid, s := range sts {
			res := asJSON(s["Resource"])
			acts := actions([]map[string]any{s})
			switch {
			case strings.HasSuffix(sid, "Objects"):
				if !slices.Equal(acts, want[f.Name]) {
					t.Errorf("%s %s: %v, want %v", f.Name, sid, acts, want[f.Name])
				}
				objects = append(objects, list(s["Resource"])...)
			case strings.HasSuffix(sid, "Records"):
				records = true
				if !slices.Equal(acts, []string{"s3:GetObject", "s3:PutObject"}) || !inFleetScope(res) {
					t.Errorf("%s %s: %v on %s", f.Name, sid, acts, res)
				}
			case strings.HasSuffix(sid, "Lists"):
				lists = true
				if !slices.Equal(acts, []string{"s3:GetObject"}) || !strings.Contains(res, fleetList) || strings.Contains(res, "*") {
					t.Errorf("%s %s: %v on %s", f.Name, sid, acts, res)
				}
			case strings.HasSuffix(sid, "List"), strings.HasSuffix(sid, "PointerVersions"):
				versions = versions || strings.HasSuffix(sid, "PointerVersions")
				cond := asJSON(s["Condition"])
				if s["Condition"] == nil || strings.Contains(res, "/") || !strings.Contains(cond, `"s3:prefix"`) {
					t.Errorf("%s %s: a listing beyond a prefix: %s on %s", f.Name, sid, cond, res)
				}
				for _, p := range list(s["Condition"].(map[string]any)["StringLike"].(map[string]any)["s3:prefix"]) {
					if p = strings.Trim(p, `"`); p != "tenants/*" && p != "tenants.fleet/*" && p != "eu.txt.fleet/*" {
						t.Errorf("%s %s: lists %s", f.Name, sid, p)
					}
				}
			case strings.HasSuffix(sid, "Versioning"):
				if acts[0] != "s3:GetBucketVersioning" {
					t.Errorf("%s %s: %v", f.Name, sid, acts)
				}
			default:
				t.Errorf("%s: unexpected fleet statement %s: %s", f.Name, sid, asJSON(s))
			}
		}
		slices.Sort(objects)
		if got := strings.Join(objects, " "); !strings.Contains(got, fleetObjects[0]) || !strings.Contains(got, fleetObjects[1]) || len(objects) != 2 {
			t.Errorf("%s: fleet objects %v, want the two prefixes", f.Name, objects)
		}
		// The records and the list: FleetList and FleetReport, on check.
		if records != (f.Name == "check") || lists != (f.Name == "check") {
			t.Errorf("%s: records %v, lists %v", f.Name, records, lists)
		}
		if versions != (f.Name == "check" || f.Name == "inplace") {
			t.Errorf("%s: pointer versions %v (rollback and the flips need them)", f.Name, versions)
		}
	}
	for _, p := range resourcesOf(existingTJ, "AWS::IAM::Policy") {
		if j := asJSON(p); strings.Contains(j, `"Sid":"Fleet`) || strings.Contains(j, "tenants") {
			t.Errorf("a stack without a fleet grants the fleet's: %s", j)
		}
	}
}

// The fleet state machine is fleet.asl.json, inline, with its
// substitutions; its role invokes check, publishes, runs its own
// Distributed Map's children and the migration and rollback state machines
// as child executions (startExecution.sync:2), and nothing else.
func TestFleetStateMachine(t *testing.T) {
	p := stateMachine(t, "rlm-test-fleet")
	subs := asJSON(p["DefinitionSubstitutions"])
	for _, want := range []string{`"MigrationStateMachineArn":{"Ref":"MigrationStateMachine`, `"RollbackStateMachineArn":{"Ref":"RollbackStateMachine`, `"TopicArn":{"Ref":"AlertTopic`, `"CheckFunctionArn":{"Fn::GetAtt":["CheckFunction`} {
		if !strings.Contains(subs, want) {
			t.Errorf("substitutions %s lack %s", subs, want)
		}
	}
	sts := policiesOf(t, "FleetStateMachineRole")
	for _, a := range actions(sts) {
		switch a {
		case "lambda:InvokeFunction", "sns:Publish", "states:StartExecution", "states:DescribeExecution", "states:StopExecution",
			"states:RedriveExecution", "events:PutTargets", "events:PutRule", "events:DescribeRule":
		default:
			if !strings.HasPrefix(a, "logs:") && !strings.HasPrefix(a, "xray:") {
				t.Errorf("fleet role may %s", a)
			}
		}
	}
	byAction := map[string]string{}
	for _, s := range sts {
		for _, a := range actions([]map[string]any{s}) {
			byAction[a] += asJSON(s["Resource"])
		}
	}
	checkID, _ := fnByName(t, "check")
	for _, f := range Functions[1:] {
		if id, _ := fnByName(t, f.Name); strings.Contains(byAction["lambda:InvokeFunction"], id) {
			t.Errorf("fleet role may invoke %s", f.Name)
		}
	}
	for action, wants := range map[string][]string{
		"lambda:InvokeFunction": {checkID},
		"sns:Publish":           {"AlertTopic"},
		// Its children: the migration and rollback state machines, and its
		// own Distributed Map's.
		"states:StartExecution":    {"MigrationStateMachine", "RollbackStateMachine", ":stateMachine:rlm-test-fleet"},
		"states:DescribeExecution": {":execution:rlm-test-migration:*", ":execution:rlm-test-rollback:*", ":execution:rlm-test-fleet/*"},
		"states:StopExecution":     {":execution:rlm-test-migration:*", ":execution:rlm-test-rollback:*", ":execution:rlm-test-fleet/*"},
		// startExecution.sync:2 learns that a child ended through this rule.
		"events:PutRule": {":rule/StepFunctionsGetEventsForStepFunctionsExecutionRule"},
	} {
		for _, w := range wants {
			if !strings.Contains(byAction[action], w) {
				t.Errorf("fleet role: %s lacks %s: %s", action, w, byAction[action])
			}
		}
	}
	if strings.Contains(byAction["states:StartExecution"], "DriftStateMachine") {
		t.Error("the fleet role may start the drift check")
	}
	// Its alarms and its dashboard line.
	alarms := asJSON(resources("AWS::CloudWatch::Alarm"))
	for _, a := range []string{"rlm-test-FleetTimedOut", "rlm-test-FleetAborted", "rlm-test-FleetFailedUnreported"} {
		if !strings.Contains(alarms, a) {
			t.Errorf("no alarm %s", a)
		}
	}
	for _, d := range resources("AWS::CloudWatch::Dashboard") {
		if body := asJSON(d["DashboardBody"]); !strings.Contains(body, "Fleet executions") || !strings.Contains(body, "FleetStateMachine") {
			t.Error("the dashboard does not show the fleet's executions")
		}
	}
}

// A release event naming the fleet starts a fleet run of the configured
// sources; one carrying sources under the fleet's prefixes starts one of
// those; each with the deployment's canary, concurrency and failure limit
// and the pointer's migration settings for each child; an event with both
// starts one run, not two.
func TestFleetReleaseRules(t *testing.T) {
	rules := map[string]map[string]any{}
	for _, p := range resources("AWS::Events::Rule") {
		rules[p["Name"].(string)] = p
	}
	byName, bySources := rules["rlm-test-release-fleet"], rules["rlm-test-release-sources"]
	if byName == nil || bySources == nil {
		t.Fatalf("rules %v", slices.Collect(func(yield func(string) bool) {
			for k := range rules {
				if !yield(k) {
					return
				}
			}
		}))
	}
	detail := func(p map[string]any) map[string]any {
		pat := p["EventPattern"].(map[string]any)
		if asJSON(pat["source"]) != `["rocklake.release"]` || asJSON(pat["detail-type"]) != `["RockLake Release Deployed"]` {
			t.Errorf("pattern %s", asJSON(pat))
		}
		return pat["detail"].(map[string]any)
	}
	d := detail(byName)
	if asJSON(d["fleet"]) != `["tenants"]` || asJSON(d["sources"]) != `[{"exists":false}]` || asJSON(d["target_format_version"]) != `[{"numeric":["\u003e",0]}]` {
		t.Errorf("the fleet rule's detail %s", asJSON(d))
	}
	d = detail(bySources)
	if asJSON(d["fleet"]) != `[{"exists":false}]` ||
		asJSON(d["sources"]) != `[{"prefix":"s3://acme-eu/tenants/"},{"prefix":"s3://rlm-test-catalog/tenants/"},"s3://acme-fleet-lists/eu.txt"]` {
		t.Errorf("the sources rule's detail %s", asJSON(d))
	}
	for name, p := range map[string]map[string]any{"fleet": byName, "sources": bySources} {
		tgt := p["Targets"].([]any)[0].(map[string]any)
		if !strings.Contains(asJSON(tgt["Arn"]), "FleetStateMachine") || tgt["RoleArn"] == nil || tgt["RetryPolicy"] == nil {
			t.Errorf("%s: target %s", name, asJSON(tgt))
		}
		it := tgt["InputTransformer"].(map[string]any)
		in := it["InputTemplate"].(string)
		for _, want := range []string{`"action":"migrate"`, `"target_version":<detail-target_format_version>`, `"canary":2`, `"concurrency":3`, `"max_failures":5`,
			`"trigger":"release:<id>"`, `"child":{"in_place_auto":false,"online":true,"shards":16}`} {
			if !strings.Contains(in, want) {
				t.Errorf("%s: input %s lacks %s", name, in, want)
			}
		}
		sources := `"sources":["s3://rlm-test-catalog/tenants/","s3://acme-fleet-lists/eu.txt"]`
		if name == "sources" {
			sources = `"sources":<detail-sources>`
		}
		if !strings.Contains(in, sources) {
			t.Errorf("%s: input %s lacks %s", name, in, sources)
		}
	}
	paths := asJSON(bySources["Targets"].([]any)[0].(map[string]any)["InputTransformer"].(map[string]any)["InputPathsMap"])
	if !strings.Contains(paths, `"detail-sources":"$.detail.sources"`) {
		t.Errorf("paths %s", paths)
	}
}

// The fleet's drift check runs drift.asl.json with the fleet's sources
// (its FleetDrift step) on its own schedule; the expected version is read
// when it runs.
func TestFleetDriftSchedule(t *testing.T) {
	var found bool
	for _, p := range resources("AWS::Scheduler::Schedule") {
		if p["Name"] != "rlm-test-fleet-drift" {
			continue
		}
		found = true
		tgt := asJSON(p["Target"])
		if p["ScheduleExpression"] != testCfg.DriftSchedule || !strings.Contains(tgt, "DriftStateMachine") {
			t.Errorf("schedule %v on %s", p["ScheduleExpression"], tgt)
		}
		for _, want := range []string{`\"sources\":[\"s3://rlm-test-catalog/tenants/\",\"s3://acme-fleet-lists/eu.txt\"]`, `\"topic\":\"`} {
			if !strings.Contains(tgt, want) {
				t.Errorf("schedule input lacks %s: %s", want, tgt)
			}
		}
		if strings.Contains(tgt, `\"expect\"`) || strings.Contains(tgt, `\"pointer\"`) {
			t.Errorf("schedule input %s", tgt)
		}
	}
	if !found {
		t.Fatal("no fleet drift schedule")
	}
	if !strings.Contains(string(statemachine.Drift), `"step": "FleetDrift"`) {
		t.Error("drift.asl.json does not run FleetDrift")
	}
}

// The reservations hold the fleet's concurrent migrations: each runs one
// import and up to min(shards, shardConcurrency) shard steps at once, so
// none of their steps is throttled past the definitions' retries.
func TestFleetConcurrencySizesTheLambdas(t *testing.T) {
	c := testCfg.Fleet.Concurrency
	for fn, want := range map[string]int{
		"export":  c * min(testCfg.DefaultShards, testCfg.ShardConcurrency),
		"import":  c,
		"inplace": c,
		"check":   10,
	} {
		if _, p := fnByName(t, fn); p["ReservedConcurrentExecutions"] != float64(want) {
			t.Errorf("%s: reserved %v, want %d", fn, p["ReservedConcurrentExecutions"], want)
		}
	}
	// The fleet's Map gets its concurrency at run time, from FleetList, and
	// tolerates every failure (its items keep the failure limit, so that a
	// failed Map Run never stops a running migration).
	if !strings.Contains(string(statemachine.Fleet), `"MaxConcurrencyPath": "$.list.concurrency"`) ||
		!strings.Contains(string(statemachine.Fleet), `"ToleratedFailurePercentage": 100`) {
		t.Error("the fleet's Map does not take its concurrency from the run's input, or does not tolerate every failure")
	}
	// The reservations must leave the account's 100 unreserved: 48
	// migrations at once reserve 48 × 16 + 48 + 48 + 50 = 914 of 1000, 47
	// reserve 895.
	for n, bad := range map[int]bool{47: false, 48: true} {
		app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"fleetSources": "s3://b/t/", "fleetConcurrency": n}})
		_, err := ConfigFromContext(app.Node())
		if (err != nil) != bad || err != nil && !strings.Contains(err.Error(), "fleetConcurrency 48") {
			t.Errorf("fleetConcurrency %d: %v", n, err)
		}
	}
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"fleetSources": "s3://b/t/", "fleetConcurrency": 48, "accountConcurrency": 3000}})
	if _, err := ConfigFromContext(app.Node()); err != nil {
		t.Errorf("fleetConcurrency 48 in an account of 3000: %v", err)
	}
}
