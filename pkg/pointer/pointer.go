package pointer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// MaxSize bounds a pointer object: a real one is a few hundred bytes, so
// anything bigger is not a pointer.
const MaxSize = 64 << 10

// Pointer is the content of the pointer object.
type Pointer struct {
	// Catalog is the URL of the catalog RockLake serves (s3://bucket/prefix
	// or file:///path, the SlateDB database root).
	Catalog string
	// FormatVersion is the catalog's format, as the writer of the pointer
	// saw it. The catalog's own catalog-format-version key is authoritative;
	// the drift check reports a disagreement.
	FormatVersion format.Version
	// MigrationID is the migration that wrote this pointer (empty or e.g.
	// "initial" for the first one).
	MigrationID string
	// PreviousCatalog and PreviousMigrationID are the pointer this one
	// replaced; empty for the first pointer. Rollback restores the kept
	// version that has them.
	PreviousCatalog     string
	PreviousMigrationID string
	// UpdatedAt is when the pointer was written; Create and Flip set it
	// when it is zero.
	UpdatedAt time.Time
	// Generation counts the pointer's writes: Create writes 1, every Flip
	// and Rollback one more than the pointer it replaces. No two versions
	// of a pointer have the same bytes, so an ETag read once is never valid
	// again: a rollback cannot revive a stale migration's expectation (ABA),
	// and Flip refuses a pointer not newer than the current one. 0 in
	// pointers written before generations existed.
	Generation uint64
	// Marks are the catalog's writer-epoch and next_snapshot_id when the
	// pointer was written (nil if unknown). A rollback compares them with
	// the catalog's current ones: if they moved, RockLake committed to the
	// catalog after the flip, and rolling back would drop those commits.
	// The zero Marks is unknown (a real catalog's next_snapshot_id is 1 or
	// more).
	Marks Marks
	// FlipPoint pins both catalogs as they were when this pointer was
	// flipped to (nil: not pinned): what a rollback carries back is the
	// current catalog's change since its pin, and the previous catalog
	// must still read as its pin.
	FlipPoint *FlipPoint
	// RolledBack says this version was written by a rollback (nil: not),
	// and what it carried back.
	RolledBack *RolledBack
}

// FlipPoint is the flip's pins: a view of the catalog flipped from
// (Previous) and of the one flipped to (Current), each a checkpoint kept
// until the pointer moves on and the WAL SSTs past it that the view holds.
type FlipPoint struct {
	Previous Pin `json:"previous"`
	Current  Pin `json:"current"`
}

// Pin is one catalog's view at the flip (pkg/slatedb's View, spelled out
// here so that the pointer links no engine).
type Pin struct {
	Checkpoint string `json:"checkpoint"`
	WALEnd     uint64 `json:"wal_end,omitempty"`
}

// RolledBack is what a rollback wrote into the version it made current.
type RolledBack struct {
	// Of is the migration rolled back (the flip undone); By is the
	// rollback's run id.
	Of string `json:"of"`
	By string `json:"by"`
	// Keys is how many keys of the catalog rolled back from were carried
	// into this one (changed since the flip).
	Keys int `json:"keys"`
}

// Marks are what moves when RockLake writes to a catalog.
type Marks struct {
	WriterEpoch    uint64 `json:"writer_epoch"`
	NextSnapshotID uint64 `json:"next_snapshot_id"`
}

// Next is the pointer that replaces p with catalog in format v, written by
// migration migrationID: p becomes its previous pointer. UpdatedAt is left
// zero, for Flip to set.
func (p Pointer) Next(catalog string, v format.Version, migrationID string) Pointer {
	return Pointer{
		Catalog:             catalog,
		FormatVersion:       v,
		MigrationID:         migrationID,
		PreviousCatalog:     p.Catalog,
		PreviousMigrationID: p.MigrationID,
		Generation:          p.Generation + 1,
	}
}

// HasPrevious reports whether p names a pointer before it.
func (p Pointer) HasPrevious() bool { return p.PreviousCatalog != "" }

// wire is the JSON layout, in the order fields are written.
type wire struct {
	Catalog             string      `json:"catalog"`
	FormatVersion       uint64      `json:"format_version"`
	MigrationID         string      `json:"migration_id,omitempty"`
	PreviousCatalog     string      `json:"previous_catalog,omitempty"`
	PreviousMigrationID string      `json:"previous_migration_id,omitempty"`
	UpdatedAt           string      `json:"updated_at"`
	Generation          uint64      `json:"generation,omitempty"`
	Marks               *Marks      `json:"marks,omitempty"`
	FlipPoint           *FlipPoint  `json:"flip_point,omitempty"`
	RolledBack          *RolledBack `json:"rolled_back,omitempty"`
}

// fields are the JSON keys a pointer may have, and whether each is required.
var fields = map[string]bool{
	"catalog":               true,
	"format_version":        true,
	"migration_id":          false,
	"previous_catalog":      false,
	"previous_migration_id": false,
	"updated_at":            true,
	"generation":            false,
	"marks":                 false,
	"flip_point":            false,
	"rolled_back":           false,
}

func (p Pointer) wire() wire {
	w := wire{
		Catalog:             p.Catalog,
		FormatVersion:       uint64(p.FormatVersion),
		MigrationID:         p.MigrationID,
		PreviousCatalog:     p.PreviousCatalog,
		PreviousMigrationID: p.PreviousMigrationID,
		Generation:          p.Generation,
		FlipPoint:           p.FlipPoint,
		RolledBack:          p.RolledBack,
	}
	if p.Marks != (Marks{}) {
		m := p.Marks
		w.Marks = &m
	}
	if !p.UpdatedAt.IsZero() {
		w.UpdatedAt = p.UpdatedAt.UTC().Format(time.RFC3339Nano)
	}
	return w
}

// Validate reports (as ErrBadPointer) what makes p not a valid pointer.
func (p Pointer) Validate() error {
	var problems []string
	if err := checkCatalogURL(p.Catalog); err != nil {
		problems = append(problems, "catalog: "+err.Error())
	}
	if p.FormatVersion == 0 {
		problems = append(problems, "format_version: must be 1 or more")
	}
	if p.PreviousCatalog != "" {
		if err := checkCatalogURL(p.PreviousCatalog); err != nil {
			problems = append(problems, "previous_catalog: "+err.Error())
		}
	} else if p.PreviousMigrationID != "" {
		problems = append(problems, "previous_migration_id: set without previous_catalog")
	}
	if p.UpdatedAt.IsZero() {
		problems = append(problems, "updated_at: missing")
	}
	if len(problems) > 0 {
		return &Error{Kind: ErrBadPointer, Detail: strings.Join(problems, "; ")}
	}
	return nil
}

func checkCatalogURL(u string) error {
	if u == "" {
		return errors.New("empty")
	}
	if !strings.HasPrefix(u, "s3://") && !strings.HasPrefix(u, "file://") {
		return fmt.Errorf("%q is not an s3:// or file:/// URL", u)
	}
	if _, err := blob.Parse(u); err != nil {
		return err
	}
	return nil
}

// Encode is the object's content: indented JSON and a newline. It fails
// (ErrBadPointer) if p is not valid.
func (p Pointer) Encode() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(p.wire(), "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// MarshalJSON writes p in the pointer object's layout (without validating
// it, so that reports can show whatever was read).
func (p Pointer) MarshalJSON() ([]byte, error) { return json.Marshal(p.wire()) }

// UnmarshalJSON decodes strictly, as Decode does.
func (p *Pointer) UnmarshalJSON(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*p = d
	return nil
}

// Decode parses a pointer object strictly: exactly one JSON object, no
// unknown or repeated keys (keys match case-sensitively), every required
// field present, and a valid pointer (see Validate). Any failure is
// ErrBadPointer saying what is wrong.
func Decode(b []byte) (Pointer, error) {
	p, err := decode(b)
	if err != nil {
		var pe *Error
		if errors.As(err, &pe) {
			return Pointer{}, err
		}
		return Pointer{}, &Error{Kind: ErrBadPointer, Detail: err.Error()}
	}
	return p, nil
}

func decode(b []byte) (Pointer, error) {
	if len(b) > MaxSize {
		return Pointer{}, fmt.Errorf("%d bytes, more than a pointer's %d", len(b), MaxSize)
	}
	if err := checkKeys(b); err != nil {
		return Pointer{}, err
	}
	var w struct {
		Catalog             *string     `json:"catalog"`
		FormatVersion       *uint64     `json:"format_version"`
		MigrationID         *string     `json:"migration_id"`
		PreviousCatalog     *string     `json:"previous_catalog"`
		PreviousMigrationID *string     `json:"previous_migration_id"`
		UpdatedAt           *string     `json:"updated_at"`
		Generation          *uint64     `json:"generation"`
		Marks               *Marks      `json:"marks"`
		FlipPoint           *FlipPoint  `json:"flip_point"`
		RolledBack          *RolledBack `json:"rolled_back"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return Pointer{}, fmt.Errorf("not a pointer object: %w", err)
	}
	var missing []string
	if w.Catalog == nil {
		missing = append(missing, "catalog")
	}
	if w.FormatVersion == nil {
		missing = append(missing, "format_version")
	}
	if w.UpdatedAt == nil {
		missing = append(missing, "updated_at")
	}
	if len(missing) > 0 {
		return Pointer{}, fmt.Errorf("missing %s", strings.Join(missing, ", "))
	}
	t, err := time.Parse(time.RFC3339, *w.UpdatedAt)
	if err != nil {
		return Pointer{}, fmt.Errorf("updated_at: %q is not an RFC 3339 time", *w.UpdatedAt)
	}
	p := Pointer{
		Catalog:             *w.Catalog,
		FormatVersion:       format.Version(*w.FormatVersion),
		MigrationID:         deref(w.MigrationID),
		PreviousCatalog:     deref(w.PreviousCatalog),
		PreviousMigrationID: deref(w.PreviousMigrationID),
		UpdatedAt:           t.UTC(),
		FlipPoint:           w.FlipPoint,
		RolledBack:          w.RolledBack,
	}
	if w.Generation != nil {
		p.Generation = *w.Generation
	}
	if w.Marks != nil {
		p.Marks = *w.Marks
	}
	return p, p.Validate()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// checkKeys walks the top level of b: one object, whose keys are known
// (exactly, not case-folded as encoding/json matches them), not repeated and
// not null, and nothing after it.
func checkKeys(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return fmt.Errorf("not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("not JSON: %w", err)
		}
		key := tok.(string) // object keys are strings
		if _, known := fields[key]; !known {
			return fmt.Errorf("unknown field %q", key)
		}
		if seen[key] {
			return fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		if string(v) == "null" {
			return fmt.Errorf("field %q is null", key)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("data after the pointer object")
	}
	return nil
}
