package claim_test

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/internal/testenv/s3server"
	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

func TestMain(m *testing.M) {
	os.Exit(s3server.Main(m, map[string]bool{"rocklake": true}))
}

// A claim is written once: a retry of the same run finds its own, a claim
// of anything else at the key is never overwritten, updates record events
// only, and a deleted claim is gone from the listing.
func TestCreateOnceUpdateDelete(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store, err := blob.New(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ptr := "s3://rocklake/a/CURRENT"
	c := claim.Claim{Pointer: ptr, Catalog: "s3://rocklake/catalogs/v1-m-1/", Kind: claim.KindWayBack, Source: "s3://rocklake/catalogs/prod", MigrationID: "m-1", Created: time.Now()}
	if created, err := claim.Create(ctx, store, c); err != nil || !created {
		t.Fatalf("create: %v, %v", created, err)
	}
	if created, err := claim.Create(ctx, store, c); err != nil || created {
		t.Fatalf("the same claim again: %v, %v", created, err)
	}
	other := c
	other.Catalog = "s3://rocklake/catalogs/v2-m-1"
	if _, err := claim.Create(ctx, store, other); !errors.Is(err, claim.ErrTaken) {
		t.Fatalf("another claim at the key: %v", err)
	}
	for _, bad := range []claim.Claim{{Pointer: ptr, Catalog: "x", Kind: "thing", MigrationID: "m-2", Created: time.Now()}, {Pointer: ptr, Catalog: "x", Kind: claim.KindTarget, MigrationID: "../m", Created: time.Now()}} {
		if _, err := claim.Create(ctx, store, bad); !errors.Is(err, claim.ErrBadClaim) {
			t.Fatalf("bad claim %+v: %v", bad, err)
		}
	}
	got, err := claim.Update(ctx, store, ptr, "m-1", func(c *claim.Claim) { c.Released = &claim.Event{By: "r-1", At: time.Now()} })
	if err != nil || got.Released == nil || got.Catalog != "s3://rocklake/catalogs/v1-m-1" {
		t.Fatalf("update: %+v, %v", got, err)
	}
	if _, err := claim.Update(ctx, store, ptr, "m-1", func(c *claim.Claim) { c.Catalog = "s3://rocklake/elsewhere" }); !errors.Is(err, claim.ErrBadClaim) {
		t.Fatalf("an update that moves the claim: %v", err)
	}
	if _, err := store.Put(ctx, layout.Claim(ptr, "m-bad"), []byte("not json")); err != nil {
		t.Fatal(err)
	}
	entries, err := claim.List(ctx, store, ptr)
	if err != nil || len(entries) != 2 || entries[0].MigrationID != "m-1" || entries[0].Released == nil || entries[1].ReadError == "" {
		t.Fatalf("list: %+v, %v", entries, err)
	}
	if err := claim.Delete(ctx, store, ptr, "m-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := claim.Read(ctx, store, ptr, "m-1"); !errors.Is(err, claim.ErrNoClaim) {
		t.Fatalf("read after delete: %v", err)
	}

	// The pointers beside this one that keep claims or records are found.
	for _, u := range []string{layout.Claim("s3://rocklake/a/DEV", "m-9"), "s3://rocklake/a/OTHER.history/x.json", "s3://rocklake/a/catalogs/x"} {
		if _, err := store.Put(ctx, u, []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	n, err := claim.Neighbours(ctx, store, ptr)
	if slices.Sort(n); err != nil || !slices.Equal(n, []string{"s3://rocklake/a/DEV", "s3://rocklake/a/OTHER"}) {
		t.Fatalf("neighbours: %v, %v", n, err)
	}
}
