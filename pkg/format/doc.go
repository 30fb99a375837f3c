// Package format owns RockLake's catalog formats 1 and 2 (DESIGN section 2):
// the tag allocation, the key shapes and their codecs, the value envelopes,
// the counter and system keys, the catalog-format-version check, and the
// mapping from keys to the per-version protobuf messages (proto/rocklake/v1,
// proto/rocklake/v2).
//
// Format 1 is what RockLake v0.47.11 writes, byte for byte: its tags, key
// shapes (big-endian integers, u8 scopes, u16-length-prefixed strings, 64-bit
// hashes), its envelope, and its values, some of which are stored raw. The
// facts come from RockLake's rocklake-core (tags.rs, keys.rs, values.rs,
// rows.rs); the tests hold them against catalogs the real binary wrote.
// Format 2 is defined by DESIGN 2.2 on top of it.
//
// Everything here is an immutable contract: a catalog written today must read
// the same in years, so a change to an existing encoding is a new format
// version, never an edit. Decoders are strict (named errors, never a panic on
// any input); keys of tags this binary does not know, and counter and system
// keys of no known shape, are carried as raw bytes.
//
// The package is pure: no I/O, no global state beyond read-only tables.
package format
