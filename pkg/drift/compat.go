package drift

import (
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// Forwarders for pkg/workflow/steps.go until its split lands and it asks
// pkg/layout itself; removed then.

var ErrAtRoot = layout.ErrAtRoot

func MigrationCheckpointName(id string) string { return layout.FreezeCheckpoint(id) }

func TargetURL(source string, v format.Version, id string) (string, error) {
	return layout.Target(source, v, id)
}

func ReplicaURL(source, id string) (string, error) { return layout.Replica(source, id) }

func WayBack(p pointer.Pointer) (string, bool) { return layout.WayBackOf(p) }
