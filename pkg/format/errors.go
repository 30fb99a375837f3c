package format

import "github.com/rocklake/rocklake-migrate/pkg/errname"

// NameCorruptCatalog is the name of a stored value that does not decode, a
// class several errors share: the envelope errors and ErrBadRow.
const NameCorruptCatalog = "CorruptCatalog"

// The package's named errors (errname). DecodeEnvelope wraps the envelope
// errors with what it found.
var (
	// ErrEnvelopeTruncated: a value is shorter than its envelope's header.
	ErrEnvelopeTruncated = errname.New("format", NameCorruptCatalog, "value shorter than its envelope header")
	// ErrBadMagic: a value's envelope lacks the "SDKV" magic.
	ErrBadMagic = errname.New("format", NameCorruptCatalog, `value envelope lacks the "SDKV" magic`)
	// ErrEnvelopeVersion: a value's envelope is of another format version
	// than the catalog's.
	ErrEnvelopeVersion = errname.New("format", NameCorruptCatalog, "value envelope of another format version")
	// ErrChecksum: a format-2 value's payload does not match its CRC-32C.
	ErrChecksum = errname.New("format", NameCorruptCatalog, "value checksum mismatch")
	// ErrBadRow: a row's payload does not decode as the row message of its
	// key and format.
	ErrBadRow = errname.New("format", NameCorruptCatalog, "row payload does not decode")
	// ErrVersionMismatch: the catalog's catalog-format-version differs from
	// the one expected, or is missing (DESIGN 2.4). The error returned is a
	// *FormatVersionMismatch, whose message is RockLake's own
	// ("FormatVersionMismatch (SQLSTATE 0A000): ..."); the CLI exits 3.
	ErrVersionMismatch = errname.New("format", "FormatVersionMismatch", "the catalog is not in the format expected")
)
