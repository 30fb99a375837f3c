package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
	"github.com/rocklake/rocklake-migrate/pkg/workflow"
	"github.com/rocklake/rocklake-migrate/statemachine"
)

// mapFailed is how a failed Distributed Map item surfaces, on AWS and here.
const mapFailed = "States.ExceedToleratedFailureThreshold"

// TestFaults runs the bad-source, bad-staging and concurrent-change cases
// through the real emulators under pkg/asl.
func TestFaults(t *testing.T) {
	h := startHarness(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	put := func(t *testing.T, url string, kv ...[]byte) {
		t.Helper()
		w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var b slatedb.Batch
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == nil {
				b.Delete(kv[i])
			} else {
				b.Put(kv[i], kv[i+1])
			}
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	in := func(f fixture) workflow.CheckInput {
		return workflow.CheckInput{Online: offline(), Pointer: f.Pointer, TargetVersion: 2, Shards: 2, FreezeGrace: noGrace()}
	}
	t.Run("source-without-version-key", func(t *testing.T) {
		f := h.seed(t, ctx, "noversion", caseRows, seedN)
		put(t, f.Source, format.FormatVersionKey(), nil)
		h.failsCleanly(t, ctx, f, in(f), "FormatVersionMismatch", "")
	})
	t.Run("source-with-unknown-tag", func(t *testing.T) {
		f := h.seed(t, ctx, "unknowntag", caseRows, seedN)
		put(t, f.Source, []byte{0x30, 0, 1}, []byte("a table from the future"))
		// Refused at Check, before anything is fenced or written.
		h.failsCleanly(t, ctx, f, in(f), "UnknownTags", "")
	})
	t.Run("source-with-corrupt-envelope", func(t *testing.T) {
		f := h.seed(t, ctx, "corrupt", caseRows, seedN)
		key, err := format.EncodeKey(format.V1, format.Key{Tag: format.TagDataFile, Parts: []uint64{1, 1}})
		if err != nil {
			t.Fatal(err)
		}
		put(t, f.Source, key, []byte("\x01XXXXnot an envelope"))
		h.failsCleanly(t, ctx, f, in(f), mapFailed, "CorruptCatalog")
	})
	damage := func(t *testing.T, step, fromDir string, how func([]byte) []byte) {
		var once sync.Once
		h.Front.SetHook(func(c Call, _ *emulator) {
			if c.Step != step {
				return
			}
			once.Do(func() {
				var m struct {
					MigrationID string `json:"migration_id"`
				}
				_ = json.Unmarshal(c.Input, &m)
				objs, err := h.Store.List(ctx, "s3://staging/migrations/"+m.MigrationID+"/"+fromDir+"/")
				if err != nil || len(objs) == 0 {
					t.Errorf("no shards to damage under %s: %v", fromDir, err)
					return
				}
				b, _, err := h.Store.Get(ctx, objs[0].URL)
				if err == nil {
					_, err = h.Store.Put(ctx, objs[0].URL, how(b))
				}
				if err != nil {
					t.Error(err)
				}
			})
		})
		t.Cleanup(func() { h.Front.SetHook(nil) })
	}
	t.Run("corrupted-shard-before-import", func(t *testing.T) {
		f := h.seed(t, ctx, "badshard", caseRows, seedN)
		damage(t, "Import", "v2", func(b []byte) []byte {
			b = bytes.Clone(b)
			b[len(b)/2] ^= 0xFF
			return b
		})
		h.failsCleanly(t, ctx, f, in(f), "ShardCorrupt", "")
	})
	t.Run("truncated-shard-before-import", func(t *testing.T) {
		f := h.seed(t, ctx, "shortshard", caseRows, seedN)
		damage(t, "Import", "v2", func(b []byte) []byte { return bytes.Clone(b[:len(b)/2]) })
		h.failsCleanly(t, ctx, f, in(f), "ShardCorrupt", "")
	})
	t.Run("pointer-moved-during-run", func(t *testing.T) {
		f := h.seed(t, ctx, "moved", caseRows, seedN)
		var once sync.Once
		h.Front.SetHook(func(c Call, _ *emulator) {
			if c.Step == "Verify" {
				once.Do(func() {
					cur, ref, err := pointer.Read(ctx, h.Store, f.Pointer)
					if err == nil {
						_, err = pointer.Flip(ctx, h.Store, f.Pointer, cur.Next(f.Source, format.V1, "someone-else"), ref)
					}
					if err != nil {
						t.Error(err)
					}
				})
			}
		})
		defer h.Front.SetHook(nil)
		o := h.runASL(t, ctx, statemachine.Migration, in(f))
		if o.Status != "FAILED" || o.Error != "PointerConflict" {
			t.Fatalf("run: %s, want PointerConflict", o)
		}
		p, _, _ := pointer.Read(ctx, h.Store, f.Pointer)
		if p.MigrationID != "someone-else" {
			t.Fatalf("pointer = %+v: the other writer's flip was lost", p)
		}
	})
	t.Run("writer-commits-after-freeze", func(t *testing.T) {
		f := h.seed(t, ctx, "writer", caseRows, seedN)
		var once sync.Once
		h.Front.SetHook(func(c Call, _ *emulator) {
			if c.Step == "ExportTransformShard" {
				once.Do(func() {
					w, err := slatedb.OpenWriter(ctx, f.Source, slatedb.Options{})
					if err != nil {
						t.Error(err)
						return
					}
					defer w.Close()
					v, err := w.Get(ctx, format.CounterKey(format.V1, format.NameNextSnapshotID))
					n, _ := format.DecodeCounter(format.V1, v)
					var b slatedb.Batch
					b.Put(format.CounterKey(format.V1, format.NameNextSnapshotID), format.EncodeCounter(format.V1, n+1))
					if err == nil {
						err = w.Write(ctx, &b)
					}
					if err != nil {
						t.Error(err)
					}
				})
			}
		})
		defer h.Front.SetHook(nil)
		_, before, _ := pointer.Read(ctx, h.Store, f.Pointer)
		o := h.runASL(t, ctx, statemachine.Migration, in(f))
		if o.Status != "FAILED" || o.Error != "SourceChangedDuringMigration" {
			t.Fatalf("run: %s, want SourceChangedDuringMigration", o)
		}
		p, after, _ := pointer.Read(ctx, h.Store, f.Pointer)
		if p.Catalog != f.Source || after.ETag != before.ETag {
			t.Fatalf("pointer moved: %+v", p)
		}
		if !strings.Contains(o.Cause, "next_snapshot_id") {
			t.Fatalf("cause %q does not say what moved", o.Cause)
		}
	})
}
