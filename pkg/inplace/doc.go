// Package inplace owns Strategy A: migrating a small catalog where it lies,
// and its way back.
//
// Migrate fences RockLake's writer (a passive SlateDB writer, as the
// workflow's Freeze opens), takes a SlateDB checkpoint of the catalog as the
// way back, and then replaces the whole catalog in ONE atomic batch: every
// old-format key deleted, every key and value in the new format put (the
// records pkg/migration makes, the very transform Strategy B runs), the
// format version among them. SlateDB gives every operation of a batch one
// sequence number and writes the batch into one WAL object, so a reader sees
// either the whole old catalog or the whole new one, never a mix. Where an
// old key's bytes equal its new key's (system keys, the version key), the put
// wins: the deletes come first in the batch, and in a SlateDB 0.13.1 batch
// the last operation on a key wins.
//
// The batch is held in memory, so Migrate refuses, before it writes
// anything (before the fence), a catalog whose transformed keys and values
// exceed Options.MaxBytes (ErrTooLarge): such a catalog goes through Strategy
// B (export, transform, import into a new catalog).
//
// Rollback puts the checkpoint's catalog back the same way: one atomic batch
// that deletes every key the catalog holds and puts every key the checkpoint
// holds, read through a reader pinned to that checkpoint, then checks that
// the catalog now equals the checkpoint (digest). The catalog stays at its
// URL, so RockLake serves it again as it was before the migration.
package inplace
