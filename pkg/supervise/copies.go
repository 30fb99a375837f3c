package supervise

import (
	"context"
	"fmt"
	"path"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// A supervisor's reader copies. RockLake's reader mode opens its catalog as
// a SlateDB writer, which fences the catalog's writer: a reader beside a
// writer, or on a source a migration is about to fence, must serve a copy.
// A copy is a view of the catalog (a checkpoint, and the WAL its writer
// wrote past it: every commit acknowledged when it was taken) copied beside
// it by the store (S3 CopyObject), which fences nothing; the checkpoint is
// dropped once copied.

// copyBudget bounds one copy: a follower's at a fence (the holder waits for
// it), a reader's refresh.
const copyBudget = 20 * time.Second

// copyCheckpointLifetime: a supervisor that dies mid-copy leaves a
// checkpoint that expires by itself.
const copyCheckpointLifetime = 10 * time.Minute

// makeCopy copies catalog as it is now to a fresh place beside it
// (layout.ReaderCopy), within copyBudget and before by (if set).
func (s *Supervisor) makeCopy(ctx context.Context, catalog string, by time.Time) (string, error) {
	s.copies++
	url, err := layout.ReaderCopy(catalog, s.opts.ID, s.copies)
	if err != nil {
		return "", fmt.Errorf("supervise: no place for a copy of %s: %w", catalog, err)
	}
	budget := copyBudget
	if !by.IsZero() {
		budget = min(budget, time.Until(by))
	}
	if budget <= 0 {
		return "", fmt.Errorf("supervise: no time left to copy %s before %s", catalog, by.UTC().Format(time.RFC3339))
	}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	start := time.Now()
	// Claimed before anything is written there: what a supervisor that
	// died leaves, drift finds and cleanup removes by this claim.
	if _, err := claim.Create(cctx, s.opts.Store, claim.Claim{Pointer: s.opts.Pointer, Catalog: url, Kind: claim.KindReaderCopy, Source: catalog,
		MigrationID: path.Base(url), Created: time.Now(), CreatedBy: s.opts.ID}); err != nil {
		return "", fmt.Errorf("supervise: claim the copy %s: %w", url, err)
	}
	v, err := slatedb.TakeView(cctx, catalog, slatedb.CheckpointOptions{Lifetime: copyCheckpointLifetime, Name: layout.ReaderCheckpoint(s.opts.ID)}, slatedb.Options{})
	if err != nil {
		return "", fmt.Errorf("supervise: a view of %s to copy: %w", catalog, err)
	}
	c, err := slatedb.CopyView(cctx, catalog, v, url, slatedb.Options{})
	// The checkpoint goes before anything else happens: a holder that
	// fences the catalog after this supervisor acknowledged must find it
	// as it left it.
	dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), readTimeout)
	derr := slatedb.DeleteCheckpoint(dctx, catalog, v.Checkpoint, slatedb.Options{})
	dcancel()
	if derr != nil {
		s.report(Health{Event: "copy-checkpoint-left", Catalog: catalog, Reason: fmt.Sprintf("checkpoint %s (expires in %s): %v", v.Checkpoint, copyCheckpointLifetime, derr)})
	}
	if err != nil {
		s.dropCopy(ctx, url)
		return "", fmt.Errorf("supervise: copy %s to %s: %w", catalog, url, err)
	}
	s.report(Health{Event: "copied", Catalog: url, Seconds: time.Since(start).Seconds(),
		Reason: fmt.Sprintf("%d objects, %d bytes of %s", c.Objects, c.Bytes, catalog)})
	return url, nil
}

// dropCopy deletes a copy no server uses any more, once its claim says it
// is this supervisor's, then the claim.
func (s *Supervisor) dropCopy(ctx context.Context, url string) {
	if url == "" {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	id := path.Base(url)
	err := claim.Confirm(dctx, s.opts.Store, s.opts.Pointer, id, claim.KindReaderCopy, url)
	if err == nil {
		_, err = s.opts.Store.DeletePrefix(dctx, url+"/")
	}
	if err == nil {
		err = claim.Delete(dctx, s.opts.Store, s.opts.Pointer, id)
	}
	if err != nil {
		s.report(Health{Event: "copy-left", Catalog: url, Reason: err.Error()})
	}
}
