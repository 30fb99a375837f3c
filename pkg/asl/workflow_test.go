package asl_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// workflowFuncs scripts the steps of testdata/workflow.asl.json.
type workflowFuncs struct {
	mu        sync.Mutex
	published []string
	aborted   []string
	imports   atomic.Int32
	flipErr   error
	exportErr func(shard int) error
	needed    bool
}

func (w *workflowFuncs) funcs() asl.Funcs {
	obj := func(in json.RawMessage) map[string]any {
		var m map[string]any
		_ = json.Unmarshal(in, &m)
		return m
	}
	out := func(v any) (json.RawMessage, error) {
		b, err := json.Marshal(v)
		return b, err
	}
	return asl.Funcs{
		"check": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			m := obj(in)
			if m["migrationId"] != "exec-1" || m["pointer"] != "s3://b/CURRENT" {
				return nil, &asl.TaskError{Name: "BadInput", Cause: string(in)}
			}
			return out(map[string]any{"needed": w.needed, "sourceVersion": 1, "etag": "\"e1\""})
		},
		"freeze": returns(`{"writerEpoch": 7, "nextSnapshotId": 42}`),
		"export": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			m := obj(in)
			shard := int(m["shard"].(float64))
			if w.exportErr != nil {
				if err := w.exportErr(shard); err != nil {
					return nil, err
				}
			}
			return out(map[string]any{"key": m["key"]})
		},
		"transform": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			m := obj(in)
			return out(map[string]any{"rows": 10 + m["shard"].(float64), "key": m["key"]})
		},
		"import": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			n := w.imports.Add(1)
			m := obj(in)
			if m["cursor"].(float64) != float64(n-1) {
				return nil, &asl.TaskError{Name: "BadCursor", Cause: string(in)}
			}
			return out(map[string]any{"done": n == 3, "cursor": n, "pauseSeconds": 0})
		},
		"finalize": returns(`{"ignored": true}`),
		"verify":   returns(`{"rows": 46, "digest": "abc"}`),
		"flip": func(context.Context, json.RawMessage) (json.RawMessage, error) {
			if w.flipErr != nil {
				return nil, w.flipErr
			}
			return json.RawMessage(`{"versionId": "v2"}`), nil
		},
		"arn:aws:states:::sns:publish": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.published = append(w.published, obj(in)["Message"].(string))
			return json.RawMessage(`{"MessageId": "m-1"}`), nil
		},
		"abort": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.aborted = append(w.aborted, string(in))
			return json.RawMessage(`{"removed": true}`), nil
		},
	}
}

func loadWorkflow(t *testing.T) *asl.Machine {
	t.Helper()
	b, err := os.ReadFile("testdata/workflow.asl.json")
	if err != nil {
		t.Fatal(err)
	}
	return mustLoad(t, string(b))
}

const workflowInput = `{"pointer": "s3://b/CURRENT", "targetVersion": 2, "shards": 4, "topic": "arn:aws:sns:us-east-1:1:t"}`

func TestWorkflowHappyPath(t *testing.T) {
	m := loadWorkflow(t)
	w := &workflowFuncs{needed: true}
	fs := w.funcs()
	if err := fs.Check(m); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var entered []string
	obs := asl.ObserverFuncs{Entered: func(e asl.StateEvent) {
		mu.Lock()
		defer mu.Unlock()
		if e.MapIndex == nil {
			entered = append(entered, e.Name)
		}
	}}
	out, err := asl.Run(context.Background(), m, json.RawMessage(workflowInput), asl.Options{
		Tasks: fs, Observer: obs, Sleep: (&sleeps{}).sleep, Now: fixedClock(t0), ExecutionName: "exec-1",
	})
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, string(out), `{"versionId": "v2"}`)
	want := []string{"Check", "NeedsMigration?", "Freeze", "PlanShards", "Shards", "InitImport",
		"Import", "ImportDone?", "ImportPause", "Import", "ImportDone?", "ImportPause", "Import", "ImportDone?",
		"Finalize", "Verify", "DryRun?", "Flip", "NotifySuccess", "Done"}
	if !slices.Equal(entered, want) {
		t.Errorf("states\n got %v\nwant %v", entered, want)
	}
	if len(w.published) != 1 || w.published[0] != "migration exec-1 done: v1 to v2" {
		t.Errorf("published %q", w.published)
	}
	if len(w.aborted) != 0 {
		t.Errorf("aborted: %v", w.aborted)
	}
}

func TestWorkflowNothingToDoAndDryRun(t *testing.T) {
	m := loadWorkflow(t)
	w := &workflowFuncs{needed: false}
	out, _, err := run(t, m, workflowInput, w.funcs())
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"needed": false, "sourceVersion": 1, "etag": "\"e1\""}`)

	w = &workflowFuncs{needed: true}
	out, _, err = run(t, m, strings.Replace(workflowInput, "{", `{"dryRun": true, `, 1), w.funcs())
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"rows": 46, "digest": "abc"}`)
	if len(w.published) != 0 {
		t.Errorf("a dry run published %q", w.published)
	}
}

func TestWorkflowFlipFailureAborts(t *testing.T) {
	m := loadWorkflow(t)
	w := &workflowFuncs{needed: true, flipErr: &asl.TaskError{Name: "SourceChangedDuringMigration", Cause: "writer-epoch moved from 7 to 8"}}
	_, _, err := run(t, m, workflowInput, w.funcs())
	ee := execErr(t, err, "SourceChangedDuringMigration")
	if ee.Cause != "writer-epoch moved from 7 to 8" || ee.State != "Failed" {
		t.Errorf("error %+v", ee)
	}
	if len(w.aborted) != 1 || !strings.Contains(w.aborted[0], `"Error":"SourceChangedDuringMigration"`) {
		t.Errorf("aborted %q", w.aborted)
	}
	if len(w.published) != 1 || !strings.HasPrefix(w.published[0], `migration exec-1 failed: {"Cause":"writer-epoch moved from 7 to 8","Error":"SourceChangedDuringMigration"}`) {
		t.Errorf("published %q", w.published)
	}
}

func TestWorkflowShardFailureIsAMapRunFailure(t *testing.T) {
	m := loadWorkflow(t)
	w := &workflowFuncs{needed: true, exportErr: func(shard int) error {
		if shard == 2 {
			return &asl.TaskError{Name: "ShardCorrupt", Cause: "bad checksum"}
		}
		return nil
	}}
	_, _, err := run(t, m, workflowInput, w.funcs())
	ee := execErr(t, err, "States.ExceedToleratedFailureThreshold")
	if !strings.Contains(ee.Cause, `item 2 failed in state "ExportShard" with ShardCorrupt: bad checksum`) {
		t.Errorf("cause %q", ee.Cause)
	}
	if len(w.aborted) != 1 {
		t.Errorf("aborted %d times", len(w.aborted))
	}
}
