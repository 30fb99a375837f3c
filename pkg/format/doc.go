// Package format owns RockLake's catalog formats 1 and 2 (DESIGN section 2):
// the tag allocation, the key codecs, the value envelopes, the system and
// counter keys, the catalog-format-version check, and the mapping from tags to
// the per-version protobuf row messages (proto/rocklake/v1, proto/rocklake/v2).
//
// Everything here is an immutable contract: a catalog written today must read
// the same in years, so a change to an existing encoding is a new format
// version, never an edit. Decoders are strict (one valid encoding per value,
// named errors otherwise) and never panic on any input; keys and values of
// tags this binary does not know are carried as raw bytes.
//
// The package is pure: no I/O, no global state beyond read-only tables.
package format
