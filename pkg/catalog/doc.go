// Package catalog owns opening RockLake catalogs with the startup check,
// initialising new catalogs, typed reads and key-range scans, on top of
// pkg/slatedb and pkg/format.
//
// The startup check (DESIGN 2.4) is the first thing every open does: it
// reads 0xFF "catalog-format-version" and refuses a catalog whose version is
// missing, unknown to this binary or other than the one expected, with a
// *format.FormatVersionMismatch (SQLSTATE 0A000). Nothing else is read, and
// nothing is written, before it passes.
//
//   - Open gives a read-only Catalog over a SlateDB reader; opening it writes
//     nothing, so it is safe next to a running RockLake writer.
//   - OpenWriter gives a Writer. Opening a SlateDB writer fences RockLake's
//     writer and writes a manifest, so the check runs through a reader first
//     and a mismatched catalog is refused before anything is fenced.
//   - PutRaw and DeleteRaw (raw.go) are the repairs of one key through a
//     Writer: a value must be what the catalog's format stores under its
//     key (CheckValue), and the version key is never deleted.
//   - NewInitializer and Create make a new catalog in a location holding no
//     key; the format version arrives last, in the one atomic batch that
//     initialises the system and counter keys, so a catalog either opens
//     fully initialised or not at all.
//
// Readers skip keys of tags this binary does not know (docs/schema-version.md:
// old binaries ignore new tags); ScanRaw and UnknownTags still see them.
//
// A Catalog and a Writer may be used by several goroutines at once, like the
// SlateDB handles under them; an iterator belongs to the goroutine ranging
// over it.
package catalog
