package migration

import (
	"errors"
	"fmt"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// Migration turns records of format From into records of format To = From+1.
type Migration struct {
	From, To format.Version
	// Apply transforms one record of a known tag. It returns the records that
	// replace it (usually one).
	Apply func(rec ndjson.Record) ([]ndjson.Record, error)
	// ExpectCounts maps per-table counts of a From catalog to the counts its
	// To catalog must have; Verify compares against them.
	ExpectCounts func(in map[string]uint64) map[string]uint64
}

// ErrNoPath means no chain of registered migrations leads from one version
// to the other.
var ErrNoPath = errors.New("migration: no migration path")

var registry = map[format.Version]Migration{}

// Register adds a migration; it panics on a duplicate or a non-adjacent
// pair, since both are programming errors found at init.
func Register(m Migration) {
	if m.To != m.From+1 {
		panic(fmt.Sprintf("migration: %s→%s is not between adjacent versions", m.From, m.To))
	}
	if _, dup := registry[m.From]; dup {
		panic(fmt.Sprintf("migration: %s→%s registered twice", m.From, m.To))
	}
	registry[m.From] = m
}

// Path returns the migrations that lead from one version to another, in
// order. from == to gives an empty path (a plain copy).
func Path(from, to format.Version) ([]Migration, error) {
	if !format.Supported(from) || !format.Supported(to) {
		return nil, fmt.Errorf("%w from %s to %s: %w", ErrNoPath, from, to, format.ErrUnsupportedVersion)
	}
	if to < from {
		return nil, fmt.Errorf("%w from %s to %s: downgrades are rollbacks (switch the pointer back), not migrations", ErrNoPath, from, to)
	}
	var path []Migration
	for v := from; v < to; v++ {
		m, ok := registry[v]
		if !ok {
			return nil, fmt.Errorf("%w from %s to %s: nothing registered from %s", ErrNoPath, from, to, v)
		}
		path = append(path, m)
	}
	return path, nil
}

// ExpectCounts applies every step's count mapping along the path.
func ExpectCounts(path []Migration, in map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(in))
	for k, v := range in {
		out[k] = v
	}
	for _, m := range path {
		out = m.ExpectCounts(out)
	}
	return out
}

// Versions lists the registered steps as "v1→v2", for help texts.
func Versions() []string {
	var s []string
	for _, m := range registry {
		s = append(s, fmt.Sprintf("%s→%s", m.From, m.To))
	}
	sort.Strings(s)
	return s
}
