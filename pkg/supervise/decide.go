// Package supervise keeps RockLake serving the catalog the pointer names
// (`rocklake-migrate serve`): it watches the pointer and the migration lock,
// decides which server should run (Decide: binary, catalog, mode) and runs
// it (Supervisor), restarting RockLake in reader mode while a migration holds
// the lock (on the frozen source's read replica once Freeze made one), on the new catalog after a flip, on the old one after an abort or
// a rollback. Resolve is what `rocklake-migrate resolve` prints.
//
// The one rule it never breaks: no writer is started while a migration holds
// the lock (a writer's open fences Freeze's writer, or moves the source under
// the migration), unless the holder says writes go on. When it cannot tell
// (the lock unreadable, or its own presence record not written), it keeps
// what runs, and starts nothing.
//
// It says where it is (pkg/presence): a record beside the pointer, written
// before it starts anything and at every change, with a heartbeat; it
// acknowledges a holder's fence once its server is no writer on the source,
// and the workflow fences only then.
package supervise

import (
	"fmt"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

// Mode is RockLake's --mode.
type Mode string

const (
	Writer Mode = "writer"
	Reader Mode = "reader"
)

// Child is a RockLake server: which binary, on which catalog (the pointer's
// URL), in which mode; Copy: a reader on a copy of the catalog made for it
// (copies.go), which fences nothing.
type Child struct {
	Format  format.Version
	Binary  string
	Catalog string
	Mode    Mode
	Copy    bool
}

func (c Child) String() string {
	on := c.Catalog
	if c.Copy {
		on = "a copy of " + on
	}
	return fmt.Sprintf("%s on %s (%s, %s)", c.Mode, on, c.Format, c.Binary)
}

// asCopyReader is c as a reader of a copy of its catalog.
func (c Child) asCopyReader() *Child {
	c.Mode, c.Copy = Reader, true
	return &c
}

// Observation is what the supervisor last read.
type Observation struct {
	Pointer pointer.Pointer
	// LockKnown: the lock was read (a missing one is known and free).
	LockKnown bool
	// LockHolder is the migration holding the lock ("" when free);
	// LockDryRun says it fences nothing; FenceAt is the earliest time it
	// may fence the source (the lock's fence_at, or when it was taken).
	LockHolder string
	LockDryRun bool
	FenceAt    time.Time
	// LockWritesGoOn: the holder migrates online and has not named its
	// fence yet (lock.Lock.WritesGoOn): the writer keeps committing.
	LockWritesGoOn bool
	// Replica is the frozen source's copy the holder's Freeze made
	// (layout.Replica, found once whole; "" when none): reads are served
	// from it until the flip.
	Replica string
	// Now is when it was read.
	Now time.Time
	// CatalogMissing: the pointer's catalog has no SlateDB manifest (a
	// dangling pointer), where RockLake would create an empty catalog.
	CatalogMissing bool
	// OnSource: this supervisor's server runs on the pointer's catalog
	// now. Once a holder names its fence, only such a server is switched
	// to a reader there: the holder waits for the supervisors it sees
	// (pkg/presence), and one that came later opens nothing on the source.
	OnSource bool
	// OnCopy: its server reads a copy of the pointer's catalog that it
	// made: kept until the flip or the abort (it holds every commit of the
	// frozen source).
	OnCopy bool
	// PointerErr: the last read of the pointer failed (the one before is
	// Pointer): what runs keeps running, degraded.
	PointerErr error
}

// FlipSettle is how long after a flip the supervisor waits for the
// migration to free the lock before it opens the new catalog as a reader.
const FlipSettle = 10 * time.Second

// OpenMargin is how long before a migration's fence a RockLake reader may
// still be started on its source: RockLake's reader mode opens the catalog
// as a SlateDB writer, which Freeze must come after (it then fences that
// reader, whose reads go on); one opened after Freeze would move the frozen
// source, and Flip would refuse it (SourceChangedDuringMigration).
const OpenMargin = time.Second

// State names what the supervisor is doing, in its health lines.
type State string

const (
	// Serving: the pointer's catalog in the mode asked for.
	Serving State = "serving"
	// Migrating: a migration holds the lock; RockLake serves reads only.
	Migrating State = "migrating"
	// Undecided: the lock cannot be read; what runs keeps running, and no
	// writer is started.
	Undecided State = "undecided"
	// Degraded: the pointer names a catalog this supervisor cannot serve
	// (no binary for its format, or no catalog there); the last good server
	// runs on in reader mode, or none if there was none.
	Degraded State = "degraded"
)

// Decision is the server that should run (nil: none), and why.
type Decision struct {
	Child  *Child
	State  State
	Reason string
	// Err names a degraded state: ErrNoBinary or ErrPointerDangling.
	Err error
	// Hold: change nothing, start nothing (not even a restart of what ran):
	// whatever runs keeps running.
	Hold bool
	// OpenBy, if set, is when the Child must have been started by: later,
	// it is not started (it would open a source a migration froze).
	OpenBy time.Time
}

// Decide is the server that should run given what was observed, the last
// server that ran on a catalog the pointer named (nil if none; never a
// migration's read replica), the binaries per format, and whether
// this supervisor runs readers only (a fleet's readers).
func Decide(obs Observation, last *Child, bins map[format.Version]string, readersOnly bool) Decision {
	p := obs.Pointer
	degraded := func(err error, reason string) Decision {
		if last == nil {
			return Decision{State: Degraded, Err: err, Reason: reason + "; no earlier server to keep"}
		}
		c := *last
		c.Mode = Reader
		return Decision{Child: &c, State: Degraded, Err: err, Reason: reason + "; the last good server keeps serving reads"}
	}
	if obs.PointerErr != nil {
		return Decision{Hold: true, State: Degraded, Err: ErrPointerUnreadable,
			Reason: fmt.Sprintf("%s: the pointer cannot be read (%v): what runs keeps running, nothing is started", ErrPointerUnreadable.ErrorName(), obs.PointerErr)}
	}
	bin, ok := bins[p.FormatVersion]
	switch {
	case !ok:
		return degraded(ErrNoBinary, fmt.Sprintf("%s: the pointer names %s in format %s, and this supervisor has no RockLake binary for %s (give one with --rocklake %d=PATH)", ErrNoBinary.ErrorName(), p.Catalog, p.FormatVersion, p.FormatVersion, p.FormatVersion))
	case obs.CatalogMissing:
		return degraded(ErrPointerDangling, fmt.Sprintf("%s: the pointer names %s, where there is no catalog", ErrPointerDangling.ErrorName(), p.Catalog))
	}
	want := Child{Format: p.FormatVersion, Binary: bin, Catalog: p.Catalog, Mode: Writer}
	holder := obs.LockHolder
	switch {
	case !obs.LockKnown:
		return Decision{Hold: true, State: Undecided, Reason: "the lock cannot be read: what runs keeps running, nothing is started"}
	case holder != "" && obs.LockDryRun:
		// A dry run fences nothing and writes nothing to the source.
	case holder != "" && obs.LockWritesGoOn:
		// An online migration copies while the writer commits; it names
		// its fence a freeze grace ahead.
		c := &want
		if readersOnly {
			c = want.asCopyReader()
		}
		return Decision{Child: c, State: Migrating, Reason: "migration " + holder + " migrates online: writes go on until it names its fence"}
	case holder != "" && p.MigrationID == holder && obs.Now.Before(p.UpdatedAt.Add(FlipSettle)):
		// Flip frees the lock right after it writes the pointer: one
		// restart, to the writer, rather than two.
		return Decision{Hold: true, State: Migrating, Reason: "migration " + holder + " flipped the pointer: waiting for it to free the lock"}
	case holder != "" && p.MigrationID == holder:
		return Decision{Child: want.asCopyReader(), State: Migrating, Reason: "migration " + holder + " flipped the pointer and still holds the lock: reads only, from a copy, until it frees it"}
	case holder != "" && obs.OnCopy:
		return Decision{Child: want.asCopyReader(), State: Migrating,
			Reason: fmt.Sprintf("migration %s holds the lock: reads only, from this supervisor's copy of the source, until it flips or aborts", holder)}
	case holder != "" && obs.Replica != "":
		// The frozen source's copy: nothing opened on it moves the source,
		// and it holds every commit the source does (writes are frozen).
		want.Catalog, want.Mode = obs.Replica, Reader
		return Decision{Child: &want, State: Migrating,
			Reason: fmt.Sprintf("migration %s froze the source: reads only, from its read replica %s, until it flips or aborts", holder, obs.Replica)}
	case holder != "" && obs.Now.Add(OpenMargin).Before(obs.FenceAt) && !obs.OnSource:
		return Decision{State: Migrating,
			Reason: fmt.Sprintf("migration %s holds the lock and named its fence: nothing is opened on the source (no server ran there), reads wait for its read replica or the flip", holder)}
	case holder != "" && obs.Now.Add(OpenMargin).Before(obs.FenceAt):
		// The writer stops; its server reads a copy of the source made
		// then, which the fence does not reach (a reader opened on the
		// source itself would be fenced with it).
		return Decision{Child: want.asCopyReader(), State: Migrating, OpenBy: obs.FenceAt.Add(-OpenMargin),
			Reason: fmt.Sprintf("migration %s holds the lock and may fence the source at %s: reads only, from a copy of the source, until it flips or aborts", holder, obs.FenceAt.UTC().Format(time.RFC3339))}
	case holder != "":
		return Decision{Hold: true, State: Migrating, Reason: "migration " + holder + " holds the lock and froze the source (or is about to): what runs keeps running, nothing is opened on it until the migration flips or aborts"}
	}
	c := &want
	if readersOnly {
		// A fleet's reader: a copy of the catalog, refreshed; RockLake
		// on the catalog itself would fence its writer.
		c = want.asCopyReader()
	}
	return Decision{Child: c, State: Serving, Reason: fmt.Sprintf("the pointer names %s (%s, generation %d)", p.Catalog, p.FormatVersion, p.Generation)}
}
