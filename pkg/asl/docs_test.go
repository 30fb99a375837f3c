package asl_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

// docCase is one documented example (testdata/docs/*.json): a definition,
// an input, scripted task behaviour, and the output (or error) and retry
// waits the AWS documentation gives for it.
type docCase struct {
	Source     string                         `json:"source"`
	Definition json.RawMessage                `json:"definition"`
	Input      json.RawMessage                `json:"input"`
	Tasks      map[string]docTask             `json:"tasks"`
	TaskInputs map[string][]json.RawMessage   `json:"taskInputs"`
	Calls      map[string]int                 `json:"calls"`
	Output     json.RawMessage                `json:"output"`
	Error      *struct{ Error, Cause string } `json:"error"`
	Sleeps     []float64                      `json:"sleeps"`
}

type docTask struct {
	Result json.RawMessage `json:"result"`
	Echo   bool            `json:"echo"`
	Error  *docError       `json:"error"`
	Errors []docError      `json:"errors"` // one per call, in order
}

type docError struct{ Name, Cause string }

func TestDocumentedExamples(t *testing.T) {
	files, err := filepath.Glob("testdata/docs/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			t.Parallel()
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var c docCase
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatal(err)
			}
			m, err := asl.Load(c.Definition)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			rec := newRecorder()
			for res, task := range c.Tasks {
				var mu sync.Mutex
				n := 0
				rec.on(res, func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
					mu.Lock()
					i := n
					n++
					mu.Unlock()
					switch {
					case task.Echo:
						return in, nil
					case task.Error != nil:
						return nil, &asl.TaskError{Name: task.Error.Name, Cause: task.Error.Cause}
					case len(task.Errors) > 0:
						e := task.Errors[min(i, len(task.Errors)-1)]
						return nil, &asl.TaskError{Name: e.Name, Cause: e.Cause}
					}
					return task.Result, nil
				})
			}
			out, sl, err := run(t, m, string(c.Input), rec)
			if c.Error != nil {
				ee := execErr(t, err, c.Error.Error)
				if ee.Cause != c.Error.Cause {
					t.Errorf("cause %q, want %q", ee.Cause, c.Error.Cause)
				}
			} else {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				assertJSON(t, out, string(c.Output))
			}
			for res, want := range c.TaskInputs {
				got := rec.inputs(res)
				if len(got) != len(want) {
					t.Fatalf("%s called %d times, want %d", res, len(got), len(want))
				}
				for i := range want {
					assertJSON(t, got[i], string(want[i]))
				}
			}
			for res, n := range c.Calls {
				if got := len(rec.inputs(res)); got != n {
					t.Errorf("%s called %d times, want %d", res, got, n)
				}
			}
			if c.Sleeps != nil || len(sl.got()) > 0 {
				if got := seconds(sl.got()); !reflect.DeepEqual(got, c.Sleeps) && !(len(got) == 0 && len(c.Sleeps) == 0) {
					t.Errorf("retry waits %v s, want %v s", got, c.Sleeps)
				}
			}
		})
	}
}
