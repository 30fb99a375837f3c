package asl_test

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// one wraps a single state S into a machine.
func one(state string) string {
	return `{"StartAt": "S", "States": {"S": ` + state + `}}`
}

func TestLoadRejectsUnsupportedFieldNamingItsPath(t *testing.T) {
	def := `{
	  "StartAt": "Shards",
	  "States": {
	    "Shards": {
	      "Type": "Map",
	      "ItemProcessor": {
	        "ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},
	        "StartAt": "ExportShard",
	        "States": {
	          "ExportShard": {"Type": "Task", "Resource": "export", "Foo": 1, "End": true}
	        }
	      },
	      "End": true
	    }
	  }
	}`
	_, err := asl.Load([]byte(def))
	var de *asl.DefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("want *DefinitionError, got %v", err)
	}
	want := []asl.Problem{{Path: "$.States.Shards.ItemProcessor.States.ExportShard.Foo", Message: `unsupported field "Foo"`}}
	if !reflect.DeepEqual(de.Problems, want) {
		t.Fatalf("problems %v, want %v", de.Problems, want)
	}
	if got := err.Error(); got != `asl: invalid definition: $.States.Shards.ItemProcessor.States.ExportShard.Foo: unsupported field "Foo"` {
		t.Errorf("message %q", got)
	}
}

func TestLoadRejectsUnsupportedStateTypes(t *testing.T) {
	loadErr(t, `{"StartAt": "P", "States": {
	  "P": {"Type": "Parallel", "Branches": [], "Next": "Done"},
	  "Done": {"Type": "Succeed"}}}`, "$.States.P.Type", `unsupported state type "Parallel"`)
	loadErr(t, one(`{"Type": "Sleep", "End": true}`), "$.States.S.Type", `unknown state type "Sleep"`)
	loadErr(t, one(`{"End": true}`), "$.States.S", "missing Type")
}

func TestLoadProblems(t *testing.T) {
	cases := []struct {
		name, def, path, msg string
	}{
		{"JSONata", `{"QueryLanguage": "JSONata", "StartAt": "S", "States": {"S": {"Type": "Succeed"}}}`, "$.QueryLanguage", "JSONata"},
		{"top-level Version", `{"Version": "1.0", "StartAt": "S", "States": {"S": {"Type": "Succeed"}}}`, "$.Version", `unsupported field "Version"`},
		{"missing StartAt", `{"States": {"S": {"Type": "Succeed"}}}`, "$", "missing StartAt"},
		{"StartAt names nothing", `{"StartAt": "X", "States": {"S": {"Type": "Succeed"}}}`, "$.StartAt", `no state named "X"`},
		{"Next names nothing", `{"StartAt": "S", "States": {"S": {"Type": "Pass", "Next": "Nowhere"}}}`, "$.States.S.Next", `no state named "Nowhere"`},
		{"Catch Next names nothing", one(`{"Type": "Task", "Resource": "r", "End": true, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "Gone"}]}`), "$.States.S.Catch[0].Next", `no state named "Gone"`},
		{"Choice Next names nothing", one(`{"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": true, "Next": "Gone"}]}`), "$.States.S.Choices[0].Next", `no state named "Gone"`},
		{"Default names nothing", one(`{"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": true, "Next": "S"}], "Default": "Gone"}`), "$.States.S.Default", `no state named "Gone"`},
		{"unreachable", `{"StartAt": "A", "States": {"A": {"Type": "Succeed"}, "B": {"Type": "Succeed"}}}`, "$.States.B", "not reachable"},
		{"neither Next nor End", one(`{"Type": "Pass"}`), "$.States.S", `neither "Next" nor "End"`},
		{"both Next and End", `{"StartAt": "S", "States": {"S": {"Type": "Pass", "Next": "T", "End": true}, "T": {"Type": "Succeed"}}}`, "$.States.S", "not both"},
		{"End false", one(`{"Type": "Pass", "End": false}`), "$.States.S.End", "only ever true"},
		{"Next on Succeed", `{"StartAt": "S", "States": {"S": {"Type": "Succeed", "Next": "S"}}}`, "$.States.S.Next", `not allowed in a Succeed state`},
		{"Retry on Pass", one(`{"Type": "Pass", "End": true, "Retry": []}`), "$.States.S.Retry", `not allowed in a Pass state`},
		{"wildcard path", one(`{"Type": "Pass", "InputPath": "$.a[*]", "End": true}`), "$.States.S.InputPath", "wildcards are not supported"},
		{"recursive descent", one(`{"Type": "Pass", "OutputPath": "$..a", "End": true}`), "$.States.S.OutputPath", "recursive descent"},
		{"slice", one(`{"Type": "Pass", "InputPath": "$.a[0:2]", "End": true}`), "$.States.S.InputPath", "slices"},
		{"filter", one(`{"Type": "Pass", "InputPath": "$.a[?(@.b > 1)]", "End": true}`), "$.States.S.InputPath", "filters"},
		{"not a path", one(`{"Type": "Pass", "InputPath": "a.b", "End": true}`), "$.States.S.InputPath", "starts with $"},
		{"bad path in Parameters", one(`{"Type": "Pass", "Parameters": {"x": {"y.$": "$.a.*"}}, "End": true}`), "$.States.S.Parameters.x['y.$']", "invalid JSONPath"},
		{"neither path nor intrinsic", one(`{"Type": "Pass", "Parameters": {"x.$": "hello"}, "End": true}`), "$.States.S.Parameters['x.$']", "neither a path"},
		{"dynamic value not a string", one(`{"Type": "Pass", "Parameters": {"x.$": 3}, "End": true}`), "$.States.S.Parameters['x.$']", "a path or an intrinsic function"},
		{"field given twice", one(`{"Type": "Pass", "Parameters": {"x.$": "$.a", "x": 1}, "End": true}`), "$.States.S.Parameters.x", "also given"},
		{"ResultPath into $$", one(`{"Type": "Pass", "ResultPath": "$$.Execution.Id", "End": true}`), "$.States.S.ResultPath", "context object"},
		{"unknown intrinsic", one(`{"Type": "Pass", "Parameters": {"x.$": "States.Nope(1)"}, "End": true}`), "$.States.S.Parameters['x.$']", "unknown intrinsic function States.Nope"},
		{"unsupported intrinsic", one(`{"Type": "Pass", "Parameters": {"x.$": "States.Hash($.a, 'SHA-1')"}, "End": true}`), "$.States.S.Parameters['x.$']", "not supported"},
		{"open escape", one(`{"Type": "Pass", "Parameters": {"x.$": "States.Format('a\\nb')"}, "End": true}`), "$.States.S.Parameters['x.$']", "open escape"},
		{"unescaped brace", one(`{"Type": "Pass", "Parameters": {"x.$": "States.Format('{ }')"}, "End": true}`), "$.States.S.Parameters['x.$']", "unescaped '{'"},
		{"placeholder count", one(`{"Type": "Pass", "Parameters": {"x.$": "States.Format('{} and {}', $.a)"}, "End": true}`), "$.States.S.Parameters['x.$']", "2 {} placeholder(s) but 1 value(s)"},
		{"arity", one(`{"Type": "Pass", "Parameters": {"x.$": "States.MathAdd(1)"}, "End": true}`), "$.States.S.Parameters['x.$']", "takes 2 argument(s), got 1"},
		{"ArrayRange step 0", one(`{"Type": "Pass", "Parameters": {"x.$": "States.ArrayRange(1, 5, 0)"}, "End": true}`), "$.States.S.Parameters['x.$']", "step must not be 0"},
		{"ArrayRange fraction", one(`{"Type": "Pass", "Parameters": {"x.$": "States.ArrayRange(1, 5.5, 1)"}, "End": true}`), "$.States.S.Parameters['x.$']", "must be an integer"},
		{"MathAdd string", one(`{"Type": "Pass", "Parameters": {"x.$": "States.MathAdd('1', 2)"}, "End": true}`), "$.States.S.Parameters['x.$']", "must be a number"},
		{"trailing junk", one(`{"Type": "Pass", "Parameters": {"x.$": "States.UUID() x"}, "End": true}`), "$.States.S.Parameters['x.$']", "unexpected"},
		{"States.ALL not alone", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["States.ALL", "X"]}]}`), "$.States.S.Retry[0].ErrorEquals[0]", "alone"},
		{"States.ALL retrier not last", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["X"]}]}`), "$.States.S.Retry[0]", "must be the last"},
		{"States.ALL catcher not last", `{"StartAt": "S", "States": {"S": {"Type": "Task", "Resource": "r", "End": true, "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "F"}, {"ErrorEquals": ["X"], "Next": "F"}]}, "F": {"Type": "Fail"}}}`, "$.States.S.Catch[0]", "must be the last"},
		{"unknown States error", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["States.Timout"]}]}`), "$.States.S.Retry[0].ErrorEquals[0]", `unknown error name "States.Timout"`},
		{"empty ErrorEquals", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": []}]}`), "$.States.S.Retry[0].ErrorEquals", "non-empty"},
		{"BackoffRate below 1", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "BackoffRate": 0.5}]}`), "$.States.S.Retry[0].BackoffRate", "at least 1.0"},
		{"MaxDelaySeconds 0", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "MaxDelaySeconds": 0}]}`), "$.States.S.Retry[0].MaxDelaySeconds", "from 1 to"},
		{"IntervalSeconds 0", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "IntervalSeconds": 0}]}`), "$.States.S.Retry[0].IntervalSeconds", "from 1 to"},
		{"negative MaxAttempts", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "MaxAttempts": -1}]}`), "$.States.S.Retry[0].MaxAttempts", "from 0 to"},
		{"JitterStrategy", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "JitterStrategy": "HALF"}]}`), "$.States.S.Retry[0].JitterStrategy", `"FULL" or "NONE"`},
		{"retrier field", one(`{"Type": "Task", "Resource": "r", "End": true, "Retry": [{"ErrorEquals": ["X"], "Comment": "c"}]}`), "$.States.S.Retry[0].Comment", `unsupported field "Comment"`},
		{"catcher without Next", one(`{"Type": "Task", "Resource": "r", "End": true, "Catch": [{"ErrorEquals": ["X"]}]}`), "$.States.S.Catch[0]", "missing Next"},
		{"missing Resource", one(`{"Type": "Task", "End": true}`), "$.States.S", "missing Resource"},
		{"callback without its token", one(`{"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke.waitForTaskToken", "Parameters": {"FunctionName": "f", "Payload": {"x.$": "$.x"}}, "End": true}`), "$.States.S.Parameters", "must pass $$.Task.Token"},
		{"callback in a Map", one(`{"Type": "Map", "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Task", "Resource": "r.waitForTaskToken", "Parameters": {"t.$": "$$.Task.Token"}, "End": true}}}, "End": true}`), "$.States.S.ItemProcessor.States.A.Resource", "only at the top level"},
		{"lambda:invoke without FunctionName", one(`{"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"Payload.$": "$"}, "End": true}`), "$.States.S.Parameters", "missing FunctionName"},
		{"lambda:invoke extra parameter", one(`{"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "f", "InvocationType": "Event"}, "End": true}`), "$.States.S.Parameters.InvocationType", `unsupported field "InvocationType"`},
		{"TimeoutSecondsPath", one(`{"Type": "Task", "Resource": "r", "TimeoutSecondsPath": "$.t", "End": true}`), "$.States.S.TimeoutSecondsPath", "not supported"},
		{"Heartbeat not below timeout", one(`{"Type": "Task", "Resource": "r", "TimeoutSeconds": 5, "HeartbeatSeconds": 5, "End": true}`), "$.States.S.HeartbeatSeconds", "smaller than TimeoutSeconds"},
		{"state QueryLanguage", one(`{"Type": "Pass", "QueryLanguage": "JSONPath", "End": true}`), "$.States.S.QueryLanguage", "per-state QueryLanguage"},
		{"Assign", one(`{"Type": "Pass", "Assign": {"x": 1}, "End": true}`), "$.States.S.Assign", "variables"},
		{"Map Iterator", one(`{"Type": "Map", "Iterator": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.Iterator", "use ItemProcessor"},
		{"Map Parameters", one(`{"Type": "Map", "Parameters": {}, "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.Parameters", "use ItemSelector"},
		{"Map ItemReader", one(`{"Type": "Map", "ItemReader": {}, "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ItemReader", "not supported"},
		{"inline Map tolerated failures", one(`{"Type": "Map", "ToleratedFailureCount": 1, "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S", `needs Mode "DISTRIBUTED"`},
		{"tolerated percentage past 100", one(`{"Type": "Map", "ToleratedFailurePercentage": 101, "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ToleratedFailurePercentage", "0 to 100"},
		{"MaxConcurrency and its Path", one(`{"Type": "Map", "MaxConcurrency": 2, "MaxConcurrencyPath": "$.c", "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S", "exclude each other"},
		{"Map without ItemProcessor", one(`{"Type": "Map", "End": true}`), "$.States.S", "missing ItemProcessor"},
		{"DISTRIBUTED without ExecutionType", one(`{"Type": "Map", "ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED"}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ItemProcessor.ProcessorConfig", "needs an ExecutionType"},
		{"bad Mode", one(`{"Type": "Map", "ItemProcessor": {"ProcessorConfig": {"Mode": "PARALLEL"}, "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ItemProcessor.ProcessorConfig.Mode", `"INLINE" or "DISTRIBUTED"`},
		{"ItemProcessor field", one(`{"Type": "Map", "ItemProcessor": {"Comment": "c", "StartAt": "A", "States": {"A": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ItemProcessor.Comment", `unsupported field "Comment"`},
		{"nested unreachable", one(`{"Type": "Map", "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Succeed"}, "B": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ItemProcessor.States.B", "not reachable"},
		{"transition out of a Map", one(`{"Type": "Map", "ItemProcessor": {"StartAt": "A", "States": {"A": {"Type": "Pass", "Next": "S"}}}, "End": true}`), "$.States.S.ItemProcessor.States.A.Next", "another scope"},
		{"duplicate name across scopes", one(`{"Type": "Map", "ItemProcessor": {"StartAt": "S", "States": {"S": {"Type": "Succeed"}}}, "End": true}`), "$.States.S.ItemProcessor.States.S", "duplicate state name"},
		{"long name", `{"StartAt": "` + strings.Repeat("n", 81) + `", "States": {"` + strings.Repeat("n", 81) + `": {"Type": "Succeed"}}}`, "$.States." + strings.Repeat("n", 81), "1 to 80 characters"},
		{"choice operator unsupported", one(`{"Type": "Choice", "Choices": [{"Variable": "$.a", "StringMatches": "x*", "Next": "S"}]}`), "$.States.S.Choices[0].StringMatches", "not supported"},
		{"choice two operators", one(`{"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": true, "IsNull": false, "Next": "S"}]}`), "$.States.S.Choices[0].IsNull", "exactly one operator"},
		{"choice without Variable", one(`{"Type": "Choice", "Choices": [{"StringEquals": "x", "Next": "S"}]}`), "$.States.S.Choices[0]", "needs a Variable"},
		{"choice top rule without Next", `{"StartAt": "S", "States": {"S": {"Type": "Choice", "Choices": [{"Variable": "$.a", "IsPresent": true}], "Default": "T"}, "T": {"Type": "Succeed"}}}`, "$.States.S.Choices[0]", "needs Next"},
		{"nested rule with Next", one(`{"Type": "Choice", "Choices": [{"Not": {"Variable": "$.a", "IsPresent": true, "Next": "S"}, "Next": "S"}]}`), "$.States.S.Choices[0].Not.Next", "only a top-level"},
		{"operand type", one(`{"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": "3", "Next": "S"}]}`), "$.States.S.Choices[0].NumericEquals", "takes a number"},
		{"empty And", one(`{"Type": "Choice", "Choices": [{"And": [], "Next": "S"}]}`), "$.States.S.Choices[0].And", "non-empty array"},
		{"Fail Error and ErrorPath", one(`{"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}`), "$.States.S", "mutually exclusive"},
		{"Fail InputPath", one(`{"Type": "Fail", "InputPath": "$"}`), "$.States.S.InputPath", "not allowed in a Fail state"},
		{"Wait without time", one(`{"Type": "Wait", "End": true}`), "$.States.S", "exactly one of"},
		{"Wait bad timestamp", one(`{"Type": "Wait", "Timestamp": "tomorrow", "End": true}`), "$.States.S.Timestamp", "RFC 3339"},
		{"TimeoutSeconds 0", `{"TimeoutSeconds": 0, "StartAt": "S", "States": {"S": {"Type": "Succeed"}}}`, "$.TimeoutSeconds", "from 1 to"},
		{"duplicate JSON key", `{"StartAt": "S", "States": {"S": {"Type": "Succeed", "Type": "Pass"}}}`, "$.States.S.Type", "duplicate key"},
		{"not JSON", `{"StartAt": "S",`, "$", "invalid JSON"},
		{"states empty", `{"StartAt": "S", "States": {}}`, "$.States", "non-empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { loadErr(t, c.def, c.path, c.msg) })
	}
}

func TestLoadReportsAllProblemsInOrder(t *testing.T) {
	_, err := asl.Load([]byte(`{"StartAt": "A", "States": {
	  "A": {"Type": "Pass", "Bar": 1, "Next": "B"},
	  "B": {"Type": "Task", "Resource": "r", "Baz": 2, "Next": "C"}
	}}`))
	var de *asl.DefinitionError
	if !errors.As(err, &de) {
		t.Fatal(err)
	}
	var paths []string
	for _, p := range de.Problems {
		paths = append(paths, p.Path)
	}
	want := []string{"$.States.A.Bar", "$.States.B.Baz", "$.States.B.Next"}
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("paths %v, want %v\n%v", paths, want, err)
	}
}

func TestLoadQuotesOddStateNames(t *testing.T) {
	loadErr(t, `{"StartAt": "Is it done?", "States": {"Is it done?": {"Type": "Pass", "Nope": 1, "End": true}}}`,
		"$.States['Is it done?'].Nope", `unsupported field "Nope"`)
}

func TestLoadAcceptsTheSupportedSubset(t *testing.T) {
	b, err := os.ReadFile("testdata/workflow.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := asl.Load(b)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	want := []string{"check", "freeze", "export", "transform", "import", "finalize", "verify", "flip", "arn:aws:states:::sns:publish", "abort"}
	if got := m.Resources(); !reflect.DeepEqual(got, want) {
		t.Errorf("Resources() = %q, want %q", got, want)
	}
	if m.Comment() == "" {
		t.Error("Comment lost")
	}
}
