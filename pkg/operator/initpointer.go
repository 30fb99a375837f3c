package operator

import (
	"context"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"
)

// InitPointer creates the first pointer at pointerURL, to the catalog at
// catalogURL in the format the catalog's startup check finds; the bucket
// must be versioned (pointer.Create).
func InitPointer(ctx context.Context, env runstate.Env, pointerURL, catalogURL string) (pointer.Pointer, pointer.Ref, error) {
	c, err := catalog.Open(ctx, catalogURL, catalog.Options{Store: env.SlateDB})
	if err != nil {
		return pointer.Pointer{}, pointer.Ref{}, err
	}
	p := pointer.Pointer{Catalog: catalogURL, FormatVersion: c.Version(), MigrationID: "initial"}
	c.Close()
	ref, err := pointer.Create(ctx, env.Store, pointerURL, p)
	return p, ref, err
}
