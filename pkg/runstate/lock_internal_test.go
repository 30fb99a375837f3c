package runstate

import (
	"context"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv"
	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/lock"
)

// The lock says who holds it: a cleanup's and a restore's are of their
// kind with a lease of an hour (one killed frees the pointer within it,
// not after a migration's execution timeout), name no fence, and a
// cleanup's lets the writer go on; a migration's keeps its lease.
func TestLockKindsAndLeases(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s3server.StartWith(t, map[string]bool{"rocklake": true})
	env := Env{Store: testenv.Store(t), Staging: "s3://rocklake/migrations", CreatedBy: "lock test"}
	store := env.Store
	ptr := "s3://rocklake/CURRENT"
	migrationLease, err := env.LockLease()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind       history.Kind
		lease      time.Duration
		writesGoOn bool
	}{
		{history.KindCleanup, time.Hour, true},
		{history.KindRestore, time.Hour, false},
		{history.KindMigrate, migrationLease, false},
	} {
		id := "run-" + string(c.kind)
		held := Migration{Run: Run{Pointer: ptr, MigrationID: id}}
		if c.kind != history.KindMigrate {
			held, err = HoldLock(ctx, env, ptr, id, c.kind)
		} else {
			_, err = AcquireLock(ctx, env, held, time.Now())
		}
		if err != nil {
			t.Fatalf("%s: take the lock: %v", c.kind, err)
		}
		l, _, err := lock.Read(ctx, store, ptr, "")
		if err != nil {
			t.Fatal(err)
		}
		if l.MigrationID != id || l.Kind != c.kind || l.ExpiresAt.Sub(l.AcquiredAt) != c.lease || l.WritesGoOn() != c.writesGoOn {
			t.Fatalf("%s: lock %+v (writes go on %v); want kind %s, a lease of %s, writes going on %v", c.kind, l, l.WritesGoOn(), c.kind, c.lease, c.writesGoOn)
		}
		if c.kind != history.KindMigrate && !l.FenceAt.IsZero() {
			t.Fatalf("%s: lock names a fence at %s", c.kind, l.FenceAt)
		}
		if err := lock.Release(ctx, env.Store, held.Pointer, held.MigrationID); err != nil {
			t.Fatal(err)
		}
	}
}
