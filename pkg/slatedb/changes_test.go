package slatedb_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// never is a changed fraction the SST diff never falls back from.
const never = 10

// at is the view of a checkpoint alone.
func at(checkpoint string) slatedb.View { return slatedb.View{Checkpoint: checkpoint} }

// latest takes a view of all the database's writer has written, its WAL
// included, without fencing it (TakeView).
func latest(t testing.TB, ctx context.Context, url string) slatedb.View {
	t.Helper()
	v, err := slatedb.TakeView(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
	if err != nil {
		t.Fatalf("take a view of %s: %v", url, err)
	}
	return v
}

// changesOf reads every change between two views with OpenChanges.
func changesOf(t testing.TB, ctx context.Context, url string, from, to slatedb.View, maxFraction float64) ([]slatedb.Change, slatedb.ChangeSummary) {
	t.Helper()
	return changesWith(t, ctx, url, from, to, slatedb.Options{}, maxFraction)
}

// changesWith is changesOf with options (an overlay cache).
func changesWith(t testing.TB, ctx context.Context, url string, from, to slatedb.View, opts slatedb.Options, maxFraction float64) ([]slatedb.Change, slatedb.ChangeSummary) {
	t.Helper()
	ch, err := slatedb.OpenChanges(ctx, url, from, to, opts, maxFraction)
	if err != nil {
		t.Fatalf("open changes %+v..%+v: %v", from, to, err)
	}
	defer func() {
		if err := ch.Close(); err != nil {
			t.Errorf("close changes: %v", err)
		}
	}()
	var out []slatedb.Change
	for ch.Next() {
		c := ch.Change()
		out = append(out, slatedb.Change{Key: bytes.Clone(c.Key), Old: c.Old, New: c.New})
	}
	if err := ch.Err(); err != nil {
		t.Fatalf("changes next: %v", err)
	}
	return out, ch.Summary()
}

// scanView reads a whole view: a checkpoint's, or the latest state ("").
func scanView(t *testing.T, ctx context.Context, url, checkpoint string) map[string][]byte {
	t.Helper()
	r, err := slatedb.OpenReader(ctx, url, slatedb.ReaderOptions{Checkpoint: checkpoint})
	if err != nil {
		t.Fatalf("open reader at %q: %v", checkpoint, err)
	}
	defer r.Close()
	keys, values := scanAll(t, ctx, r, nil, nil)
	m := make(map[string][]byte, len(keys))
	for i, k := range keys {
		m[string(k)] = values[i]
	}
	return m
}

// diffViews is the oracle: the changes between two whole scans, in key order.
func diffViews(from, to map[string][]byte) []slatedb.Change {
	var out []slatedb.Change
	for k, old := range from {
		if nv, ok := to[k]; !ok {
			out = append(out, slatedb.Change{Key: []byte(k), Old: old})
		} else if !bytes.Equal(old, nv) {
			out = append(out, slatedb.Change{Key: []byte(k), Old: old, New: nv})
		}
	}
	for k, nv := range to {
		if _, ok := from[k]; !ok {
			out = append(out, slatedb.Change{Key: []byte(k), New: nv})
		}
	}
	slices.SortFunc(out, func(a, b slatedb.Change) int { return bytes.Compare(a.Key, b.Key) })
	return out
}

func sameChanges(t *testing.T, what string, got, want []slatedb.Change) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d changes, the scans' diff has %d\ngot  %s\nwant %s", what, len(got), len(want), show(got), show(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Old, w.Old) || !bytes.Equal(g.New, w.New) ||
			(g.Old == nil) != (w.Old == nil) || (g.New == nil) != (w.New == nil) {
			t.Fatalf("%s: change %d is %s, the scans' diff has %s", what, i, show(got[i:i+1]), show(want[i:i+1]))
		}
	}
}

func show(cs []slatedb.Change) string {
	var b bytes.Buffer
	for i, c := range cs {
		if i == 20 {
			fmt.Fprintf(&b, "... (%d more)", len(cs)-i)
			break
		}
		op := "put"
		if c.New == nil {
			op = "del"
		}
		fmt.Fprintf(&b, "%s %x; ", op, c.Key)
	}
	return b.String()
}

func checkpoint(t *testing.T, ctx context.Context, w *slatedb.Writer) string {
	t.Helper()
	cp, err := w.Checkpoint(ctx, slatedb.CheckpointOptions{Lifetime: time.Hour})
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return cp.ID
}

func flushMemtable(t *testing.T, ctx context.Context, w *slatedb.Writer) {
	t.Helper()
	if err := w.FlushMemtable(ctx); err != nil {
		t.Fatalf("flush memtable: %v", err)
	}
}

// A small change after a checkpoint, part in L0 and part only in the WAL:
// puts, overwrites, a rewrite of the same value (no change) and deletes. The
// SST diff finds exactly what a diff of two whole scans finds, reading only
// the keys written since; the merge scan finds the same.
func TestChangesBetweenCheckpoints(t *testing.T) {
	eachBackend(t, func(t *testing.T, url string) {
		ctx := testenv.Context(t)
		w := openWriter(t, ctx, url)
		var b slatedb.Batch
		for i := range 2000 {
			b.Put(key(i), value(i))
		}
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		flushMemtable(t, ctx, w)
		a := checkpoint(t, ctx, w)

		// To L0: overwrites, a same-value rewrite, new keys, deletes.
		b.Reset()
		for i := 100; i < 110; i++ {
			b.Put(key(i), []byte("changed"))
		}
		b.Put(key(500), value(500))
		b.Put(key(5000), []byte("new"))
		b.Delete(key(700))
		b.Delete(key(9999)) // never existed: no change
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		flushMemtable(t, ctx, w)
		// Only in the WAL (durable, not flushed to L0).
		b.Reset()
		b.Put(key(1500), []byte("wal"))
		b.Delete(key(1501))
		b.Put(key(5001), []byte("wal-new"))
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}

		want := diffViews(scanView(t, ctx, url, a), scanView(t, ctx, url, ""))
		if len(want) != 10+2+3 {
			t.Fatalf("the scans' diff has %d changes: %s", len(want), show(want))
		}
		// A detached checkpoint and the WAL past its manifest: the latest
		// state, the writer not fenced.
		now := latest(t, ctx, url)
		got, sum := changesOf(t, ctx, url, at(a), now, slatedb.DefaultMaxChangedFraction)
		sameChanges(t, "sst diff to the latest state", got, want)
		if sum.Method != slatedb.MethodSSTDiff || sum.SSTsAdded < 1 || sum.WALsAdded < 1 {
			t.Fatalf("summary %+v: want the SST diff over a new L0 SST and WAL", sum)
		}
		// Only the keys written since the checkpoint were read, not 2000.
		if sum.Candidates != 17 {
			t.Fatalf("summary %+v: %d candidate keys, want the 17 written since", sum, sum.Candidates)
		}
		merged, msum := changesOf(t, ctx, url, at(a), now, 0)
		sameChanges(t, "merge scan to the latest state", merged, want)
		if msum.Method != slatedb.MethodMergeScan || msum.Reason == "" {
			t.Fatalf("summary %+v: want the merge scan, with its reason", msum)
		}

		bcp := checkpoint(t, ctx, w)
		got, _ = changesOf(t, ctx, url, at(a), at(bcp), never)
		sameChanges(t, "sst diff between checkpoints", got, want)
		for _, v := range []slatedb.View{at(bcp), now} {
			if none, _ := changesOf(t, ctx, url, v, v, never); len(none) != 0 {
				t.Fatalf("view %+v against itself: %s", v, show(none))
			}
			if none, _ := changesOf(t, ctx, url, v, v, 0); len(none) != 0 {
				t.Fatalf("view %+v against itself, merge scan: %s", v, show(none))
			}
		}
		// The WAL view and the writer's checkpoint hold the same state.
		if same, _ := changesOf(t, ctx, url, now, at(bcp), never); len(same) != 0 {
			t.Fatalf("the WAL view against the writer's checkpoint: %s", show(same))
		}
	})
}

// A compaction after the earlier checkpoint merges its L0 SSTs into a sorted
// run: deleted keys whose value and tombstone the compaction dropped
// together lie in no SST of the later view, only in the earlier view's, and
// are still found. The compaction rewrote the whole database, so the
// default threshold takes the merge scan and says why.
func TestChangesFindDeletesAfterCompaction(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/db"
	w := openWriter(t, ctx, url)
	var b slatedb.Batch
	for i := range 1500 {
		b.Put(key(i), value(i))
	}
	if err := w.Write(ctx, &b); err != nil {
		t.Fatal(err)
	}
	flushMemtable(t, ctx, w)
	a := checkpoint(t, ctx, w)
	// Four more L0 SSTs: SlateDB's compactor merges L0 once it holds four.
	for round := range 4 {
		b.Reset()
		for i := round * 10; i < round*10+10; i++ {
			b.Delete(key(i))
		}
		b.Put(key(1000+round), []byte("later"))
		if err := w.Write(ctx, &b); err != nil {
			t.Fatal(err)
		}
		flushMemtable(t, ctx, w)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		p, err := slatedb.ProfileBlocks(ctx, url, "", slatedb.Options{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(p.Blocks, func(b slatedb.Block) bool { return b.SortedRun < 0 }) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the compactor left L0 SSTs for 90 s")
		}
		time.Sleep(200 * time.Millisecond)
	}
	bcp := checkpoint(t, ctx, w)

	want := diffViews(scanView(t, ctx, url, a), scanView(t, ctx, url, bcp))
	deletes := 0
	for _, c := range want {
		if c.New == nil {
			deletes++
		}
	}
	if deletes != 40 || len(want) != 44 {
		t.Fatalf("the scans' diff: %d changes, %d deletes", len(want), deletes)
	}
	got, sum := changesOf(t, ctx, url, at(a), at(bcp), never)
	sameChanges(t, "sst diff across a compaction", got, want)
	// Every key is a candidate (the whole database was rewritten): more than
	// one window of the native side's parallel lookups.
	if sum.Method != slatedb.MethodSSTDiff || sum.SSTsRemoved < 1 || sum.Candidates < 1500 {
		t.Fatalf("summary %+v: want the SST diff over every key, the earlier view's L0 gone", sum)
	}
	auto, asum := changesOf(t, ctx, url, at(a), at(bcp), slatedb.DefaultMaxChangedFraction)
	sameChanges(t, "default threshold across a compaction", auto, want)
	if asum.Method != slatedb.MethodMergeScan || asum.Reason == "" || asum.ChangedBytes <= asum.TotalBytes/4 {
		t.Fatalf("summary %+v: want the merge scan, the compaction having rewritten everything", asum)
	}
}

func TestChangesNeedACheckpointFirst(t *testing.T) {
	ctx := testenv.Context(t)
	url := "file://" + t.TempDir() + "/db"
	w := openWriter(t, ctx, url)
	put(t, ctx, w, "k", "v")
	cp := checkpoint(t, ctx, w)
	if _, err := slatedb.OpenChanges(ctx, url, at(""), at(cp), slatedb.Options{}, never); !errors.Is(err, slatedb.ErrInvalid) {
		t.Fatalf("no earlier checkpoint: err = %v, want ErrInvalid", err)
	}
	missing := "00000000-0000-4000-8000-000000000000"
	if _, err := slatedb.OpenChanges(ctx, url, at(missing), at(cp), slatedb.Options{}, never); !errors.Is(err, slatedb.ErrCheckpointMissing) {
		t.Fatalf("missing checkpoint: err = %v, want ErrCheckpointMissing", err)
	}
}

// A view whose WAL SSTs past its checkpoint's manifest are gone (garbage
// collected) is refused, never read without them.
func TestChangesRefuseAViewMissingItsWAL(t *testing.T) {
	ctx := testenv.Context(t)
	dir := t.TempDir() + "/db"
	url := "file://" + dir
	w := openWriter(t, ctx, url)
	put(t, ctx, w, "a", "1")
	a := checkpoint(t, ctx, w)
	put(t, ctx, w, "b", "2")
	v := latest(t, ctx, url)
	if v.WALEnd == 0 {
		t.Fatalf("view %+v: no WAL end", v)
	}
	if got, _ := changesOf(t, ctx, url, at(a), v, never); len(got) != 1 || string(got[0].Key) != "b" {
		t.Fatalf("changes to the WAL view: %s", show(got))
	}
	last := fmt.Sprintf("%s/wal/%020d.sst", dir, v.WALEnd-1)
	if err := os.Remove(last); err != nil {
		t.Fatal(err)
	}
	if _, err := slatedb.OpenChanges(ctx, url, at(a), v, slatedb.Options{}, never); !errors.Is(err, slatedb.ErrNotFound) {
		t.Fatalf("a view missing WAL SST %s: err = %v, want ErrNotFound", last, err)
	}
}

// Views' overlays kept in a cache (an online run's staging) give the same
// changes as the WAL SSTs read again, by the SST diff and by the merge scan;
// a view whose WAL SSTs were collected since its overlay was kept is still
// read whole from the cache, where without it the view is refused.
func TestChangesWithAnOverlayCache(t *testing.T) {
	ctx := testenv.Context(t)
	dir := t.TempDir() + "/db"
	url := "file://" + dir
	cache := slatedb.Options{OverlayCache: "file://" + t.TempDir() + "/overlays/"}
	keep := cache
	keep.KeepOverlay = true
	w := openWriter(t, ctx, url)
	put(t, ctx, w, "a", "1", "b", "1")
	a := checkpoint(t, ctx, w)
	start := latest(t, ctx, url)
	for i := range 12 { // a backlog: a WAL SST each
		put(t, ctx, w, fmt.Sprintf("k%02d", i), fmt.Sprint(i))
	}
	var del slatedb.Batch
	del.Delete([]byte("a"))
	if err := w.Write(ctx, &del); err != nil {
		t.Fatal(err)
	}
	v1 := latest(t, ctx, url)
	first, _ := changesWith(t, ctx, url, at(a), v1, keep, never)
	if len(first) != 13 {
		t.Fatalf("round 1: %s, want the 12 puts and the delete", show(first))
	}
	put(t, ctx, w, "k03", "again", "b", "2", "z", "new")
	v2 := latest(t, ctx, url)
	for _, frac := range []float64{never, 0} {
		plain, _ := changesOf(t, ctx, url, v1, v2, frac)
		cached, sum := changesWith(t, ctx, url, v1, v2, cache, frac)
		if show(plain) != show(cached) || len(plain) != 3 {
			t.Fatalf("%s: with the cache %s, without %s", sum.Method, show(cached), show(plain))
		}
	}
	// The backlog collected: v1's WAL SSTs past its manifest gone.
	for id := start.WALEnd; id < v1.WALEnd; id++ {
		if err := os.Remove(fmt.Sprintf("%s/wal/%020d.sst", dir, id)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := slatedb.OpenChanges(ctx, url, v1, v2, slatedb.Options{}, never); !errors.Is(err, slatedb.ErrNotFound) {
		t.Fatalf("without the cache, a view missing its WAL: err = %v, want ErrNotFound", err)
	}
	for _, frac := range []float64{never, 0} {
		got, sum := changesWith(t, ctx, url, v1, v2, cache, frac)
		if len(got) != 3 || string(got[0].Key) != "b" || string(got[1].Key) != "k03" || string(got[2].Key) != "z" || string(got[1].Old) != "3" {
			t.Fatalf("%s, from the cache: %s", sum.Method, show(got))
		}
	}
}

// The real RockLake commits to a seeded catalog between a checkpoint and the
// latest state, then stops: the SST diff finds exactly the keys a diff of
// two whole scans finds (counters and snapshots included), while RockLake
// serves and after it stopped.
func TestChangesOfARealRockLakeCatalog(t *testing.T) {
	needRockLake(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir() + "/catalog"
	url := "file://" + dir
	if _, err := seed.Seed(ctx, url, seed.Options{Rows: 20000, Seed: 26}); err != nil {
		t.Fatal(err)
	}
	a, err := slatedb.CreateCheckpoint(ctx, url, slatedb.CheckpointOptions{Lifetime: time.Hour}, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := serve(t, ctx, dir)
	for i := range 3 {
		createSchema(t, ctx, srv, fmt.Sprintf("online_%d", i))
	}

	// RockLake's commits sit in its WAL, past the manifest a detached
	// checkpoint takes: the view lays that WAL over it.
	now := latest(t, ctx, url)
	live := diffViews(scanView(t, ctx, url, a.ID), scanView(t, ctx, url, ""))
	got, sum := changesOf(t, ctx, url, at(a.ID), now, slatedb.DefaultMaxChangedFraction)
	sameChanges(t, "while RockLake serves", got, live)
	if sum.Method != slatedb.MethodSSTDiff {
		t.Fatalf("summary %+v: want the SST diff for three commits", sum)
	}
	merged, _ := changesOf(t, ctx, url, at(a.ID), now, 0)
	sameChanges(t, "merge scan while RockLake serves", merged, live)
	// The detached checkpoint alone lacks them.
	if alone, _ := changesOf(t, ctx, url, at(a.ID), at(now.Checkpoint), never); len(alone) >= len(live) {
		t.Fatalf("the detached checkpoint alone holds %d of the %d changes: RockLake's WAL is not past its manifest", len(alone), len(live))
	}
	t.Logf("while RockLake serves: %d changes, %d WAL SSTs added (WAL end %d)", len(live), sum.WALsAdded, sum.ToWALEnd)
	tags := map[byte]int{}
	for _, c := range live {
		tags[c.Key[0]]++
	}
	// Snapshots (0x02), the counters (0xFE) and system keys (0xFF) among
	// the rows of the new schemas and tables.
	for _, tag := range []byte{0x02, 0xFE, 0xFF} {
		if tags[tag] == 0 {
			t.Fatalf("no change under tag %#x in %v", tag, tags)
		}
	}
	stop(t, srv)

	// RockLake leaves its last commits in the WAL: a writer's checkpoint
	// takes them in.
	w, err := slatedb.OpenWriter(ctx, url, slatedb.Options{Passive: true})
	if err != nil {
		t.Fatal(err)
	}
	bcp := checkpoint(t, ctx, w)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := diffViews(scanView(t, ctx, url, a.ID), scanView(t, ctx, url, bcp))
	sameChanges(t, "RockLake's commits: the view while it served, its writer's checkpoint after", live, want)
	got, sum = changesOf(t, ctx, url, at(a.ID), at(bcp), slatedb.DefaultMaxChangedFraction)
	sameChanges(t, "after RockLake stopped", got, want)
	merged, _ = changesOf(t, ctx, url, at(a.ID), at(bcp), 0)
	sameChanges(t, "merge scan after RockLake stopped", merged, want)
	if same, _ := changesOf(t, ctx, url, now, at(bcp), never); len(same) != 0 {
		t.Fatalf("the view taken while RockLake served against its writer's checkpoint after: %s", show(same))
	}
	t.Logf("%d changes, %s, %d candidate keys of %d+%d SSTs and %d WAL SSTs, %d of %d bytes",
		len(want), sum.Method, sum.Candidates, sum.SSTsAdded, sum.SSTsRemoved, sum.WALsAdded, sum.ChangedBytes, sum.TotalBytes)
}
