// Package ndjson owns the shard file: the NDJSON form in which a catalog's
// records travel between export, transform, import and verify (DESIGN
// section 3), and the order-independent Digest that verify compares.
//
// A shard file is three kinds of line, each a JSON object ending in "\n":
//
//   - line 1, the header: the export-format version (ExportFormatVersion; a
//     reader refuses any other), the catalog format of the records, the
//     shard's index, count and key range, the checkpoint and the source;
//   - one line per record: table name, tag, the shape's name where the tag
//     has several (counters, system keys, 0xFC, 0xFD), the key components by
//     name, the value as protobuf JSON with proto field names (counters and
//     the format version as numbers, raw values as base64), the row's
//     unknown protobuf fields as base64; the raw key and value as base64 for
//     keys of unknown tags and counter and system keys of no known shape, and
//     the raw value where the stored bytes are not the row's canonical
//     encoding or a nested message holds fields its type does not know
//     (which the row's JSON cannot show);
//   - the last line, the trailer: the record count, per-table counts and the
//     SHA-256 of the record lines, byte for byte (`sed '1d;$d' | sha256sum`).
//
// Record lines are readable, but the raw bytes are what the file preserves:
// raw key and value → Record → line → Record → raw key and value gives back
// the same bytes, unknown fields and unknown tags included. The same records
// always make the same file, whichever binary writes it.
//
// A migration that moves a row's protobuf payload as it is into another
// format (Record.Move, where format.RowsAlike) neither decodes nor
// re-encodes it, and reuses its line where the key is unchanged: the
// result is the Record NewRecord decodes from the same bytes, line for
// line.
//
// Reading is strict and streams in bounded memory: a missing or wrong
// trailer, a bad line (named by number), a header of another export format
// and a truncated or corrupt compressed stream are each a named error, and
// io.EOF comes only after the trailer has been checked, so a caller that
// stages records until io.EOF never acts on a damaged file. Files named
// *.zst are zstd-compressed and *.gz gzip-compressed.
package ndjson
