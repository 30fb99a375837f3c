package runstate

import (
	"context"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// CatalogMarks reads what RockLake moves when it writes: writer-epoch (0
// before any RockLake writer opened the catalog) and next_snapshot_id.
func CatalogMarks(ctx context.Context, c *catalog.Catalog) (pointer.Marks, error) {
	epoch, next, err := c.Marks(ctx)
	return pointer.Marks{WriterEpoch: epoch, NextSnapshotID: next}, err
}
