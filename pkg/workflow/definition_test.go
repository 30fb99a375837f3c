package workflow_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/asl"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// online is an input's online setting asked for explicitly.
func online() *bool { v := true; return &v }

// runDefinition runs statemachine/migration.asl.json under pkg/asl with the
// in-process tasks; onExit is called as each state ends.
func runDefinition(t *testing.T, ctx context.Context, f seeded.Fixture, in workflow.CheckInput, onExit func(asl.StateEvent)) (json.RawMessage, *seeded.Published, error) {
	t.Helper()
	m, err := localrun.Load("arn:aws:sns:us-east-1:000000000000:rocklake")
	if err != nil {
		t.Fatalf("load definition: %v", err)
	}
	pub := &seeded.Published{}
	if in.FreezeGrace == nil {
		in.FreezeGrace = seeded.NoGrace()
	}
	raw, _ := json.Marshal(in)
	obs := asl.ObserverFuncs{}
	if onExit != nil {
		obs.Exited = onExit
	}
	out, err := asl.Run(ctx, m, raw, asl.Options{
		Tasks:    localrun.Tasks(f.Env, pub.Publish),
		Observer: obs,
		Sleep:    func(context.Context, time.Duration) error { return nil },
	})
	return out, pub, err
}

func TestDefinitionMigratesBehindThePointer(t *testing.T) {
	ctx, f := seeded.Setup(t, 3000)
	out, pub, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 6}, nil)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	var state localrun.FinalState
	if err := json.Unmarshal(out, &state); err != nil {
		t.Fatal(err)
	}
	p, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != state.Migration.Target || p.FormatVersion != format.V2 || ref.VersionID != state.Verify.Flip.PointerVersionID {
		t.Fatalf("pointer = %+v (%+v), run said %+v", p, ref, state.Verify.Flip)
	}
	// The new catalog holds the transformed source: as many rows per table.
	src, err := catalog.Open(ctx, f.Source, catalog.Options{Expect: format.V1})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want, _ := src.Counts(ctx)
	dst, err := catalog.Open(ctx, p.Catalog, catalog.Options{Expect: format.V2})
	if err != nil {
		t.Fatalf("new catalog: %v", err)
	}
	defer dst.Close()
	got, _ := dst.Counts(ctx)
	for table, n := range want {
		if got[table] != n {
			t.Fatalf("%s: %d rows in v2, %d in v1", table, got[table], n)
		}
	}
	if len(pub.Subjects) != 1 || pub.Subjects[0] != "rocklake-migrate: migration succeeded" {
		t.Fatalf("notifications = %v", pub.Subjects)
	}
	// Run again: nothing to do.
	if _, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2}, nil); err != nil {
		t.Fatalf("second run: %v", err)
	}
}

// A dry run verifies a rehearsal and leaves the pointer, and the source
// exactly as it was: no fence, no checkpoint, no object written or removed.
// It says what a real run would fence.
func TestDefinitionDryRunLeavesThePointer(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	objects := func() map[string]string { return seeded.Objects(t, ctx, f.Env.Store, f.Source+"/") }
	sourceBefore := objects()
	out, _, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, DryRun: true}, nil)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	var state struct {
		Migration runstate.Migration    `json:"migration"`
		Verify    workflow.VerifyOutput `json:"verify"`
	}
	json.Unmarshal(out, &state)
	if state.Verify.Digest == "" {
		t.Fatalf("dry run did not verify: %s", out)
	}
	p, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if p.Catalog != f.Source || after.ETag != before.ETag {
		t.Fatalf("dry run moved the pointer: %+v", p)
	}
	if _, err := catalog.Open(ctx, state.Migration.Target, catalog.Options{}); !errors.Is(err, catalog.ErrNoCatalog) {
		t.Fatalf("dry run left its target: %v", err)
	}
	if after := objects(); !maps.Equal(after, sourceBefore) {
		t.Fatalf("the dry run changed the source: %d objects before, %d after", len(sourceBefore), len(after))
	}
	if !strings.Contains(state.Migration.WouldFence, "a real run would fence") {
		t.Fatalf("the dry run does not say what a real run would fence: %+v", state.Migration)
	}
}

func TestDefinitionFailsCleanlyWhenTheSourceChanges(t *testing.T) {
	ctx, f := seeded.Setup(t, 500)
	_, before, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	var once sync.Once
	_, pub, err := runDefinition(t, ctx, f, workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2}, func(e asl.StateEvent) {
		if e.Name != "Freeze" || e.Output == nil {
			return
		}
		once.Do(func() { // RockLake's writer commits after Freeze
			if err := seeded.Commit(ctx, f.Source); err != nil {
				t.Error(err)
			}
		})
	})
	var ee *asl.ExecutionError
	if !errors.As(err, &ee) || ee.Name != "SourceChangedDuringMigration" {
		t.Fatalf("run: %v, want SourceChangedDuringMigration", err)
	}
	p, after, _ := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if p.Catalog != f.Source || after.ETag != before.ETag {
		t.Fatalf("pointer moved: %+v", p)
	}
	if len(pub.Subjects) != 1 || pub.Subjects[0] != "rocklake-migrate: migration failed" {
		t.Fatalf("notifications = %v", pub.Subjects)
	}
	// The notice is what on-call reads at 3 a.m.: which migration, which
	// pointer, which state, what error, and where to look.
	var notice struct {
		MigrationID string `json:"migration_id"`
		Pointer     string `json:"pointer"`
		FailedState string `json:"failed_state"`
		Error       struct{ Error, Cause string }
		Execution   string `json:"execution"`
		Console     string `json:"console"`
	}
	if err := json.Unmarshal([]byte(pub.Bodies[0]), &notice); err != nil {
		t.Fatalf("notice %q: %v", pub.Bodies[0], err)
	}
	if !strings.HasPrefix(notice.MigrationID, "m-") || notice.Pointer != f.Pointer || notice.FailedState != "Flip" ||
		notice.Error.Error != "SourceChangedDuringMigration" || !strings.Contains(notice.Error.Cause, "next_snapshot_id") {
		t.Fatalf("notice = %+v", notice)
	}
	wantConsole := "https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/" + notice.Execution
	if !strings.HasPrefix(notice.Execution, "arn:aws:states:us-east-1:") || notice.Console != wantConsole {
		t.Fatalf("console link %q, execution %q", notice.Console, notice.Execution)
	}
	if cps, _ := slatedb.ListCheckpoints(ctx, f.Source, slatedb.Options{}); len(cps) != 0 {
		t.Fatalf("abort left checkpoints: %v", cps)
	}
}

func TestDriftDefinition(t *testing.T) {
	ctx, f := seeded.Setup(t, 50)
	def, err := asl.Substitute(statemachine.Drift, localrun.Substitutions(""))
	if err != nil {
		t.Fatal(err)
	}
	m, err := asl.Load(def)
	if err != nil {
		t.Fatalf("load drift.asl.json: %v", err)
	}
	run := func(expect uint64) error {
		in, _ := json.Marshal(workflow.DriftInput{Pointer: f.Pointer, Expect: expect})
		_, err := asl.Run(ctx, m, in, asl.Options{Tasks: localrun.Tasks(f.Env, nil)})
		return err
	}
	if err := run(1); err != nil {
		t.Fatalf("healthy catalog: %v", err)
	}
	var ee *asl.ExecutionError
	if err := run(2); !errors.As(err, &ee) || ee.Name != "DriftFound" {
		t.Fatalf("v1 catalog, release expects v2: %v", err)
	}
}
