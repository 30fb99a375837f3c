package asl_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// A Distributed Map that tolerates failures: the limits come from the
// input (MaxConcurrencyPath, ToleratedFailureCountPath); items that fail
// within them leave their Error and Cause as their output and the Map
// succeeds; past them it starts no more items, lets those running end,
// and fails with States.ExceedToleratedFailureThreshold.
func TestDistributedMapToleratesFailures(t *testing.T) {
	m := mustLoad(t, `{"StartAt": "M", "States": {"M": {"Type": "Map", "ItemsPath": "$.items",
		"MaxConcurrencyPath": "$.conc", "ToleratedFailureCountPath": "$.tolerated", "Label": "Items",
		"ItemProcessor": {"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"}, "StartAt": "T",
			"States": {"T": {"Type": "Task", "Resource": "work", "End": true}}}, "End": true}}}`)
	for _, c := range []struct {
		name      string
		tolerated int
		failing   map[int]bool
		wantErr   bool
		wantRuns  int32 // items started, at most
		wantFails int
	}{
		{"within", 1, map[int]bool{1: true}, false, 6, 1},
		{"past", 1, map[int]bool{0: true, 1: true}, true, 2, 0},
		{"none tolerated", 0, map[int]bool{0: true}, true, 1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var started, running, most atomic.Int32
			var mu sync.Mutex
			tasks := asl.Funcs{"work": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
				started.Add(1)
				now := running.Add(1)
				defer running.Add(-1)
				mu.Lock()
				most.Store(max(most.Load(), now))
				mu.Unlock()
				var i int
				if err := json.Unmarshal(in, &i); err != nil {
					return nil, err
				}
				if c.failing[i] {
					return nil, &asl.TaskError{Name: "Boom", Cause: "item failed"}
				}
				return in, nil
			}}
			in := `{"items": [0, 1, 2, 3, 4, 5], "conc": 1, "tolerated": ` + map[bool]string{true: "1", false: "0"}[c.tolerated == 1] + `}`
			out, _, err := run(t, m, in, tasks)
			if most.Load() != 1 {
				t.Errorf("%d items ran at once, MaxConcurrencyPath says 1", most.Load())
			}
			if c.wantErr {
				ee := execErr(t, err, "States.ExceedToleratedFailureThreshold")
				if !strings.Contains(ee.Cause, "Boom: item failed") {
					t.Errorf("cause %q", ee.Cause)
				}
				if started.Load() > c.wantRuns {
					t.Errorf("%d items started after the threshold was passed at item %d", started.Load(), c.wantRuns)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var res []any
			if err := json.Unmarshal([]byte(out), &res); err != nil || len(res) != 6 {
				t.Fatalf("output %s: %v", out, err)
			}
			if f, ok := res[1].(map[string]any); !ok || f["Error"] != "Boom" || f["Cause"] != "item failed" {
				t.Errorf("the failed item's output %v, want its Error and Cause", res[1])
			}
		})
	}
}
