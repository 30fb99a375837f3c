// Package seeded is the test rig of the workflow's, the local run's and
// the operator's tests: a seeded format-1 catalog behind a pointer on the
// test's own versitygw, a step Env on it, and the small reads those tests
// make of what a run left (the lock, the source's checkpoints, the
// objects under a prefix) and do to it (a commit as RockLake makes one).
package seeded

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
	"github.com/rocklake/rocklake-migrate/pkg/seed"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Fixture is a seeded catalog (Source) behind a pointer (Pointer) in the
// versioned bucket "rocklake", staging in the versioned bucket "staging",
// on the test's own gateway (Stack).
type Fixture struct {
	Env     runstate.Env
	Pointer string
	Source  string
	Stack   *s3server.Server
}

// Setup starts the gateway, seeds rows rows (seed 5) and writes the
// pointer; the context ends after 4 minutes or with the test.
func Setup(t *testing.T, rows int) (context.Context, Fixture) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	t.Cleanup(cancel)
	stack := s3server.StartWith(t, map[string]bool{"rocklake": true, "staging": true})
	f := Fixture{
		Env:     runstate.Env{Store: testenv.Store(t), Staging: "s3://staging/migrations", CreatedBy: "test"},
		Pointer: "s3://rocklake/CURRENT",
		Source:  "s3://rocklake/catalogs/prod",
		Stack:   stack,
	}
	if _, err := seed.Seed(ctx, f.Source, seed.Options{Rows: rows, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Create(ctx, f.Env.Store, f.Pointer, pointer.Pointer{Catalog: f.Source, FormatVersion: format.V1, MigrationID: "initial"}); err != nil {
		t.Fatal(err)
	}
	return ctx, f
}

// Topic is an SNS topic ARN for a local run's notices (Published gets
// them; nothing is sent).
const Topic = "arn:aws:sns:us-east-1:000000000000:rocklake"

// Published keeps what a run published (its Publish is an Env's and a
// local run's publish function), for the tests to read.
type Published struct {
	mu       sync.Mutex
	Subjects []string
	Bodies   []string
}

// Publish records a message.
func (p *Published) Publish(_ context.Context, _, subject, body string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.Subjects = append(p.Subjects, subject)
	p.Bodies = append(p.Bodies, body)
	return nil
}

// NoGrace is a freeze_grace of 0: no supervisor watches the tests'
// pointers, so Freeze fences at once unless a test says otherwise.
func NoGrace() *float64 {
	var zero float64
	return &zero
}

// Offline is an input's online setting for the offline path: Freeze fences
// the source for the whole copy (online is the default).
func Offline() *bool { v := false; return &v }

// MovePointer flips the fixture's pointer to its own catalog again, as
// run by names it: another writer of the pointer, for the tests of a run
// whose pointer moved under it.
func MovePointer(t *testing.T, ctx context.Context, f Fixture, by string) {
	t.Helper()
	cur, ref, err := pointer.Read(ctx, f.Env.Store, f.Pointer)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pointer.Flip(ctx, f.Env.Store, f.Pointer, cur.Next(f.Source, format.V1, by), ref); err != nil {
		t.Fatal(err)
	}
}

// Commit is a writer's commit to the format-1 catalog at url, as RockLake
// makes one: its next_snapshot_id moves by one (so a run that froze it
// before sees the source changed).
func Commit(ctx context.Context, url string) error {
	_, err := CommitIn(ctx, url, format.V1, 1)
	return err
}

// CommitIn is Commit of n snapshots to a catalog in format v; it returns
// the next_snapshot_id before them.
func CommitIn(ctx context.Context, url string, v format.Version, n uint64) (uint64, error) {
	w, err := catalog.OpenWriter(ctx, url, catalog.Options{Expect: v})
	if err != nil {
		return 0, err
	}
	next, err := w.Counter(ctx, format.NameNextSnapshotID)
	if err == nil {
		var b slatedb.Batch
		b.Put(format.CounterKey(v, format.NameNextSnapshotID), format.EncodeCounter(v, next+n))
		err = w.Write(ctx, &b)
	}
	return next, errors.Join(err, w.Close())
}

// Objects is every object under prefix, by URL, with its ETag: what a test
// compares before and after to prove that nothing was written.
func Objects(t *testing.T, ctx context.Context, store *blob.Store, prefix string) map[string]string {
	t.Helper()
	infos, err := store.List(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, in := range infos {
		m[in.URL] = in.ETag
	}
	return m
}

// LockHolder is the lock of the fixture's pointer (MigrationID "" when
// free).
func LockHolder(t *testing.T, ctx context.Context, f Fixture) lock.Lock {
	t.Helper()
	b, _, err := f.Env.Store.Get(ctx, layout.Lock(f.Pointer))
	if err != nil {
		t.Fatal(err)
	}
	var l lock.Lock
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatal(err)
	}
	return l
}

// Checkpoints counts the checkpoints of the catalog at url but a flip's
// pins, which the flip keeps for a rollback.
func Checkpoints(t *testing.T, ctx context.Context, url string) int {
	t.Helper()
	cps, err := slatedb.ListCheckpoints(ctx, url, slatedb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, cp := range cps {
		if !strings.HasPrefix(cp.Name, layout.FlipCheckpoint("")) {
			n++
		}
	}
	return n
}
