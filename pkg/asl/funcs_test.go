package asl_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

func TestSubstitute(t *testing.T) {
	def := []byte(`{"StartAt": "S", "States": {"S": {"Type": "Map", "MaxConcurrency": ${Concurrency},
	  "ItemProcessor": {"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "${ExportFunctionArn}", "End": true}}},
	  "ItemSelector": {"note": "${Note}", "again": "${ExportFunctionArn}"}, "End": true}}}`)
	out, err := asl.Substitute(def, map[string]string{
		"Concurrency": "4", "ExportFunctionArn": "export", "Note": `say "hi" \ bye`, "Unused": "x",
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := asl.Load(out)
	if err != nil {
		t.Fatalf("Load after Substitute: %v\n%s", err, out)
	}
	if r := m.Resources(); len(r) != 1 || r[0] != "export" {
		t.Errorf("resources %q", r)
	}
	if !strings.Contains(string(out), `"note": "say \"hi\" \\ bye"`) {
		t.Errorf("value not escaped for JSON: %s", out)
	}

	_, err = asl.Substitute(def, map[string]string{"Concurrency": "4"})
	if err == nil || !strings.Contains(err.Error(), "${ExportFunctionArn}, ${Note}") {
		t.Errorf("missing placeholders: %v", err)
	}
	_, err = asl.Substitute([]byte(`{"a": ${X}}`), map[string]string{"X": "not json"})
	if err == nil {
		t.Error("invalid JSON after substitution accepted")
	}
}

func TestFuncs(t *testing.T) {
	m := mustLoad(t, `{"StartAt": "A", "States": {
	  "A": {"Type": "Task", "Resource": "check", "Next": "B"},
	  "B": {"Type": "Task", "Resource": "arn:aws:states:::lambda:invoke", "Parameters": {"FunctionName": "flip"}, "End": true,
	    "Catch": [{"ErrorEquals": ["States.ALL"], "Next": "C"}]},
	  "C": {"Type": "Succeed"}}}`)
	fs := asl.Funcs{"check": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"checked": ` + string(in) + `}`), nil
	}}
	if err := fs.Check(m); err == nil || !strings.Contains(err.Error(), `"flip"`) {
		t.Errorf("Check: %v", err)
	}
	// An unregistered resource is a wiring mistake: States.Runtime, not caught.
	_, _, err := run(t, m, `{"v": 1}`, fs)
	ee := execErr(t, err, "States.Runtime")
	if !strings.Contains(ee.Cause, `no function is registered for resource "flip"`) || ee.State != "B" {
		t.Errorf("%+v", ee)
	}
	fs["flip"] = returns(`"flipped"`)
	if err := fs.Check(m); err != nil {
		t.Fatal(err)
	}
	out, _, err := run(t, m, `{"v": 1}`, fs)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"Payload":"flipped"`) {
		t.Errorf("out %s", out)
	}
}
