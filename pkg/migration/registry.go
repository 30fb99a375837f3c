package migration

import (
	"errors"
	"fmt"
	"sort"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// Conversion turns records of format From into records of format To, an
// adjacent version: From+1 on the way up, From-1 on the way down.
type Conversion struct {
	From, To format.Version
	// Apply transforms one record of a known tag. It returns the records that
	// replace it (usually one).
	Apply func(rec ndjson.Record) ([]ndjson.Record, error)
	// ExpectCounts maps per-table counts of a From catalog to the counts its
	// To catalog must have; Verify compares against them.
	ExpectCounts func(in map[string]uint64) map[string]uint64
}

// ErrNoPath means no chain of registered conversions leads from one version
// to the other.
var ErrNoPath = errors.New("migration: no migration path")

// step names a registered migration by its two versions: each adjacent pair
// has at most one step up and one step down.
type step struct{ from, to format.Version }

var registry = map[step]Conversion{}

// Register adds a conversion; it panics on a duplicate or a non-adjacent
// pair, since both are programming errors found at init.
func Register(m Conversion) {
	if m.To != m.From+1 && m.From != m.To+1 {
		panic(fmt.Sprintf("migration: %s→%s is not between adjacent versions", m.From, m.To))
	}
	s := step{m.From, m.To}
	if _, dup := registry[s]; dup {
		panic(fmt.Sprintf("migration: %s→%s registered twice", m.From, m.To))
	}
	registry[s] = m
}

// Path returns the conversions that lead from one version to another, in
// order: steps up for an upgrade, steps down for a downgrade (a rollback
// carrying keys written after a flip back, or `migrate --to` an older
// format). from == to gives an empty path (a plain copy).
func Path(from, to format.Version) ([]Conversion, error) {
	if !format.Supported(from) || !format.Supported(to) {
		return nil, fmt.Errorf("%w from %s to %s: %w", ErrNoPath, from, to, format.ErrUnsupportedVersion)
	}
	var path []Conversion
	for v := from; v != to; {
		next := v + 1
		if to < from {
			next = v - 1
		}
		m, ok := registry[step{v, next}]
		if !ok {
			return nil, fmt.Errorf("%w from %s to %s: no step from %s to %s is registered", ErrNoPath, from, to, v, next)
		}
		path = append(path, m)
		v = next
	}
	return path, nil
}

// ExpectCounts applies every step's count mapping along the path.
func ExpectCounts(path []Conversion, in map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(in))
	for k, v := range in {
		out[k] = v
	}
	for _, m := range path {
		out = m.ExpectCounts(out)
	}
	return out
}

// Versions lists the registered steps, up and down, as "v1→v2" and "v2→v1",
// for help texts.
func Versions() []string {
	var s []string
	for _, m := range registry {
		s = append(s, fmt.Sprintf("%s→%s", m.From, m.To))
	}
	sort.Strings(s)
	return s
}
