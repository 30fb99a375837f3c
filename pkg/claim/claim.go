// Package claim owns the claims kept beside a catalog pointer: one JSON
// object per catalog directory a run of that pointer creates, under
// <pointer>.claims/<migration-id>.json (pkg/layout names it), written with
// If-None-Match BEFORE the run writes anything there:
//
//	s3://bucket/rocklake/CURRENT.claims/m-20261203T101500Z-1a2b3c4d.json
//
// A claim names the pointer, the directory (a Strategy B target, an
// in-place migration's way back, a migration's read replica, a
// supervisor's reader copy), its kind and the run. It is the
// only proof the drift check and cleanup accept that a directory is this
// pointer's own: a name that merely looks like v<N>-<id> proves nothing (it
// may be another pointer's live catalog, or an operator's backup), so
// without a claim nothing is reported as a leftover or deleted.
//
// A way back's claim also records what later happened to it: the pointer
// version that named the migrated catalog (Named), a restore of the catalog
// from it (Restored), and the run that recorded it is no longer needed
// (Released). Cleanup deletes a way back only once it is Released.
package claim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/layout"
)

// Kind is what a claimed directory is.
type Kind string

const (
	// KindTarget is a Strategy B migration's new catalog (<dir>/v<to>-<id>).
	KindTarget Kind = "target"
	// KindWayBack is an in-place migration's copy of the catalog as it was
	// (<dir>/v<from>-<id>).
	KindWayBack Kind = "way-back"
	// KindReplica is the read replica of a migration's frozen source
	// (<dir>/replica-<id>), claimed by Check as ReplicaID(id).
	KindReplica Kind = "replica"
	// KindReaderCopy is a copy of the catalog a supervisor serves reads
	// from (<dir>/reader-<supervisor>-<n>), claimed under its directory's
	// name; CreatedBy names the supervisor (pkg/presence).
	KindReaderCopy Kind = "reader-copy"
)

// ReplicaID is the id the claim of migration id's read replica is kept
// under (its directory's name), beside the target's claim.
func ReplicaID(id string) string { return "replica-" + id }

// Claim is one claimed directory. Times are UTC.
type Claim struct {
	Pointer string `json:"pointer"`
	Catalog string `json:"catalog"`
	Kind    Kind   `json:"kind"`
	// Source is the catalog the run migrated: a way back is a copy of it.
	Source      string    `json:"source,omitempty"`
	MigrationID string    `json:"migration_id"`
	Created     time.Time `json:"created"`
	CreatedBy   string    `json:"created_by,omitempty"`
	// Named: a pointer version named the migrated catalog (a way back's
	// in-place flip), recorded so that it survives the pointer's history.
	Named *Event `json:"named,omitempty"`
	// Restored: the catalog was restored in place from this way back.
	Restored *Event `json:"restored,omitempty"`
	// Released: a later run recorded that the way back is no longer
	// needed; only then may cleanup delete it.
	Released *Event `json:"released,omitempty"`
	// Landed: what an in-place batch left in the catalog, recorded as soon
	// as it landed, so that a restore after the run died can prove the
	// catalog took no commits since (pkg/inplace.Marks).
	Landed *Landed `json:"landed,omitempty"`
}

// Landed is pkg/inplace.Marks as a claim keeps it.
type Landed struct {
	WriterEpoch    uint64 `json:"writer_epoch"`
	NextSnapshotID uint64 `json:"next_snapshot_id"`
	Engine         string `json:"engine"`
	// PinCheckpoint and PinWALEnd are the catalog's view right after the
	// batch (the flip's pin): a restore carries what it took since.
	PinCheckpoint string `json:"pin_checkpoint,omitempty"`
	PinWALEnd     uint64 `json:"pin_wal_end,omitempty"`
}

// Event is something a run recorded on a claim.
type Event struct {
	// By is the run (a migration, restore or cleanup id) that recorded it.
	By string    `json:"by"`
	At time.Time `json:"at"`
	// PointerVersionID is the pointer version concerned, if any.
	PointerVersionID string `json:"pointer_version_id,omitempty"`
	Note             string `json:"note,omitempty"`
}

var (
	// ErrBadClaim: a claim without a pointer, catalog, kind, migration id
	// or creation time, or one that cannot be decoded.
	ErrBadClaim = errors.New("claim: bad claim")
	// ErrNoClaim: no claim of that migration.
	ErrNoClaim = errors.New("claim: no such claim")
	// ErrTaken: another claim holds the migration's key (never
	// overwritten).
	ErrTaken = errname.New("claim", "ClaimTaken", "taken")
)

func (c Claim) validate() error {
	switch {
	case c.MigrationID == "" || strings.ContainsAny(c.MigrationID, "/\\ ") || strings.HasPrefix(c.MigrationID, "."):
		return fmt.Errorf("%w: migration id %q", ErrBadClaim, c.MigrationID)
	case c.Pointer == "" || c.Catalog == "":
		return fmt.Errorf("%w: migration %s: no pointer or catalog", ErrBadClaim, c.MigrationID)
	case c.Kind != KindTarget && c.Kind != KindWayBack && c.Kind != KindReplica && c.Kind != KindReaderCopy:
		return fmt.Errorf("%w: migration %s: kind %q", ErrBadClaim, c.MigrationID, c.Kind)
	case c.Created.IsZero():
		return fmt.Errorf("%w: migration %s: no creation time", ErrBadClaim, c.MigrationID)
	}
	return nil
}

// same reports whether two claims claim the same thing.
func (c Claim) same(o Claim) bool {
	return c.Pointer == o.Pointer && c.MigrationID == o.MigrationID && c.Kind == o.Kind &&
		strings.TrimSuffix(c.Catalog, "/") == strings.TrimSuffix(o.Catalog, "/")
}

// Create writes c, never over another claim. A claim of the same thing
// already there (a retried step) is left as it is: created is then false.
// Any other is ErrTaken.
func Create(ctx context.Context, store *blob.Store, c Claim) (created bool, err error) {
	c.Catalog = strings.TrimSuffix(c.Catalog, "/")
	c.Created = c.Created.UTC()
	if err := c.validate(); err != nil {
		return false, err
	}
	url := layout.Claim(c.Pointer, c.MigrationID)
	body, err := json.Marshal(c)
	if err != nil {
		return false, fmt.Errorf("claim: encode %s: %w", url, err)
	}
	_, err = store.PutIfAbsent(ctx, url, body)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, blob.ErrPreconditionFailed) {
		return false, fmt.Errorf("claim: write %s: %w", url, err)
	}
	had, _, rerr := read(ctx, store, url)
	if rerr != nil {
		return false, fmt.Errorf("%w: %s: %w", ErrTaken, url, rerr)
	}
	if !had.same(c) {
		return false, fmt.Errorf("%w: %s claims %s (%s) for pointer %s", ErrTaken, url, had.Catalog, had.Kind, had.Pointer)
	}
	return false, nil
}

func read(ctx context.Context, store *blob.Store, url string) (Claim, blob.Info, error) {
	b, info, err := store.Get(ctx, url)
	if errors.Is(err, blob.ErrNotFound) {
		return Claim{}, info, fmt.Errorf("%w: %s: %w", ErrNoClaim, url, err)
	}
	if err != nil {
		return Claim{}, info, fmt.Errorf("claim: read %s: %w", url, err)
	}
	var c Claim
	if err := json.Unmarshal(b, &c); err != nil {
		return Claim{}, info, fmt.Errorf("%w: %s: %w", ErrBadClaim, url, err)
	}
	if err := c.validate(); err != nil {
		return Claim{}, info, fmt.Errorf("%s: %w", url, err)
	}
	return c, info, nil
}

// Read reads the claim of migration id of the pointer at pointerURL
// (ErrNoClaim if there is none).
func Read(ctx context.Context, store *blob.Store, pointerURL, id string) (Claim, error) {
	c, _, err := read(ctx, store, layout.Claim(pointerURL, id))
	return c, err
}

// Confirm reads the claim kept under id and checks that it claims catalog
// as kind for the pointer: what a delete of catalog checks first. No claim
// is ErrNoClaim; one that claims anything else is ErrTaken.
func Confirm(ctx context.Context, store *blob.Store, pointerURL, id string, kind Kind, catalog string) error {
	c, err := Read(ctx, store, pointerURL, id)
	if err != nil {
		return err
	}
	if c.Pointer != pointerURL || c.Kind != kind || strings.TrimSuffix(c.Catalog, "/") != strings.TrimSuffix(catalog, "/") {
		return fmt.Errorf("%w: %s claims %s (%s) for pointer %s, not %s (%s) for %s", ErrTaken, layout.Claim(pointerURL, id), c.Catalog, c.Kind, c.Pointer, catalog, kind, pointerURL)
	}
	return nil
}

// updateAttempts bounds Update's retries when another writer changed the
// claim in between.
const updateAttempts = 5

// Update applies fn to the claim of migration id and writes it back,
// conditional on the version it read, retrying a few times if that version
// changed. fn may only record events: what is claimed stays.
func Update(ctx context.Context, store *blob.Store, pointerURL, id string, fn func(*Claim)) (Claim, error) {
	url := layout.Claim(pointerURL, id)
	for attempt := 1; ; attempt++ {
		c, info, err := read(ctx, store, url)
		if err != nil {
			return Claim{}, err
		}
		was := c
		fn(&c)
		if !c.same(was) || !c.Created.Equal(was.Created) {
			return Claim{}, fmt.Errorf("%w: an update may not change what %s claims", ErrBadClaim, url)
		}
		body, err := json.Marshal(c)
		if err != nil {
			return Claim{}, fmt.Errorf("claim: encode %s: %w", url, err)
		}
		_, err = store.PutIfMatch(ctx, url, body, info.ETag)
		if err == nil {
			return c, nil
		}
		if !errors.Is(err, blob.ErrPreconditionFailed) || attempt == updateAttempts {
			return Claim{}, fmt.Errorf("claim: update %s: %w", url, err)
		}
	}
}

// Delete removes the claim of migration id: once what it claimed is gone,
// it proves nothing any more. A missing claim is not an error.
func Delete(ctx context.Context, store *blob.Store, pointerURL, id string) error {
	if err := store.Delete(ctx, layout.Claim(pointerURL, id)); err != nil {
		return fmt.Errorf("claim: delete %s: %w", layout.Claim(pointerURL, id), err)
	}
	return nil
}

// Entry is one listed claim, or why it could not be read (it then proves
// nothing, and nothing is deleted on its account).
type Entry struct {
	URL string `json:"url"`
	Claim
	ReadError string `json:"read_error,omitempty"`
}

// List reads every claim of the pointer at pointerURL, in key order.
func List(ctx context.Context, store *blob.Store, pointerURL string) ([]Entry, error) {
	infos, err := store.List(ctx, layout.ClaimsDir(pointerURL))
	if err != nil {
		return nil, fmt.Errorf("claim: list %s: %w", layout.ClaimsDir(pointerURL), err)
	}
	out := make([]Entry, 0, len(infos))
	for _, in := range infos {
		if !layout.IsRecord(in.URL) {
			continue
		}
		c, _, err := read(ctx, store, in.URL)
		e := Entry{URL: in.URL, Claim: c}
		if err != nil {
			e.ReadError = err.Error()
		}
		out = append(out, e)
	}
	return out, nil
}

// Neighbours lists the other pointers this one can find: those beside it
// (in the same directory) that keep claims or run records there
// (<other>.claims/, <other>.history/). Pointers elsewhere are not found;
// callers that must not touch another pointer's catalogs check these and
// rely on claims for the rest.
func Neighbours(ctx context.Context, store *blob.Store, pointerURL string) ([]string, error) {
	dir, ok := layout.PointerDir(pointerURL)
	if !ok {
		return nil, fmt.Errorf("claim: pointer URL %q has no directory", pointerURL)
	}
	dirs, err := store.ListDirs(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("claim: list %s: %w", dir, err)
	}
	var out []string
	for _, d := range dirs {
		if base, ok := layout.SidecarOwner(path.Base(strings.TrimSuffix(d, "/"))); ok {
			if p := dir + base; p != pointerURL && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
