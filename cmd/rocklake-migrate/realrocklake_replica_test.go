package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/localrun"

	"github.com/rocklake/rocklake-migrate/internal/testenv/rocklake"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// Reads never fail through a migration (issues 25, 37). A client reads
// every 50 ms and writes every 200 ms through the real RockLake under
// `rocklake-migrate serve` while `migrate --rebuild --postpone-flip` holds
// the source frozen at the gate for well over one restart, then `approve`
// flips. When the lock names the fence, the supervisor stops the writer,
// copies the source as it stands beside it and serves reads from the copy
// (RockLake's reader mode opens its catalog as a SlateDB writer, so a
// reader on the source would be fenced with it), behind its front, which
// holds new connections while no server serves: no read fails for
// readGapMax while the frozen window is far longer; every write from the
// first refused one to the flip is refused (57P04); after the flip the
// writer on the new catalog takes writes, every earlier commit there; the
// copy and Freeze's replica are gone. DuckDB 1.5.3 through its DuckLake
// extension wrote the lake before the migration and reads the same answers
// at the gate and from the new catalog after the flip.
func TestRealRockLakeServeReadsThroughMigration(t *testing.T) {
	const readGapMax, frozenMin = time.Second, 15 * time.Second
	bin, err := rocklake.Binary()
	if err != nil {
		t.Fatal(err)
	}
	ctx, _ := s3Stack(t, 4*time.Minute)
	src := filepath.Join(t.TempDir(), "catalogs", "prod")
	// DuckDB, RockLake's real client, writes a lake (DuckLake over
	// RockLake's PostgreSQL protocol); its answers must be the same from the
	// replica at the gate and from the new catalog after the flip.
	data := filepath.Join(t.TempDir(), "data") + "/"
	lake := func(on *rocklake.Server, stmts []string) (string, error) {
		res, err := rocklake.DuckDB(ctx, on, data, stmts, rocklake.DuckDBQueries)
		if err != nil {
			return "", err
		}
		b, err := json.Marshal(res)
		return string(b), err
	}
	var before string
	withRockLake(t, ctx, src, func(srv *rocklake.Server) (err error) {
		before, err = lake(srv, rocklake.DuckDBWorkload)
		if err == nil && !strings.Contains(before, "with a note") {
			err = fmt.Errorf("DuckDB did not read back what it wrote: %s", before)
		}
		if err == nil {
			err = writeSchema(ctx, srv, "first_src")
		}
		return err
	})
	ptr := pointAt(t, src)
	sv := superviseRockLake(t, ctx, ptr, bin, 32, "--interval", "200ms")
	port, errOut := sv.port, &sv.errOut
	cl := rocklake.Client(port)
	sameLake := func(where string) func() error {
		return func() error {
			got, err := lake(cl, nil)
			if err == nil && got != before {
				err = fmt.Errorf("DuckDB answers differ %s:\nbefore: %s\nnow:    %s", where, before, got)
			}
			return err
		}
	}
	eventually(t, "the writer takes a write", func() error { return writeSchema(ctx, cl, "before_migration") })

	// The client: a read every 50 ms, a write every 200 ms.
	c := startClient(ctx, cl, func(ctx context.Context) error {
		names, err := schemas(ctx, cl)
		if err == nil && !strings.Contains(names, "before_migration") {
			err = fmt.Errorf("a read without the commits before the migration: %q", names)
		}
		return err
	}, 50*time.Millisecond, 200*time.Millisecond)
	defer c.stop()

	started := time.Now()
	r := cli(t, "migrate", "--pointer", ptr, "--rebuild", "--shards", "2", "--freeze-grace", "20s", "--postpone-flip", "--offline", "--json")
	r.want(t, exitOK)
	var rep localrun.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || rep.Gate == nil {
		t.Fatalf("migrate --postpone-flip report %q: %v", r.stdout, err)
	}
	replica, err := layout.Replica("file://"+src, rep.MigrationID)
	if err != nil {
		t.Fatal(err)
	}
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if objs, err := store.List(ctx, replica+"/manifest/"); err != nil || len(objs) == 0 {
		t.Fatalf("the replica %s at the gate: %d manifests, %v", replica, len(objs), err)
	}
	eventually(t, "DuckDB reads the lake from the replica at the gate", sameLake("at the gate"))
	// Frozen at the gate for well over one restart.
	time.Sleep(time.Until(started.Add(frozenMin)))
	cli(t, "approve", rep.MigrationID, "--pointer", ptr).want(t, exitOK)
	cur, _, err := pointer.Read(ctx, store, ptr)
	if err != nil || cur.MigrationID != rep.MigrationID {
		t.Fatalf("the pointer after approve: %+v, %v", cur, err)
	}
	// The flip is the pointer's write (approve then frees the lock and
	// removes the replica).
	flipped := cur.UpdatedAt
	eventually(t, "a write on the new catalog", func() error { return writeSchema(ctx, cl, "after_flip") })
	eventually(t, "DuckDB reads the lake from the new catalog", sameLake("after the flip"))
	c.stop()
	evs := c.sent()

	var firstRefused time.Time
	var committed []string
	refused57P04 := 0
	for _, e := range evs {
		switch {
		case !e.write:
		case e.ok && !firstRefused.IsZero() && e.at.Before(flipped):
			t.Fatalf("write %s accepted at %s, under the lock (first refused at %s, flipped at %s)\n%s", e.name, e.at.Format("15:04:05.000"), firstRefused.Format("15:04:05.000"), flipped.Format("15:04:05.000"), healthLines(errOut.String()))
		case e.ok:
			committed = append(committed, e.name)
		case firstRefused.IsZero():
			firstRefused = e.at
			fallthrough
		default:
			if strings.Contains(e.err.Error(), "57P04") {
				refused57P04++
			}
		}
	}
	frozen := flipped.Sub(firstRefused)
	reads := gaps(events(evs), false)
	var worst time.Duration
	for _, g := range reads {
		worst = max(worst, g)
	}
	t.Logf("read gaps %v (longest %s); writes refused for %s (%d with 57P04), %d statements", reads, worst.Round(time.Millisecond), frozen.Round(time.Millisecond), refused57P04, len(evs))
	if firstRefused.IsZero() || refused57P04 == 0 || frozen < frozenMin-5*time.Second {
		t.Fatalf("writes refused from %s, %d with 57P04, for %s: want the source frozen, writes refused with 57P04, for over %s", firstRefused, refused57P04, frozen, frozenMin-5*time.Second)
	}
	if worst >= readGapMax {
		t.Fatalf("reads failed for %s at once (gaps %v), want under %s (one restart) while the source was frozen %s\n%s", worst, reads, readGapMax, frozen, errOut.String())
	}
	// Every commit, before the lock and after the flip, is in the new
	// catalog, which the pointer names.
	names, err := schemas(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range append(committed, "first_src", "before_migration", "after_flip") {
		if !strings.Contains(","+names+",", ","+want+",") {
			t.Fatalf("commit %s missing from the new catalog: %q", want, names)
		}
	}
	for _, want := range []string{"mode=reader catalog=file://" + filepath.Dir(src) + "/reader-", "mode=writer catalog=" + cur.Catalog} {
		if !strings.Contains(errOut.String(), want) {
			t.Fatalf("health lines lack %q:\n%s", want, errOut.String())
		}
	}
	eventually(t, "the supervisor's copy removed", func() error {
		left, err := filepath.Glob(filepath.Join(filepath.Dir(src), "reader-*"))
		if err == nil && len(left) > 0 {
			err = fmt.Errorf("copies left: %v", left)
		}
		return err
	})
	if _, err := os.Stat(strings.TrimPrefix(replica, "file://")); !os.IsNotExist(err) {
		if objs, lerr := store.List(ctx, replica+"/"); lerr != nil || len(objs) != 0 {
			t.Fatalf("the replica %s after the flip: %d objects, %v", replica, len(objs), lerr)
		}
	}
}

// healthLines are the supervisor's lines among serve's stderr.
func healthLines(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, " state=") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}
