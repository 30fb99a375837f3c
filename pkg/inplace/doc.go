// Package inplace owns Strategy A: migrating a small catalog where it lies,
// and its way back.
//
// Migrate fences RockLake's writer (a passive SlateDB writer, as the
// workflow's Freeze opens) and first makes the way back: a SlateDB
// checkpoint of the catalog, copied to a database of its own beside it
// (slatedb.CopyCheckpoint: the objects the checkpoint needs, copied by the
// store, server side on S3), read back (its digest must equal the
// catalog's), and the checkpoint deleted, since the copy holds all it held.
// Then it replaces the whole catalog in ONE atomic batch: every old-format
// key deleted, every key and value in the new format put (the records
// pkg/migration makes, the very transform Strategy B runs), the format
// version among them. SlateDB gives every operation of a batch one sequence
// number and writes the batch into one WAL object, so a reader sees either
// the whole old catalog or the whole new one, never a mix. Where an old
// key's bytes equal its new key's (system keys, the version key), the put
// wins: the deletes come first in the batch, and in a SlateDB 0.13.1 batch
// the last operation on a key wins.
//
// The batch is held in memory, so Migrate refuses, before it writes
// anything (before the fence), a catalog whose transformed keys and values
// exceed Options.MaxBytes (ErrTooLarge): such a catalog goes through Strategy
// B (export, transform, import into a new catalog).
//
// The way back is a whole catalog in the old format, which RockLake opens
// as it is: rolling back is a pointer flip to it (pkg/workflow), instant
// whatever the catalog's size. Restore instead puts the way back's keys
// into the catalog where it lies, in one batch: the workflow does that when
// the batch landed but the pointer could not follow.
package inplace
