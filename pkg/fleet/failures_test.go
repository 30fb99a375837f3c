package fleet_test

import (
	"sync"
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/fleet"
)

// Items that fail at once each count once (conditional writes), and an
// item may start only while fewer than the limit failed; no limit, always.
func TestFailureLimitCountsEachFailureOnce(t *testing.T) {
	s3server.StartWith(t, map[string]bool{"fleets": true})
	ctx, store := testenv.Context(t), testenv.Store(t)
	src, id := "s3://fleets/tenants/", "f-1"
	if ok, err := fleet.MayStart(ctx, store, src, id, 3); err != nil || !ok {
		t.Fatalf("no failure yet: %v, %v", ok, err)
	}
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			if _, err := fleet.CountFailure(ctx, store, src, id); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n, err := fleet.CountFailure(ctx, store, src, id); err != nil || n != 7 {
		t.Fatalf("the seventh failure counts %d (%v), want 7", n, err)
	}
	for _, c := range []struct {
		limit int
		want  bool
	}{{7, false}, {8, true}, {0, true}} {
		if ok, err := fleet.MayStart(ctx, store, src, id, c.limit); err != nil || ok != c.want {
			t.Fatalf("limit %d after 7 failures: may start %v (%v), want %v", c.limit, ok, err, c.want)
		}
	}
	if runs, err := fleet.Runs(ctx, store, src); err != nil || len(runs) != 0 {
		t.Fatalf("the count is listed as a fleet run: %v, %v", runs, err)
	}
}
