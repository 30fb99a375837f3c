package seed

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// Options describe the catalog to seed.
type Options struct {
	// Rows is the number of rows, counter and system keys not included.
	Rows int
	// Seed selects the content: the same seed (and Rows and Version) gives
	// the same keys and values.
	Seed int64
	// Version is the catalog format; 0 means format.V1.
	Version format.Version
	// Store tunes SlateDB's object-store access.
	Store slatedb.Options
}

// Result is what Seed wrote.
type Result struct {
	// Rows per tag name, for every tag but counters and system keys.
	Rows map[string]uint64
	// Counters as the initialisation batch set them.
	Counters map[string]uint64
}

// Seed writes a new catalog at url, which must hold no key (see
// catalog.NewInitializer). The rows go first, in batches, and the system and
// counter keys with the format version in one final batch: a seed that dies
// midway leaves a location that no binary opens and that Seed refuses until
// it is deleted.
func Seed(ctx context.Context, url string, opts Options) (*Result, error) {
	v := opts.Version
	if v == 0 {
		v = format.V1
	}
	if opts.Rows < 0 || opts.Rows > maxRows {
		return nil, fmt.Errorf("seed: rows %d out of range [0, %d]", opts.Rows, maxRows)
	}
	in, err := catalog.NewInitializer(ctx, url, v, opts.Store)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	m := newModel(opts.Rows, opts.Seed)
	m.plan()
	e := &emitter{v: v, in: in, seed: uint64(opts.Seed), rng: rand.New(rand.NewPCG(uint64(opts.Seed), 0x64657461696c73))} // "details"
	if err := e.emit(ctx, m); err != nil {
		return nil, err
	}
	res := &Result{Rows: map[string]uint64{}, Counters: map[string]uint64{}}
	for i, name := range format.CounterNames() {
		res.Counters[name] = m.next[i]
	}
	if err := in.Finalize(ctx, res.Counters); err != nil {
		return nil, err
	}
	if err := in.Close(); err != nil {
		return nil, err
	}
	for _, t := range format.KnownTags() {
		if t != format.TagCounter && t != format.TagSystem {
			res.Rows[t.Name()] = uint64(m.rows[t])
		}
	}
	return res, nil
}
