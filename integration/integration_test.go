package integration

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

const (
	rows     = 20000
	shards   = 4
	seedN    = 7
	caseRows = 500
)

// TestIntegration starts the stack once and runs every case against it (the
// cases share the process environment, so they are not parallel).
func TestIntegration(t *testing.T) {
	start := time.Now()
	h := startHarness(t)
	t.Logf("stack up in %s: front %s, S3 %s, SNS %s", time.Since(start).Round(time.Millisecond), h.Front.URL(), h.S3.Endpoint(), h.SNS.Endpoint())
	ctx, cancel := context.WithTimeout(context.Background(), 9*time.Minute)
	defer cancel()

	var baseline CatalogState
	t.Run("pkg-asl", func(t *testing.T) {
		baseline = h.migrateAndCheck(t, ctx, "asl", h.runASL)
	})
	t.Run("aws-local-stepfunctions", func(t *testing.T) {
		got := h.migrateAndCheck(t, ctx, "lsf", h.runLocalStepFunctions)
		sameState(t, "aws-local-stepfunctions", got, "pkg/asl", baseline)
	})
	// Online (Snapshot, CatchUp, VerifyCatchUp, Fence) through the Lambdas,
	// in both engines: the same catalog as offline.
	t.Run("online-pkg-asl", func(t *testing.T) {
		sameState(t, "online, pkg/asl", h.migrateAndCheck(t, ctx, "online-asl", h.runASL, true), "pkg/asl", baseline)
	})
	t.Run("online-aws-local-stepfunctions", func(t *testing.T) {
		sameState(t, "online, aws-local-stepfunctions", h.migrateAndCheck(t, ctx, "online-lsf", h.runLocalStepFunctions, true), "pkg/asl", baseline)
	})
	// The import function's sandbox killed during the Import step: once
	// its first shard is durable (its progress record in the target), and
	// during its first shard (data keys, no progress record yet).
	t.Run("import-killed-after-first-shard", func(t *testing.T) {
		h.killImportAndCheck(t, ctx, "kill-late", baseline, func(target string) bool {
			r, err := slatedb.OpenReader(ctx, target, slatedb.ReaderOptions{})
			if err != nil {
				return false
			}
			defer r.Close()
			v, err := r.Get(ctx, progressKey)
			return err == nil && v != nil
		})
	})
	t.Run("import-killed-during-first-shard", func(t *testing.T) {
		h.killImportAndCheck(t, ctx, "kill-early", baseline, func(target string) bool {
			objs, err := h.Store.List(ctx, target+"/")
			return err == nil && len(objs) > 0
		})
	})
	t.Run("source-version-99", func(t *testing.T) {
		f := h.seed(t, ctx, "v99", caseRows, seedN)
		setVersion(t, ctx, f.Source, 99)
		h.failsCleanly(t, ctx, f, workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, FreezeGrace: noGrace()}, "FormatVersionMismatch", "found catalog format version 99")
	})
	t.Run("source-version-99-aws-local-stepfunctions", func(t *testing.T) {
		f := h.seed(t, ctx, "v99-lsf", caseRows, seedN)
		setVersion(t, ctx, f.Source, 99)
		h.failsCleanlyWith(t, ctx, h.runLocalStepFunctions, f, workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, FreezeGrace: noGrace()}, "FormatVersionMismatch", "found catalog format version 99")
	})
	// A fleet (fleet.asl.json) through both engines: the canary and the
	// Distributed Map's child executions of the migration definition on
	// the Lambdas, a format-99 pointer refused by name, one summary; then
	// the fleet's drift check (FleetDrift on the check Lambda).
	var fleetState CatalogState
	t.Run("fleet-pkg-asl", func(t *testing.T) {
		fleetState = h.fleetAndCheck(t, ctx, "fleet-asl", h.runASL)
	})
	t.Run("fleet-aws-local-stepfunctions", func(t *testing.T) {
		sameState(t, "fleet, aws-local-stepfunctions", h.fleetAndCheck(t, ctx, "fleet-lsf", h.runLocalStepFunctions), "fleet, pkg/asl", fleetState)
	})
	t.Run("rollback-after-migration", func(t *testing.T) {
		// The pkg-asl case's pointer is on its v2 catalog: roll it back
		// through the check function's Rollback step (Invoke API).
		f := fixture{Pointer: "s3://rocklake/asl/CURRENT", Source: "s3://rocklake/asl/catalogs/prod"}
		in, _ := json.Marshal(map[string]any{"step": "Rollback", "input": workflow.RollbackInput{Pointer: f.Pointer}})
		out, err := h.invoker().RunTask(ctx, functionARN("check"), in)
		if err != nil {
			t.Fatalf("rollback: %v", err)
		}
		var r workflow.RollbackOutput
		if err := json.Unmarshal(out, &r); err != nil || r.Catalog != f.Source || r.FormatVersion != format.V1 {
			t.Fatalf("rollback = %s (%v), want %s as v1", out, err, f.Source)
		}
		p, _, err := pointer.Read(ctx, h.Store, f.Pointer)
		if err != nil || p.Catalog != f.Source || p.FormatVersion != format.V1 {
			t.Fatalf("pointer after rollback = %+v (%v)", p, err)
		}
		if st := catalogState(t, ctx, f.Source, format.V1); !maps.Equal(st.Counts, baseline.Counts) {
			t.Fatalf("the old catalog after rollback: %v, want %v", st.Counts, baseline.Counts)
		}
	})
	// Strategy A through the Lambdas (the inplace function under its
	// emulator), then its rollback (check's Rollback step): a pointer flip
	// to the way back the migration copied beside the catalog.
	t.Run("in-place-and-rollback", func(t *testing.T) {
		f := h.seed(t, ctx, "inplace", caseRows, seedN)
		src := catalogState(t, ctx, f.Source, format.V1)
		o := h.runASL(t, ctx, statemachine.Migration, workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, InPlace: true, FreezeGrace: noGrace()})
		if o.Status != "SUCCEEDED" {
			t.Fatalf("in-place run: %s", o)
		}
		p, _, err := pointer.Read(ctx, h.Store, f.Pointer)
		if err != nil || p.Catalog != f.Source || p.FormatVersion != format.V2 {
			t.Fatalf("pointer after the in-place run = %+v (%v), want %s as v2", p, err, f.Source)
		}
		if got := catalogState(t, ctx, f.Source, format.V2); !maps.Equal(got.Counts, src.Counts) {
			t.Fatalf("the catalog migrated in place: %v, want %v", got.Counts, src.Counts)
		}
		in, _ := json.Marshal(map[string]any{"step": "Rollback", "input": workflow.RollbackInput{Pointer: f.Pointer}})
		out, err := h.invoker().RunTask(ctx, functionARN("check"), in)
		if err != nil {
			t.Fatalf("rollback: %v", err)
		}
		wayBack := "s3://rocklake/inplace/catalogs/v1-" + p.MigrationID
		var r workflow.RollbackOutput
		if err := json.Unmarshal(out, &r); err != nil || r.Catalog != wayBack || !r.InPlace || r.FormatVersion != format.V1 {
			t.Fatalf("rollback = %s (%v), want the way back %s as v1", out, err, wayBack)
		}
		if st := catalogState(t, ctx, wayBack, format.V1); !maps.Equal(st.Counts, src.Counts) {
			t.Fatalf("the way back: %v, want %v", st.Counts, src.Counts)
		}
	})
	t.Run("target-not-empty", func(t *testing.T) {
		f := h.seed(t, ctx, "notempty", caseRows, seedN)
		id := "m-occupied"
		target := "s3://rocklake/notempty/catalogs/v2-" + id
		if _, err := seed.Seed(ctx, target, seed.Options{Rows: 50, Seed: 1}); err != nil {
			t.Fatal(err)
		}
		other := rawDigest(t, ctx, target)
		h.failsCleanly(t, ctx, f, workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, MigrationID: id, FreezeGrace: noGrace()}, "TargetNotEmpty", "")
		if got := rawDigest(t, ctx, target); got != other {
			t.Fatalf("the catalog that was already at %s changed (digest %s, was %s): the failed run destroyed data it did not own", target, got, other)
		}
	})
	t.Run("drift-mismatch-one-sns-message", func(t *testing.T) {
		f := h.seed(t, ctx, "drift", caseRows, seedN)
		topic := h.SNS.CreateTopic(t, "rocklake-drift")
		o := h.runASL(t, ctx, statemachine.Drift, workflow.DriftInput{Pointer: f.Pointer, Expect: 2, Topic: topic})
		if o.Status != "FAILED" || o.Error != "DriftFound" {
			t.Fatalf("drift on a v1 catalog, release expects v2: %s, want DriftFound", o)
		}
		msgs := h.messages(t, topic)
		if len(msgs) != 1 {
			t.Fatalf("%d SNS messages, want exactly 1: %+v", len(msgs), msgs)
		}
		if !strings.Contains(msgs[0].Subject+msgs[0].Body, "VersionMismatch") {
			t.Fatalf("the message does not carry the finding: %s", msgs[0].Body)
		}
		t.Logf("drift message: %s / %.300s", msgs[0].Subject, msgs[0].Body)
	})
	t.Logf("suite ran in %s", time.Since(start).Round(time.Second))
}

// progressKey is where pkg/shard's importer keeps its progress in the target.
var progressKey = format.SystemKey("rocklake-migrate-import-progress")

// killImportAndCheck kills the import emulator (its whole process group)
// during the first Import call as soon as ready(target) holds, and expects
// the definition's Retry to complete the migration with the same target as
// an uninterrupted run.
func (h *Harness) killImportAndCheck(t *testing.T, ctx context.Context, name string, baseline CatalogState, ready func(target string) bool) {
	t.Helper()
	var once sync.Once
	killed := make(chan bool, 1)
	h.Front.SetHook(func(c Call, e *emulator) {
		if c.Function != "import" || c.Step != "Import" {
			return
		}
		once.Do(func() {
			var m runstate.Migration
			_ = json.Unmarshal(c.Input, &m)
			go func() {
				for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
					if ready(m.Target) {
						e.crash()
						killed <- true
						return
					}
				}
				killed <- false
			}()
		})
	})
	defer h.Front.SetHook(nil)
	before := len(h.Front.Calls())
	got := h.migrateAndCheck(t, ctx, name, h.runASL)
	if !<-killed {
		t.Fatal("the kill condition never held")
	}
	crashed := 0
	for _, c := range h.Front.Calls()[before:] {
		if c.Crashed {
			crashed++
		}
	}
	if crashed != 1 {
		t.Fatalf("%d import calls crashed, want exactly 1 (the kill did not land mid-call)", crashed)
	}
	sameState(t, "after the kill", got, "uninterrupted", baseline)
}

type engine func(t *testing.T, ctx context.Context, def []byte, input any) Outcome

// migrateAndCheck seeds a catalog (the same seed every time), migrates it
// to v2 through the engine and checks the end state: the pointer on a v2
// catalog holding as many rows per table as the source, the source
// unchanged, one success message.
func (h *Harness) migrateAndCheck(t *testing.T, ctx context.Context, name string, run engine, online ...bool) CatalogState {
	t.Helper()
	f := h.seed(t, ctx, name, rows, seedN)
	src := catalogState(t, ctx, f.Source, format.V1)
	sentBefore := len(h.messages(t, h.Topic))
	start := time.Now()
	// Online: the input leaves it out (the default), offline says so.
	on := len(online) > 0 && online[0]
	in := workflow.CheckInput{Pointer: f.Pointer, TargetVersion: 2, Shards: shards, FreezeGrace: noGrace(), Online: offline()}
	if on {
		in.Online = nil
	}
	o := run(t, ctx, statemachine.Migration, in)
	t.Logf("%s: %s in %s", name, o, time.Since(start).Round(time.Millisecond))
	if o.Status != "SUCCEEDED" {
		t.Fatalf("run: %s", o)
	}
	p, _, err := pointer.Read(ctx, h.Store, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	if p.FormatVersion != format.V2 || p.Catalog == f.Source {
		t.Fatalf("pointer = %+v, want a v2 catalog", p)
	}
	got := catalogState(t, ctx, p.Catalog, format.V2)
	if !maps.Equal(got.Counts, src.Counts) {
		t.Fatalf("per-table counts: v2 %v, source %v", got.Counts, src.Counts)
	}
	if after := catalogState(t, ctx, f.Source, format.V1); after.Digest != src.Digest {
		t.Fatalf("the source changed: digest %s, was %s", after.Digest, src.Digest)
	}
	var out localrun.FinalState
	if err := json.Unmarshal(o.Output, &out); err != nil || out.Verify.Digest != got.Digest {
		t.Fatalf("Verify reported digest %q, the catalog has %s (%v)", out.Verify.Digest, got.Digest, err)
	}
	// Online: rounds before VerifyCatchUp, after it, and after the fence.
	if r := out.Verify.Flip.Online; on && (r == nil || len(r.Rounds) < 3 || !r.Rounds[len(r.Rounds)-1].Last || !out.Migration.Verified) {
		t.Fatalf("online run's report %+v (migration %+v)", r, out.Migration)
	}
	msgs := h.messages(t, h.Topic)[sentBefore:]
	if len(msgs) != 1 || msgs[0].Subject != "rocklake-migrate: migration succeeded" {
		t.Fatalf("notifications = %+v, want one success", msgs)
	}
	t.Logf("%s: pointer on %s (v%d), %d tables, digest %s", name, p.Catalog, p.FormatVersion, len(got.Counts), got.Digest)
	return got
}

func sameState(t *testing.T, aName string, a CatalogState, bName string, b CatalogState) {
	t.Helper()
	if a.Version != b.Version || !maps.Equal(a.Counts, b.Counts) || a.Digest != b.Digest {
		t.Fatalf("%s ended in %+v, %s in %+v", aName, a, bName, b)
	}
}

// failsCleanly runs a migration that must fail with wantErr and checks that
// the pointer and the source are unchanged and one failure message went out.
func (h *Harness) failsCleanly(t *testing.T, ctx context.Context, f fixture, in workflow.CheckInput, wantErr, causeHas string) {
	t.Helper()
	h.failsCleanlyWith(t, ctx, h.runASL, f, in, wantErr, causeHas)
}

func (h *Harness) failsCleanlyWith(t *testing.T, ctx context.Context, run engine, f fixture, in workflow.CheckInput, wantErr, causeHas string) {
	t.Helper()
	before := h.snapshot(t, ctx, f)
	sentBefore := len(h.messages(t, h.Topic))
	o := run(t, ctx, statemachine.Migration, in)
	if o.Status != "FAILED" || o.Error != wantErr || !strings.Contains(o.Cause, causeHas) {
		t.Fatalf("run: %s, want %s (cause with %q)", o, wantErr, causeHas)
	}
	if after := h.snapshot(t, ctx, f); after != before {
		t.Fatalf("pointer or source changed: %+v, was %+v", after, before)
	}
	msgs := h.messages(t, h.Topic)[sentBefore:]
	if len(msgs) != 1 || msgs[0].Subject != "rocklake-migrate: migration failed" || !strings.Contains(msgs[0].Body, wantErr) {
		t.Fatalf("notifications = %+v, want one failure naming %s", msgs, wantErr)
	}
	// The notice names the failed state and links to the execution.
	var notice struct {
		FailedState string `json:"failed_state"`
		Execution   string `json:"execution"`
		Console     string `json:"console"`
	}
	if err := json.Unmarshal([]byte(msgs[0].Body), &notice); err != nil || notice.FailedState == "" ||
		!strings.HasPrefix(notice.Execution, "arn:aws:states:us-east-1:") ||
		notice.Console != "https://us-east-1.console.aws.amazon.com/states/home?region=us-east-1#/v2/executions/details/"+notice.Execution {
		t.Fatalf("failure notice %s (%v)", msgs[0].Body, err)
	}
}

// setVersion overwrites a catalog's format version key, as a newer release
// would have written it.
func setVersion(t *testing.T, ctx context.Context, url string, v uint64) {
	t.Helper()
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b slatedb.Batch
	b.Put(format.FormatVersionKey(), format.EncodeFormatVersion(uint32(v)))
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// noGrace is a freeze_grace of 0: no supervisor watches the suite's
// pointers, so Freeze fences at once.
func noGrace() *float64 {
	var zero float64
	return &zero
}

// offline is an input's online setting for the offline path: Freeze fences
// the source for the whole copy (online is the default).
func offline() *bool { v := false; return &v }
