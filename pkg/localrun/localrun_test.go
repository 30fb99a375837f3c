package localrun_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/seeded"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/progress"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
)

// lockedBuffer is a writer the run and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A local run migrates behind the pointer and reports it: the outcome, the
// counts, the pointer's new version, the time per state; its display shows
// each top-level state's start and end, and the export, transform, import
// and verify stages each end with done equal to total, the catalog's rows;
// the outcome message is sent. A second run has nothing to do.
func TestRunMigratesAndShowsItsProgress(t *testing.T) {
	ctx, f := seeded.Setup(t, 1500)
	var events lockedBuffer
	pub := &seeded.Published{}
	rep, err := localrun.Run(ctx, f.Env, localrun.Options{
		Check: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 3, FreezeGrace: seeded.NoGrace()},
		Topic: seeded.Topic, Publish: pub.Publish, Concurrency: 2,
		Display: func() localrun.Display { return progress.New(&events, progress.Options{Mode: progress.JSON}) },
	})
	if err != nil || rep == nil {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	p, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil || p.Catalog != rep.Target || ref.VersionID != rep.PointerVersionID || p.FormatVersion != format.V2 {
		t.Fatalf("pointer %+v (%+v, %v), report %+v", p, ref, err, rep)
	}
	if rep.Outcome != "migrated" || rep.MigrationID == "" || rep.Source != f.Source || rep.Counts["ducklake_data_file"] == 0 || rep.StateSeconds["Verify"] == 0 {
		t.Fatalf("report = %+v", rep)
	}
	var rows uint64
	for _, n := range rep.Counts {
		rows += n
	}
	phases := map[string]string{}
	final := map[string]progress.Event{}
	for _, line := range strings.Split(strings.TrimSpace(events.String()), "\n") {
		var ev struct {
			progress.Event
			State string `json:"state"`
			Phase string `json:"phase"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("display line %q: %v", line, err)
		}
		switch {
		case ev.Event.Event == "state":
			phases[ev.State] += ev.Phase + " "
		case ev.Final:
			final[ev.Stage] = ev.Event
		}
	}
	for _, st := range []string{"Check", "Freeze", "Shards", "Import", "Finalize", "Verify", "Flip"} {
		if !strings.HasPrefix(phases[st], "start end ") {
			t.Errorf("state %s: events %q", st, phases[st])
		}
	}
	for _, stage := range []string{"export", "transform", "import", "verify"} {
		if ev := final[stage]; ev.Event != "done" || ev.Done != rows || ev.Total != rows {
			t.Errorf("stage %s: final event %+v, want done = total = %d rows", stage, ev, rows)
		}
	}
	if len(pub.Subjects) != 1 || pub.Subjects[0] != "rocklake-migrate: migration succeeded" {
		t.Fatalf("notifications = %v", pub.Subjects)
	}

	rep, err = localrun.Run(ctx, f.Env, localrun.Options{Check: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2}})
	if err != nil || rep.Outcome != "nothing to do" || rep.MigrationID == "" {
		t.Fatalf("second run: %+v, %v", rep, err)
	}
}

// A run whose catalog is not in the format its pointer says fails with
// the startup check's error, as the format mismatch the CLI exits 3 on,
// and its report still names the migration.
func TestRunFormatMismatch(t *testing.T) {
	ctx, f := seeded.Setup(t, 100)
	wrong := "s3://rocklake/WRONG"
	if _, err := pointer.Create(ctx, f.Env.Store, wrong, pointer.Pointer{Catalog: f.Source, FormatVersion: format.V2, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	rep, err := localrun.Run(ctx, f.Env, localrun.Options{Check: workflow.CheckInput{Online: seeded.Offline(), Pointer: wrong, TargetVersion: 2, MigrationID: "m-wrong", FreezeGrace: seeded.NoGrace()}})
	var mismatch *format.FormatVersionMismatch
	if !errors.As(err, &mismatch) || mismatch.Expected != 2 {
		t.Fatalf("run: %v, want a FormatVersionMismatch expecting 2", err)
	}
	if rep == nil || rep.Outcome != "failed" || rep.MigrationID != "m-wrong" || !strings.Contains(rep.Error, format.ErrVersionMismatch.ErrorName()) {
		t.Fatalf("report = %+v", rep)
	}
}

// cancelOn cancels when the display announces a state: a signal at that
// moment.
type cancelOn struct {
	state  string
	cancel context.CancelFunc
	lockedBuffer
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.lockedBuffer.Write(p)
	if strings.Contains(c.String(), "→ "+c.state) {
		c.cancel()
	}
	return n, err
}

// An interrupted run (its context ended after Check) runs Abort on a fresh
// context: no checkpoint on the source, no staging, no target, the lock
// free for the next run; the report says so.
func TestRunInterruptedRunsAbort(t *testing.T) {
	ctx, f := seeded.Setup(t, 3000)
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	lines := &cancelOn{state: "Import", cancel: interrupt}
	rep, err := localrun.Run(runCtx, f.Env, localrun.Options{
		Check:   workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, MigrationID: "m-interrupted", FreezeGrace: seeded.NoGrace()},
		Display: func() localrun.Display { return progress.New(lines, progress.Options{Mode: progress.Lines}) },
	})
	if err == nil || rep == nil || rep.Outcome != "failed" || !strings.Contains(rep.Error, "cleaned up after the interruption") {
		t.Fatalf("interrupted run: %+v, %v\n%s", rep, err, lines.String())
	}
	if n := seeded.Checkpoints(t, ctx, f.Source); n != 0 {
		t.Fatalf("%d checkpoints left on the source", n)
	}
	for _, prefix := range []string{f.Env.Staging + "/m-interrupted/", "s3://rocklake/catalogs/v2-m-interrupted/"} {
		if objs, err := f.Env.Store.List(ctx, prefix); err != nil || len(objs) != 0 {
			t.Fatalf("%s left: %d objects, %v", prefix, len(objs), err)
		}
	}
	if rep, err := localrun.Run(ctx, f.Env, localrun.Options{Check: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, FreezeGrace: seeded.NoGrace()}}); err != nil || rep.Outcome != "migrated" {
		t.Fatalf("the next run: %+v, %v", rep, err)
	}
}

// Strategy A chosen by InPlaceAuto: the choice and each state are logged,
// the catalog is migrated where it lies, and the outcome message names the
// run as in place.
func TestRunInPlaceAuto(t *testing.T) {
	ctx, f := seeded.Setup(t, 300)
	var log lockedBuffer
	pub := &seeded.Published{}
	rep, err := localrun.Run(ctx, f.Env, localrun.Options{
		Check: workflow.CheckInput{Online: seeded.Offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, InPlaceAuto: true, FreezeGrace: seeded.NoGrace()},
		Topic: seeded.Topic, Publish: pub.Publish, Log: &log,
		Display: func() localrun.Display { t.Error("a Strategy A run made a display"); return nil },
	})
	if err != nil || rep.Outcome != "migrated in place" || rep.InPlace == nil || rep.InPlace.WayBack == nil || rep.Target != f.Source {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	for _, want := range []string{"strategy: ", "→ Check", "→ InPlace"} {
		if !strings.Contains(log.String(), want) {
			t.Fatalf("log %q lacks %q", log.String(), want)
		}
	}
	if p, _, err := pointer.Read(ctx, f.Env.Store, f.Pointer); err != nil || p.Catalog != f.Source || p.FormatVersion != format.V2 {
		t.Fatalf("pointer = %+v, %v", p, err)
	}
	if len(pub.Bodies) != 1 || !strings.Contains(pub.Bodies[0], "(in place)") || !strings.Contains(pub.Bodies[0], rep.MigrationID) {
		t.Fatalf("notifications = %v", pub.Bodies)
	}
}
