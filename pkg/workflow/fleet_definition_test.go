package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"
	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// A fleet run whose pointers did not all get there and whose summary
// cannot be published ends in FailedUnreported (the stack's alarm counts
// it: nobody was told), with the run's own error, PointersFailed; one whose
// summary went out ends in PointersFailed.
func TestFleetNoticeUnpublishedEndsInFailedUnreported(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	const prefix = "s3://rocklake/t/"
	for name, cat := range map[string]string{"a": f.Source, "gone": "s3://rocklake/catalogs/gone"} {
		if _, err := pointer.Create(ctx, f.Env.Store, prefix+name+"/CURRENT", pointer.Pointer{Catalog: cat, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
			t.Fatal(err)
		}
	}
	m, err := localrun.LoadDefinition(statemachine.Fleet, "arn:aws:sns:us-east-1:000000000000:rocklake")
	if err != nil {
		t.Fatal(err)
	}
	run := func(publish func(context.Context, string, string, string) error) (map[string]bool, error) {
		var mu sync.Mutex
		entered := map[string]bool{}
		in, _ := json.Marshal(fleet.Request{Sources: []string{prefix}, TargetVersion: format.V2, Concurrency: 1,
			Child: map[string]any{"shards": 1, "online": false, "freeze_grace": 0}})
		_, err := asl.Run(ctx, m, in, asl.Options{Tasks: localrun.Tasks(f.Env, publish),
			Sleep: func(context.Context, time.Duration) error { return nil },
			Observer: asl.ObserverFuncs{Entered: func(e asl.StateEvent) {
				if e.MapIndex == nil {
					mu.Lock()
					entered[e.Name] = true
					mu.Unlock()
				}
			}}})
		return entered, err
	}
	down := func(context.Context, string, string, string) error { return errors.New("SNS is down") }
	entered, err := run(down)
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != "PointersFailed" || !entered["FailedUnreported"] || entered["PointersFailed"] {
		t.Fatalf("summary unpublished: %v, states %v; want PointersFailed from FailedUnreported", err, entered)
	}
	pub := &seeded.Published{}
	entered, err = run(pub.Publish)
	if !errors.As(err, &ee) || ee.Name != "PointersFailed" || entered["FailedUnreported"] || !entered["PointersFailed"] || len(pub.Subjects) == 0 {
		t.Fatalf("summary published: %v, states %v, %d messages; want PointersFailed", err, entered, len(pub.Subjects))
	}
}
