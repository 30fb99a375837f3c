package format

import (
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// SQLStateFeatureNotSupported is the SQLSTATE of FormatVersionMismatch, as
// RockLake reports it (docs/schema-version.md).
const SQLStateFeatureNotSupported = "0A000"

// FormatVersionMismatch is the refusal of DESIGN 2.4: the catalog's
// catalog-format-version differs from the one expected, or is missing. Match
// it with errors.As and a *FormatVersionMismatch target.
type FormatVersionMismatch struct {
	Found    uint64 // the catalog's version; 0 when Missing
	Expected uint64 // the version the caller operates on
	Missing  bool   // no catalog-format-version key: an uninitialized catalog
}

func (e *FormatVersionMismatch) Error() string {
	if e.Missing {
		return fmt.Sprintf("FormatVersionMismatch (SQLSTATE %s): found no catalog format version (uninitialized catalog), expected %d",
			SQLStateFeatureNotSupported, e.Expected)
	}
	return fmt.Sprintf("FormatVersionMismatch (SQLSTATE %s): found catalog format version %d, expected %d",
		SQLStateFeatureNotSupported, e.Found, e.Expected)
}

// SQLState returns "0A000" (feature not supported).
func (e *FormatVersionMismatch) SQLState() string { return SQLStateFeatureNotSupported }

// DecodeFormatVersion reads the value of the catalog-format-version key in
// whichever supported envelope it is, since the catalog's format is what it
// is about to tell. The version itself may be any number, supported or not.
func DecodeFormatVersion(value []byte) (uint64, error) {
	n, _, err := decodeFormatVersion(value)
	return n, err
}

func decodeFormatVersion(value []byte) (uint64, Version, error) {
	env, err := envelopeVersion(value)
	if err != nil {
		return 0, 0, fmt.Errorf("format: catalog-format-version value: %w", err)
	}
	payload, err := DecodeEnvelope(env, value)
	if err != nil {
		return 0, 0, fmt.Errorf("format: catalog-format-version value: %w", err)
	}
	var w wrapperspb.UInt64Value
	if err := proto.Unmarshal(payload, &w); err != nil {
		return 0, 0, fmt.Errorf("format: catalog-format-version value: %w", err)
	}
	return w.GetValue(), env, nil
}

// CheckVersion is the startup check of DESIGN 2.4. found is the raw value of
// the catalog-format-version key, or nil when the key is absent. It returns
// nil when the catalog is in format expected, a *FormatVersionMismatch when
// it is in another format or uninitialized, and another error when the value
// cannot be read (refuse to operate on those too).
func CheckVersion(found []byte, expected Version) error {
	if !Supported(expected) {
		return errUnsupported(expected)
	}
	if found == nil {
		return &FormatVersionMismatch{Expected: uint64(expected), Missing: true}
	}
	n, env, err := decodeFormatVersion(found)
	if err != nil {
		return err
	}
	if n != uint64(expected) {
		return &FormatVersionMismatch{Found: n, Expected: uint64(expected)}
	}
	if env != expected {
		// Every value of a format-N catalog is in the format-N envelope; a
		// mix means a torn or hand-made catalog, not a format-N one.
		return fmt.Errorf("%w: catalog-format-version %d is stored in a %s envelope", ErrEnvelopeVersion, n, env)
	}
	return nil
}
