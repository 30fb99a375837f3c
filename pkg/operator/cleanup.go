package operator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/lock"
	"github.com/rocklake/rocklake-migrate/pkg/runstate"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/claim"
	"github.com/rocklake/rocklake-migrate/pkg/drift"
	"github.com/rocklake/rocklake-migrate/pkg/history"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
	"github.com/rocklake/rocklake-migrate/pkg/slatedb"
)

// CleanupInput names the pointer whose leftovers to remove.
type CleanupInput struct {
	Pointer string `json:"pointer"`
	// Apply deletes. Without it cleanup is a dry run: it says what it would
	// delete and writes nothing, not even the lock.
	Apply bool `json:"apply,omitempty"`
	// Trigger says who ran it, for its record ("cli:<user>").
	Trigger string `json:"trigger,omitempty"`
	// ReleaseWayBack records, before anything else, that the way back of
	// this in-place migration is no longer needed (releaseWayBack); a
	// dry run only checks that it could be.
	ReleaseWayBack string `json:"release_way_back,omitempty"`
}

// What cleanup did with a leftover.
const (
	CleanupWouldDelete = "would delete"
	CleanupDeleted     = "deleted"
	CleanupKept        = "kept"
)

// CleanupItem is one leftover the drift check found and what cleanup did
// with it.
type CleanupItem struct {
	drift.Finding
	Action string `json:"action"`
	// Reason says why the re-check kept it.
	Reason string `json:"reason,omitempty"`
	// Deleted counts the objects (or the checkpoint) deleted.
	Deleted int `json:"deleted,omitempty"`
}

// CleanupOutput is what cleanup found and did.
type CleanupOutput struct {
	Pointer string `json:"pointer"`
	Apply   bool   `json:"apply"`
	// LockID is the id cleanup held the pointer's lock under (apply only).
	LockID string        `json:"lock_id,omitempty"`
	Items  []CleanupItem `json:"items"`
	// Report is the drift check cleanup acted on.
	Report drift.Report `json:"report"`
	// Released is the way back ReleaseWayBack released (or, in a dry run,
	// would release).
	Released string `json:"released,omitempty"`
	// HistoryError says why the run's record could not be written.
	HistoryError string `json:"history_error,omitempty"`
}

// Cleanup removes what migrations left behind: the drift check's
// checkpoints, staging prefixes, targets this pointer's runs claimed and
// never flipped to, and way backs a run released (drift.Kind.Removable); a
// way back not released is listed as kept.
// It fails closed. With Apply it holds the pointer's lock for its whole run,
// so no migration starts while it deletes (MigrationInProgress if one holds
// it; released by overwrite, as migrations release it); a dry run only reads
// the lock and refuses the same way. It runs the drift check itself, under
// the lock, refuses everything if the check could not decide, and re-checks
// each item right before deleting it against the pointer and its history as
// they are then: nothing the pointer names or ever named (nor a target whose
// migration decided to flip), nothing of the current or previous pointer's
// migration, never decisions/, and a directory only if this pointer's claim
// still names it and no pointer found beside this one names or claims it
// (namedElsewhere). It stops at the first failure; Items says
// what was done until then.
//
// A cleanup that applies is recorded beside the pointer (pkg/history) with
// what it deleted and kept; a dry run stays a pure read and is not.
func Cleanup(ctx context.Context, env runstate.Env, in CleanupInput) (CleanupOutput, error) {
	start := time.Now()
	out, err := cleanup(ctx, env, in)
	if in.Pointer == "" || !in.Apply || out.LockID == "" {
		return out, err
	}
	id := out.LockID
	rec := history.Record{ID: id, Kind: history.KindCleanup, Trigger: runstate.Trigger(in.Trigger), Pointer: in.Pointer, Start: start, State: "Cleanup"}
	counts := map[string]int{}
	for _, it := range out.Items {
		counts[it.Action]++
	}
	if out.Released != "" {
		rec.Notes = append(rec.Notes, "released way back: "+out.Released)
	}
	for _, a := range []string{CleanupDeleted, CleanupKept} {
		if counts[a] > 0 {
			rec.Notes = append(rec.Notes, fmt.Sprintf("%s: %d", a, counts[a]))
		}
	}
	out.HistoryError = runstate.RecordOneStateRun(ctx, env, rec, err, history.Succeeded)
	return out, err
}

func cleanup(ctx context.Context, env runstate.Env, in CleanupInput) (out CleanupOutput, err error) {
	out = CleanupOutput{Pointer: in.Pointer, Apply: in.Apply, Items: []CleanupItem{}}
	if in.Pointer == "" {
		return out, errors.New("workflow: cleanup: no pointer URL")
	}
	// Without a valid pointer nothing can be told apart; read before the
	// lock, so that a mistyped URL leaves no lock object behind.
	p, _, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return out, fmt.Errorf("%w: %w; nothing was touched", ErrCleanupUndecided, err)
	}
	now := time.Now()
	if in.Apply {
		// LockID is set once the lock is held: a refused cleanup touched
		// nothing and leaves no record.
		held, herr := runstate.HoldLock(ctx, env, in.Pointer, "cleanup-"+runstate.NewMigrationID(), history.KindCleanup)
		if herr != nil {
			return out, herr
		}
		out.LockID = held.MigrationID
		defer func() {
			// On a fresh context: a cancelled cleanup still frees the lock.
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			err = errors.Join(err, lock.Release(rctx, env.Store, held.Pointer, held.MigrationID))
		}()
	} else {
		active, unknown, _ := lock.Holder(ctx, env.Store, in.Pointer, now)
		if unknown != "" {
			return out, fmt.Errorf("%w: the lock %s cannot be read: %s; nothing was touched", ErrCleanupUndecided, layout.Lock(in.Pointer), unknown)
		}
		if active != "" {
			return out, fmt.Errorf("%w: migration %s holds %s: cleanup refuses while it runs; nothing was touched", lock.ErrInProgress, active, layout.Lock(in.Pointer))
		}
	}
	if in.ReleaseWayBack != "" {
		if out.Released, err = releaseWayBack(ctx, env, in, out.LockID); err != nil {
			return out, err
		}
	}
	// Cleanup only looks for leftovers: the format it expects is the one
	// the pointer says, so no version finding gets in the way.
	out.Report, err = drift.Find(ctx, env.Store, drift.Options{Pointer: in.Pointer, Expect: p.FormatVersion, Staging: env.Staging, Active: out.LockID, Store: env.SlateDB})
	if err != nil {
		return out, fmt.Errorf("workflow: cleanup: %w", err)
	}
	for _, f := range out.Report.Findings {
		switch f.Kind {
		case drift.KindUndecided, drift.KindPointerMissing, drift.KindBadPointer:
			return out, fmt.Errorf("%w: %s: %s; nothing was touched", ErrCleanupUndecided, f.Kind, f.Message)
		}
	}
	for _, f := range out.Report.Findings {
		if f.Kind == drift.KindWayBackKept {
			// Listed, so that nobody mistakes its absence for a deletion.
			out.Items = append(out.Items, CleanupItem{Finding: f, Action: CleanupKept,
				Reason: "a way back is kept until a pointer version named the migrated catalog and a later run recorded it unneeded"})
			continue
		}
		if !f.Kind.Removable() {
			continue
		}
		item := CleanupItem{Finding: f}
		item.Reason, err = recheck(ctx, env, in, out.LockID, f)
		if err != nil {
			return out, err
		}
		switch {
		case item.Reason != "":
			item.Action = CleanupKept
		case !in.Apply:
			item.Action = CleanupWouldDelete
		default:
			if item.Deleted, err = remove(ctx, env, in.Pointer, f); err != nil {
				return out, fmt.Errorf("workflow: cleanup: %s %s: %w", f.Kind, subject(f), err)
			}
			item.Action = CleanupDeleted
		}
		out.Items = append(out.Items, item)
	}
	return out, nil
}

// recheck reads the lock (when applying), the pointer and its history again
// and says why f must be kept, "" if it may go. An error stops cleanup.
func recheck(ctx context.Context, env runstate.Env, in CleanupInput, lockID string, f drift.Finding) (string, error) {
	if in.Apply {
		held, _, err := lock.Get(ctx, env.Store, layout.Lock(in.Pointer))
		if err != nil {
			return "", fmt.Errorf("workflow: cleanup: %w", err)
		}
		if held.MigrationID != lockID {
			return "", fmt.Errorf("%w: the lock %s is no longer cleanup's (%s holds it): cleanup stopped", lock.ErrInProgress, layout.Lock(in.Pointer), held.MigrationID)
		}
	}
	cur, _, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return "", fmt.Errorf("%w: re-reading the pointer: %w; cleanup stopped", ErrCleanupUndecided, err)
	}
	hist, err := pointer.History(ctx, env.Store, in.Pointer)
	if err != nil {
		return "", fmt.Errorf("%w: re-reading the pointer's history: %w; cleanup stopped", ErrCleanupUndecided, err)
	}
	named := pointerNames(cur)
	for _, v := range hist {
		switch {
		case v.DeleteMarker:
		case v.Pointer == nil:
			return "", fmt.Errorf("%w: version %s of the pointer is not a valid pointer (%s); cleanup stopped", ErrCleanupUndecided, v.VersionID, v.Problem)
		default:
			named = append(named, pointerNames(*v.Pointer)...)
		}
	}
	isNamed := func(u string) bool {
		for _, n := range named {
			if n != "" && (n == u || strings.HasPrefix(n, u+"/")) {
				return true
			}
		}
		return false
	}
	inUse := f.MigrationID != "" && (f.MigrationID == cur.MigrationID || f.MigrationID == cur.PreviousMigrationID)
	switch f.Kind {
	case drift.KindLeftoverCheckpoint, drift.KindOrphanCheckpoint:
		if !isNamed(strings.TrimSuffix(f.Catalog, "/")) {
			return "no version of the pointer names its catalog now", nil
		}
	case drift.KindLeftoverStaging, drift.KindOrphanStaging:
		id := f.MigrationID
		switch {
		case inUse:
			return "it is the current or previous pointer's migration's", nil
		case id == "" || id == layout.DecisionsDir || strings.Contains(id, "/") || f.Prefix != env.StagingOf(id).Prefix():
			return "it is not one migration's staging directory", nil
		}
	case drift.KindOrphanReplica, drift.KindOrphanReaderCopy:
		return claimed(ctx, env, in.Pointer, f)
	case drift.KindUnclaimedTarget, drift.KindReleasedWayBack:
		u := strings.TrimSuffix(f.Catalog, "/")
		if why, err := claimed(ctx, env, in.Pointer, f); why != "" || err != nil {
			return why, err
		}
		if inUse || isNamed(u) {
			return "the pointer names it, or did", nil
		}
		if f.Kind == drift.KindUnclaimedTarget {
			// A version that named it may have expired from the history
			// (the pointer bucket's lifecycle): its migration's decision
			// still says.
			got, _, err := env.Store.Get(ctx, env.StagingOf(f.MigrationID).Decision())
			switch {
			case err == nil && string(got) == layout.DecisionFlip:
				return "its migration flipped the pointer to it once", nil
			case err != nil && !errors.Is(err, blob.ErrNotFound):
				return "", fmt.Errorf("workflow: cleanup: %w", err)
			}
		}
		return namedElsewhere(ctx, env, in.Pointer, u), nil
	default:
		return "cleanup does not remove " + string(f.Kind), nil
	}
	return "", nil
}

// remove deletes what f, a finding of the pointer at ptr, names and counts
// what it deleted.
func remove(ctx context.Context, env runstate.Env, ptr string, f drift.Finding) (int, error) {
	switch f.Kind {
	case drift.KindLeftoverCheckpoint, drift.KindOrphanCheckpoint:
		err := slatedb.DeleteCheckpoint(ctx, f.Catalog, f.CheckpointID, env.SlateDB)
		if errors.Is(err, slatedb.ErrCheckpointMissing) {
			return 0, nil
		}
		if err != nil {
			return 0, err
		}
		return 1, nil
	case drift.KindLeftoverStaging, drift.KindOrphanStaging:
		// A dead run's read replica is a finding of its own
		// (OrphanReplica, by its claim).
		return env.Store.DeletePrefix(ctx, f.Prefix)
	case drift.KindOrphanReplica, drift.KindOrphanReaderCopy:
		// No server on it (its run is over; its supervisor is gone), and
		// its claim was checked (refuse): the directory, then the claim.
		n, err := env.Store.DeletePrefix(ctx, strings.TrimSuffix(f.Catalog, "/")+"/")
		if err != nil {
			return n, err
		}
		return n, claim.Delete(ctx, env.Store, ptr, f.MigrationID)
	case drift.KindUnclaimedTarget, drift.KindReleasedWayBack:
		n, err := env.Store.DeletePrefix(ctx, strings.TrimSuffix(f.Catalog, "/")+"/")
		if err != nil {
			return n, err
		}
		// Last: until the directory is gone, its claim says whose it is.
		return n, claim.Delete(ctx, env.Store, ptr, f.MigrationID)
	}
	return 0, fmt.Errorf("cleanup does not remove %s", f.Kind)
}

// subject is what a removable finding names.
func subject(f drift.Finding) string {
	switch f.Kind {
	case drift.KindLeftoverCheckpoint, drift.KindOrphanCheckpoint:
		return fmt.Sprintf("checkpoint %s (%q) of %s", f.CheckpointID, f.CheckpointName, f.Catalog)
	case drift.KindLeftoverStaging, drift.KindOrphanStaging:
		return "staging " + f.Prefix
	}
	return f.Catalog
}

// Text renders the outcome for people.
func (o CleanupOutput) Text() string {
	var b strings.Builder
	mode := "dry run (nothing deleted; --apply deletes)"
	if o.Apply {
		mode = "applied, under lock " + o.LockID
	}
	fmt.Fprintf(&b, "cleanup of %s: %s\n", o.Pointer, mode)
	if o.Released != "" {
		verb := "would record"
		if o.Apply {
			verb = "recorded"
		}
		fmt.Fprintf(&b, "  %s the way back %s as no longer needed\n", verb, o.Released)
	}
	if len(o.Items) == 0 {
		b.WriteString("  nothing left over\n")
	}
	for _, it := range o.Items {
		fmt.Fprintf(&b, "  %s %s: %s", it.Action, it.Kind, subject(it.Finding))
		switch {
		case it.Reason != "":
			fmt.Fprintf(&b, " (%s)", it.Reason)
		case it.Action == CleanupDeleted && it.Kind != drift.KindLeftoverCheckpoint && it.Kind != drift.KindOrphanCheckpoint:
			fmt.Fprintf(&b, " (%d objects)", it.Deleted)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// pointerNames are the catalogs pointer p names: its catalog, the previous
// one and its in-place way back, without a trailing slash.
func pointerNames(p pointer.Pointer) []string {
	wb, _ := layout.WayBackOf(p)
	return []string{strings.TrimSuffix(p.Catalog, "/"), strings.TrimSuffix(p.PreviousCatalog, "/"), strings.TrimSuffix(wb, "/")}
}

// claimed says why the directory f names must be kept unless a claim of
// this pointer's run, read now, names it as f says ("" if one does).
func claimed(ctx context.Context, env runstate.Env, ptr string, f drift.Finding) (string, error) {
	cl, err := claim.Read(ctx, env.Store, ptr, f.MigrationID)
	switch {
	case errors.Is(err, claim.ErrNoClaim), errors.Is(err, claim.ErrBadClaim):
		return "no claim of this pointer's runs names it (" + err.Error() + ")", nil
	case err != nil:
		return "", fmt.Errorf("workflow: cleanup: %w", err)
	}
	want := map[drift.Kind]claim.Kind{drift.KindReleasedWayBack: claim.KindWayBack, drift.KindOrphanReplica: claim.KindReplica,
		drift.KindOrphanReaderCopy: claim.KindReaderCopy}[f.Kind]
	if want == "" {
		want = claim.KindTarget
	}
	switch {
	case cl.Pointer != ptr || strings.TrimSuffix(cl.Catalog, "/") != strings.TrimSuffix(f.Catalog, "/") || cl.Kind != want:
		return fmt.Sprintf("the claim of migration %s names %s (%s) of %s, not this %s", f.MigrationID, cl.Catalog, cl.Kind, cl.Pointer, want), nil
	case cl.Kind == claim.KindWayBack && cl.Released == nil:
		return "no run recorded the way back as no longer needed", nil
	case cl.Kind == claim.KindTarget && cl.Named != nil:
		return fmt.Sprintf("pointer version %s named it", cl.Named.PointerVersionID), nil
	}
	return "", nil
}

// namedElsewhere says why the directory at u must be kept because another
// pointer this one can find (claim.Neighbours) names it, or claims it, or
// because those pointers cannot be read ("" if none does). Pointers
// elsewhere cannot be found; for them, the claim is the proof.
func namedElsewhere(ctx context.Context, env runstate.Env, ptr, u string) string {
	others, err := claim.Neighbours(ctx, env.Store, ptr)
	if err != nil {
		return "the pointers beside this one cannot be listed (" + err.Error() + ")"
	}
	for _, o := range others {
		p, _, err := pointer.Read(ctx, env.Store, o)
		switch {
		case errors.Is(err, pointer.ErrPointerMissing):
		case err != nil:
			return fmt.Sprintf("pointer %s beside this one cannot be read (%v)", o, err)
		case slices.Contains(pointerNames(p), u):
			return "pointer " + o + " names it"
		}
		entries, err := claim.List(ctx, env.Store, o)
		if err != nil {
			return fmt.Sprintf("the claims of pointer %s cannot be read (%v)", o, err)
		}
		for _, e := range entries {
			if e.ReadError != "" {
				return fmt.Sprintf("a claim of pointer %s cannot be read (%s)", o, e.ReadError)
			}
			if strings.TrimSuffix(e.Catalog, "/") == u {
				return fmt.Sprintf("pointer %s's migration %s claims it", o, e.MigrationID)
			}
		}
	}
	return ""
}

// releaseWayBack records on the claim of in-place migration
// in.ReleaseWayBack's way back that it is no longer needed, as run runID:
// only a way back this pointer's run claimed, whose migrated catalog a
// pointer version named (so RockLake may have moved on from it), and that
// neither the current pointer nor its rollback leads to. Once released and
// named by no pointer version (the history keeps the versions that do), the
// drift check reports it as ReleasedWayBack, which cleanup deletes. A dry
// run writes nothing.
func releaseWayBack(ctx context.Context, env runstate.Env, in CleanupInput, runID string) (string, error) {
	id := in.ReleaseWayBack
	cl, err := claim.Read(ctx, env.Store, in.Pointer, id)
	if err != nil {
		return "", fmt.Errorf("%w: no way back of migration %s is claimed for %s: %w", ErrReleaseRefused, id, in.Pointer, err)
	}
	cur, _, err := pointer.Read(ctx, env.Store, in.Pointer)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrCleanupUndecided, err)
	}
	wb := strings.TrimSuffix(cl.Catalog, "/")
	switch {
	case cl.Kind != claim.KindWayBack || cl.Pointer != in.Pointer:
		return "", fmt.Errorf("%w: the claim of migration %s is of a %s, not of this pointer's way back", ErrReleaseRefused, id, cl.Kind)
	case cl.Named == nil:
		return "", fmt.Errorf("%w: no pointer version named the catalog migration %s made, so its way back %s is the only catalog as it was (restore brings it back)", ErrReleaseRefused, id, wb)
	case slices.Contains(pointerNames(cur), wb) || cur.MigrationID == id:
		return "", fmt.Errorf("%w: the current pointer (migration %s) names %s or rolls back to it", ErrReleaseRefused, cur.MigrationID, wb)
	}
	if cl.Released != nil || !in.Apply {
		return wb, nil
	}
	_, err = claim.Update(ctx, env.Store, in.Pointer, id, func(c *claim.Claim) {
		c.Released = &claim.Event{By: runID, At: time.Now().UTC(), Note: "released by cleanup --release-way-back"}
	})
	if err != nil {
		return "", fmt.Errorf("workflow: cleanup: release the way back %s: %w", wb, err)
	}
	return wb, nil
}
