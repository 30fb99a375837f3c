package workflow

import (
	"context"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/catalog"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	"github.com/rocklake/rocklake-migrate/pkg/shard"
)

// VerifyOutput is what Verify found.
type VerifyOutput struct {
	runstate.Migration
	Counts map[string]uint64 `json:"counts"`
	Digest string            `json:"digest"`
	// Carried and Dropped count the records of unknown tags the transforms
	// carried or dropped, by tag ("tag 0xNN"), an online run's catch-up
	// rounds' included (each change they carried or dropped): a drop is
	// never silent.
	Carried map[string]uint64 `json:"carried_unknown,omitempty"`
	Dropped map[string]uint64 `json:"dropped_unknown,omitempty"`
}

// resultReads is how many of the shards' result objects a step reads at
// once: each is a small GET, so the round trips, not the bytes, are the
// time.
const resultReads = 16

// Verify rescans the new catalog: its per-table counts and digest must equal
// what the transforms wrote, and its version the target. An online run's,
// verified whole before its fence, is checked in the keys changed since
// (verifyOnline).
func Verify(ctx context.Context, env runstate.Env, m runstate.Migration) (VerifyOutput, error) {
	if err := lock.Confirm(ctx, env.Store, m.Pointer, m.MigrationID); err != nil {
		return VerifyOutput{Migration: m}, err
	}
	p, err := runstate.ReadPlan(ctx, env, m.MigrationID)
	if err != nil {
		return VerifyOutput{Migration: m}, err
	}
	st := env.StagingOf(m.MigrationID)
	c, err := catalog.Open(ctx, m.Target, catalog.Options{Expect: m.To, Store: env.SlateDB})
	if err != nil {
		return VerifyOutput{Migration: m}, err
	}
	defer c.Close()
	// The transforms' results (one small object per shard, each a round
	// trip to S3) are read while the catalog is scanned. An online run's
	// whole target was verified before its fence (VerifyCatchUp): inside
	// the write freeze only the change since is checked.
	var got, want, changed ndjson.Digest
	var carried, dropped map[string]uint64
	err = shard.ForEach(ctx, 2, 2, func(ctx context.Context, part int) error {
		var err error
		switch {
		case part == 1 && m.CopiesOnline():
			changed, _, err = verifyOnline(ctx, env, m, p)
			return err
		case part == 1:
			got, err = shard.DigestCatalog(ctx, c, env.Progress.Verify)
			return err
		}
		if want, carried, dropped, err = transformsDigest(ctx, env, m, len(p.Ranges)); err != nil {
			return err
		}
		var records uint64
		for _, n := range want.Counts() {
			records += n
		}
		env.Progress.Verify.SetRecordsTotal(records)
		return nil
	})
	if err != nil {
		return VerifyOutput{Migration: m}, err
	}
	if m.CopiesOnline() {
		got, want = changed, changed
		// The rounds' unknown tags too: a drop is never silent.
		for n := 1; n <= m.Round; n++ {
			r, err := runstate.ReadRound(ctx, env, m, n)
			if err != nil {
				return VerifyOutput{Migration: m}, err
			}
			for t, k := range r.Result.Carried {
				carried[t] += k
			}
			for t, k := range r.Result.Dropped {
				dropped[t] += k
			}
		}
	}
	cmp := shard.Compare(got, want)
	out := VerifyOutput{Migration: m, Counts: got.Counts(), Digest: got.Sum()}
	if len(carried) > 0 {
		out.Carried = carried
	}
	if len(dropped) > 0 {
		out.Dropped = dropped
	}
	if err := env.Store.PutJSON(ctx, st.VerifyResult(), cmp); err != nil {
		return out, err
	}
	if !cmp.Match {
		return out, fmt.Errorf("%w: %s: %v", shard.ErrMismatch, m.Target, cmp.Diff)
	}
	return out, nil
}

// transformsDigest merges the digests of what the transforms of m's n
// shards wrote, and counts the records of unknown tags they carried or
// dropped, by tag.
func transformsDigest(ctx context.Context, env runstate.Env, m runstate.Migration, n int) (d ndjson.Digest, carried, dropped map[string]uint64, err error) {
	st := env.StagingOf(m.MigrationID)
	results := make([]runstate.ShardResult, n)
	err = shard.ForEach(ctx, n, resultReads, func(ctx context.Context, i int) error {
		return env.Store.GetJSON(ctx, st.TransformResult(i), &results[i])
	})
	if err != nil {
		return d, nil, nil, err
	}
	carried, dropped = map[string]uint64{}, map[string]uint64{}
	for _, r := range results {
		d.Merge(r.Digest)
		for t, n := range r.Carried {
			carried[t.String()] += n
		}
		for t, n := range r.Dropped {
			dropped[t.String()] += n
		}
	}
	return d, carried, dropped, nil
}
