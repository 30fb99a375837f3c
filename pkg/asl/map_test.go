package asl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// concurrency counts calls in flight.
type concurrency struct {
	now, max atomic.Int32
}

func (c *concurrency) enter() {
	n := c.now.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *concurrency) exit() { c.now.Add(-1) }

func mapDef(conc int, mode string) string {
	cfg := ""
	if mode != "" {
		cfg = `"ProcessorConfig": {"Mode": "` + mode + `", "ExecutionType": "EXPRESS"},`
		if mode == "INLINE" {
			cfg = `"ProcessorConfig": {"Mode": "INLINE"},`
		}
	}
	return fmt.Sprintf(`{"StartAt": "Shards", "States": {"Shards": {
	  "Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": %d,
	  "ItemSelector": {"i.$": "$$.Map.Item.Index", "v.$": "$$.Map.Item.Value", "label.$": "$.label"},
	  "ItemProcessor": {%s "StartAt": "Work", "States": {
	    "Work": {"Type": "Task", "Resource": "work", "Next": "Shape"},
	    "Shape": {"Type": "Pass", "Parameters": {"n.$": "$.n"}, "End": true}}},
	  "End": true}}}`, conc, cfg)
}

func items(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = fmt.Sprint(i * 10)
	}
	return `{"label": "L", "items": [` + strings.Join(parts, ",") + `]}`
}

func TestMapHundredItemsAtMostFourAtOnce(t *testing.T) {
	var c concurrency
	var arrived sync.WaitGroup
	arrived.Add(4)
	var first atomic.Int32
	rec := newRecorder().on("work", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		c.enter()
		defer c.exit()
		if first.Add(1) <= 4 {
			// The first four wait for each other, so the bound is reached.
			arrived.Done()
			done := make(chan struct{})
			go func() { arrived.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				return nil, fmt.Errorf("the first four iterations did not run together")
			}
		}
		time.Sleep(time.Millisecond)
		var v struct{ I, V int }
		if err := json.Unmarshal(in, &v); err != nil {
			return nil, err
		}
		return json.RawMessage(fmt.Sprintf(`{"n": %d, "extra": 1}`, v.V+v.I)), nil
	})
	out, _, err := run(t, mustLoad(t, mapDef(4, "DISTRIBUTED")), items(100), rec)
	if err != nil {
		t.Fatal(err)
	}
	if m := c.max.Load(); m != 4 {
		t.Errorf("at most %d iterations at once, want exactly 4", m)
	}
	var got []struct{ N int }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got) != 100 {
		t.Fatalf("%d results", len(got))
	}
	for i, g := range got {
		if g.N != i*11 {
			t.Fatalf("result %d = %d, want %d (results out of order?)", i, g.N, i*11)
		}
	}
	in := rec.inputs("work")
	if len(in) != 100 || !strings.Contains(strings.Join(in, ""), `"label":"L"`) {
		t.Errorf("inputs %d: %.200s", len(in), strings.Join(in, " "))
	}
}

func TestMapConcurrencyDefaultsAndBound(t *testing.T) {
	for _, c := range []struct {
		mapConc, optConc int
		want             int32
	}{
		{0, 3, 3},  // 0: all, bounded by Options.MaxConcurrency
		{10, 2, 2}, // the smaller bound wins
		{1, 40, 1}, // one at a time
	} {
		var cc concurrency
		rec := newRecorder().on("work", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
			cc.enter()
			defer cc.exit()
			time.Sleep(2 * time.Millisecond)
			return json.RawMessage(`{"n": 1}`), nil
		})
		_, err := asl.Run(context.Background(), mustLoad(t, mapDef(c.mapConc, "")), json.RawMessage(items(30)),
			asl.Options{Tasks: rec, MaxConcurrency: c.optConc})
		if err != nil {
			t.Fatal(err)
		}
		if m := cc.max.Load(); m > c.want {
			t.Errorf("MaxConcurrency %d, Options %d: %d at once, want at most %d", c.mapConc, c.optConc, m, c.want)
		}
	}
}

func TestMapItemFailurePropagates(t *testing.T) {
	for _, mode := range []string{"INLINE", "DISTRIBUTED"} {
		t.Run(mode, func(t *testing.T) {
			var canceled atomic.Int32
			rec := newRecorder().on("work", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
				var v struct{ I int }
				_ = json.Unmarshal(in, &v)
				if v.I == 7 {
					return nil, &asl.TaskError{Name: "ShardCorrupt", Cause: "shard 7 checksum"}
				}
				select {
				case <-ctx.Done():
					canceled.Add(1)
					return nil, ctx.Err()
				case <-time.After(5 * time.Second):
					return json.RawMessage(`{"n": 0}`), nil
				}
			})
			start := time.Now()
			_, _, err := run(t, mustLoad(t, mapDef(10, mode)), items(50), rec)
			if time.Since(start) > 3*time.Second {
				t.Errorf("the failure did not cancel the other iterations (%v)", time.Since(start))
			}
			if mode == "INLINE" {
				ee := execErr(t, err, "ShardCorrupt")
				if ee.Cause != "shard 7 checksum" || ee.State != "Work" {
					t.Errorf("%+v", ee)
				}
			} else {
				ee := execErr(t, err, "States.ExceedToleratedFailureThreshold")
				if ee.State != "Shards" || !strings.Contains(ee.Cause, "item 7") || !strings.Contains(ee.Cause, "ShardCorrupt") {
					t.Errorf("%+v", ee)
				}
			}
			if canceled.Load() == 0 {
				t.Error("no sibling iteration saw its context canceled")
			}
			if n := len(rec.inputs("work")); n > 20 {
				t.Errorf("%d iterations started after the failure", n)
			}
		})
	}
}

func TestMapCatchAndRetryWholeState(t *testing.T) {
	def := `{"StartAt": "M", "States": {
	  "M": {"Type": "Map", "ItemProcessor": {"StartAt": "W", "States": {"W": {"Type": "Task", "Resource": "work", "End": true}}},
	    "Retry": [{"ErrorEquals": ["Flaky"], "MaxAttempts": 1}],
	    "Catch": [{"ErrorEquals": ["Broken"], "ResultPath": "$[0]", "Next": "C"}], "End": true},
	  "C": {"Type": "Pass", "End": true}}}`
	var calls atomic.Int32
	rec := newRecorder().on("work", func(ctx context.Context, in json.RawMessage) (json.RawMessage, error) {
		if string(in) == "2" {
			if calls.Add(1) == 1 {
				return nil, &asl.TaskError{Name: "Flaky"}
			}
			return nil, &asl.TaskError{Name: "Broken", Cause: "for good"}
		}
		return in, nil
	})
	out, sl, err := run(t, mustLoad(t, def), `[1, 2]`, rec)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `[{"Error": "Broken", "Cause": "for good"}, 2]`)
	if len(sl.got()) != 1 {
		t.Errorf("retries %v", sl.got())
	}
}

func TestMapEdgeCases(t *testing.T) {
	def := `{"StartAt": "M", "States": {"M": {"Type": "Map", "ItemsPath": "$.xs", "ItemProcessor": {"StartAt": "P", "States": {
	  "P": {"Type": "Pass", "End": true}}}, "ResultSelector": {"count.$": "States.ArrayLength($)"}, "ResultPath": "$.r", "OutputPath": "$.r", "End": true}}}`
	m := mustLoad(t, def)
	out, _, err := run(t, m, `{"xs": []}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `{"count": 0}`)
	_, _, err = run(t, m, `{"xs": {"not": "an array"}}`, nil)
	execErr(t, err, "States.Runtime")
	_, _, err = run(t, m, `{}`, nil)
	execErr(t, err, "States.Runtime")

	// $$.Map.Item is for ItemSelector, not for the states inside.
	def = `{"StartAt": "M", "States": {"M": {"Type": "Map", "ItemProcessor": {"StartAt": "P", "States": {
	  "P": {"Type": "Pass", "Parameters": {"i.$": "$$.Map.Item.Index"}, "End": true}}}, "End": true}}}`
	_, _, err = run(t, mustLoad(t, def), `[1]`, nil)
	execErr(t, err, "States.Runtime")
}

func TestMapExecutionContext(t *testing.T) {
	def := func(mode string) string {
		cfg := `"ProcessorConfig": {"Mode": "INLINE"},`
		if mode == "DISTRIBUTED" {
			cfg = `"ProcessorConfig": {"Mode": "DISTRIBUTED", "ExecutionType": "STANDARD"},`
		}
		return `{"StartAt": "M", "States": {"M": {"Type": "Map", "ItemProcessor": {` + cfg + ` "StartAt": "P", "States": {
		  "P": {"Type": "Pass", "Parameters": {"input.$": "$$.Execution.Input", "id.$": "$$.Execution.Id"}, "End": true}}}, "End": true}}}`
	}
	out, _, err := run(t, mustLoad(t, def("INLINE")), `["a"]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `[{"input": ["a"], "id": "arn:aws:states:us-east-1:123456789012:execution:migrate:exec-1"}]`)
	// A DISTRIBUTED item is a child execution whose input is the item.
	out, _, err = run(t, mustLoad(t, def("DISTRIBUTED")), `["a"]`, nil)
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, out, `[{"input": "a", "id": "arn:aws:states:us-east-1:123456789012:execution:migrate:exec-1/M:0"}]`)
}

func TestMapResultOverQuota(t *testing.T) {
	def := `{"StartAt": "M", "States": {"M": {"Type": "Map", "ItemProcessor": {"StartAt": "W", "States": {
	  "W": {"Type": "Task", "Resource": "work", "End": true}}}, "End": true}}}`
	chunk := `"` + strings.Repeat("c", 100*1024) + `"`
	_, _, err := run(t, mustLoad(t, def), `[1, 2, 3]`, newRecorder().on("work", returns(chunk)))
	if ee := execErr(t, err, "States.DataLimitExceeded"); ee.State != "M" {
		t.Errorf("%+v", ee)
	}
}
