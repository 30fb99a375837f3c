package history_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

func TestMain(m *testing.M) {
	os.Exit(s3server.Main(m, map[string]bool{"rocklake": true}))
}

func setup(t *testing.T) (context.Context, *blob.Store, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return ctx, store, s3server.NewURL(t, "rocklake", "/CURRENT")
}

func record(ptr, id string, start time.Time) history.Record {
	return history.Record{ID: id, Kind: history.KindMigrate, Trigger: "cli:tester", Pointer: ptr, Start: start, Outcome: history.InProgress}
}

// A record is created once: the same run's retry finds its own, another
// run's record at the key is never overwritten, and updates are the run's.
func TestCreateNeverOverwrites(t *testing.T) {
	ctx, store, ptr := setup(t)
	start := time.Date(2026, 12, 2, 10, 0, 0, 123e6, time.UTC)
	url, err := history.Create(ctx, store, record(ptr, "m-1", start))
	if err != nil {
		t.Fatal(err)
	}
	if want := ptr + ".history/20261202T100000.123Z-m-1.json"; url != want {
		t.Fatalf("url %s, want %s", url, want)
	}
	if again, err := history.Create(ctx, store, record(ptr, "m-1", start)); err != nil || again != url {
		t.Fatalf("a retried create: %s, %v", again, err)
	}
	if _, err := history.Update(ctx, store, url, func(r *history.Record) { r.Outcome, r.Rows = history.Succeeded, 42 }); err != nil {
		t.Fatal(err)
	}
	// Someone else's object at the key (a corrupt one, say) stays as it is.
	other := layout.HistoryRecord(ptr, start, "m-2")
	if _, err := store.Put(ctx, other, []byte(`{"id":"m-9"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := history.Create(ctx, store, record(ptr, "m-2", start)); !errors.Is(err, history.ErrRecordExists) {
		t.Fatalf("create over another run's record: %v", err)
	}
	if b, _, _ := store.Get(ctx, other); string(b) != `{"id":"m-9"}` {
		t.Fatalf("another run's record was overwritten: %s", b)
	}
	// The first create after the update left it alone too.
	got, err := history.Read(ctx, store, url)
	if err != nil || got.Outcome != history.Succeeded || got.Rows != 42 {
		t.Fatalf("record = %+v, %v", got, err)
	}
	// An update may not move a record to another run.
	if _, err := history.Update(ctx, store, url, func(r *history.Record) { r.ID = "m-3" }); !errors.Is(err, history.ErrBadRecord) {
		t.Fatalf("update changing the id: %v", err)
	}
}

// Bad records are refused with ErrBadRecord, and nothing is written.
func TestBadRecordsRefused(t *testing.T) {
	ctx, store, ptr := setup(t)
	now := time.Now()
	for name, r := range map[string]history.Record{
		"no id":       record(ptr, "", now),
		"slash in id": record(ptr, "a/b", now),
		"no pointer":  record("", "m-1", now),
		"no start":    record(ptr, "m-1", time.Time{}),
		"no kind":     {ID: "m-1", Pointer: ptr, Start: now, Outcome: history.Failed},
	} {
		if _, err := history.Create(ctx, store, r); !errors.Is(err, history.ErrBadRecord) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if objs, err := store.List(ctx, layout.HistoryDir(ptr)); err != nil || len(objs) != 0 {
		t.Fatalf("refused records wrote %d objects, %v", len(objs), err)
	}
}

// List is newest first, honours the limit, and shows an unreadable record
// by its id instead of failing or hiding it.
func TestListNewestFirst(t *testing.T) {
	ctx, store, ptr := setup(t)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// Written out of order; times 9 s apart and 11 h apart sort as times.
	for _, d := range []time.Duration{9 * time.Second, 11 * time.Hour, 0, 100 * time.Millisecond} {
		id := fmt.Sprintf("m-%d", d.Milliseconds())
		if _, err := history.Create(ctx, store, record(ptr, id, base.Add(d))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := store.Put(ctx, layout.HistoryRecord(ptr, base.Add(time.Hour), "m-broken"), []byte("{")); err != nil {
		t.Fatal(err)
	}
	all, err := history.List(ctx, store, ptr, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range all {
		ids = append(ids, e.ID)
	}
	if got, want := strings.Join(ids, " "), "m-39600000 m-broken m-9000 m-100 m-0"; got != want {
		t.Fatalf("order %q, want %q", got, want)
	}
	if all[1].ReadError == "" || all[0].ReadError != "" {
		t.Fatalf("read errors: %+v", all[:2])
	}
	two, err := history.List(ctx, store, ptr, 2)
	if err != nil || len(two) != 2 || two[0].ID != "m-39600000" {
		t.Fatalf("limit 2: %+v, %v", two, err)
	}
	url, r, err := history.Find(ctx, store, ptr, "m-9000")
	if err != nil || r.ID != "m-9000" || !strings.HasSuffix(url, "-m-9000.json") {
		t.Fatalf("find: %s %+v %v", url, r, err)
	}
	// "m-0" is a suffix of nothing else's id part: Find matches whole ids.
	if _, _, err := history.Find(ctx, store, ptr, "0"); !errors.Is(err, history.ErrNoRecord) {
		t.Fatalf("find by a suffix of an id: %v", err)
	}
}
