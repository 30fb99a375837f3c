package asl_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
)

func Example() {
	definition := []byte(`{
	  "StartAt": "Greet",
	  "States": {
	    "Greet": {
	      "Type": "Task",
	      "Resource": "${GreetFunction}",
	      "Parameters": {"who.$": "$.name", "run.$": "$$.Execution.Name"},
	      "Retry": [{"ErrorEquals": ["Lambda.ServiceException"], "MaxAttempts": 2}],
	      "ResultPath": "$.greeting",
	      "End": true
	    }
	  }
	}`)
	definition, err := asl.Substitute(definition, map[string]string{"GreetFunction": "greet"})
	if err != nil {
		panic(err)
	}
	m, err := asl.Load(definition)
	if err != nil {
		panic(err)
	}
	tasks := asl.Funcs{
		"greet": func(_ context.Context, in json.RawMessage) (json.RawMessage, error) {
			var p struct{ Who, Run string }
			if err := json.Unmarshal(in, &p); err != nil {
				return nil, err
			}
			return json.Marshal(fmt.Sprintf("hello %s from %s", p.Who, p.Run))
		},
	}
	if err := tasks.Check(m); err != nil {
		panic(err)
	}
	out, err := asl.Run(context.Background(), m, json.RawMessage(`{"name": "operator"}`), asl.Options{
		Tasks:         tasks,
		ExecutionName: "demo",
		Observer: asl.ObserverFuncs{Exited: func(e asl.StateEvent) {
			fmt.Printf("%s done, next %q\n", e.Name, e.Next)
		}},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out))
	// Output:
	// Greet done, next ""
	// {"greeting":"hello operator from demo","name":"operator"}
}
