package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// SQLStateFeatureNotSupported is the SQLSTATE of FormatVersionMismatch, as
// RockLake reports it (docs/schema-version.md).
const SQLStateFeatureNotSupported = "0A000"

// FormatVersionMismatch is the refusal of DESIGN 2.4: the catalog's
// catalog-format-version differs from the one expected, or is missing. Match
// it with errors.As and a *FormatVersionMismatch target, or errors.Is and
// ErrVersionMismatch.
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

// ParseMismatch reads back a *FormatVersionMismatch from its message (as
// Error writes it) anywhere in msg: the refusal crosses the workflow's JSON
// boundary (a state's error cause) as text. ok is false when msg holds none.
func ParseMismatch(msg string) (e *FormatVersionMismatch, ok bool) {
	var found, expected uint64
	if _, err := fmt.Sscanf(cutTo(msg, "found catalog format version "), "found catalog format version %d, expected %d", &found, &expected); err == nil {
		return &FormatVersionMismatch{Found: found, Expected: expected}, true
	}
	if _, err := fmt.Sscanf(cutTo(msg, "found no catalog format version "), "found no catalog format version (uninitialized catalog), expected %d", &expected); err == nil {
		return &FormatVersionMismatch{Missing: true, Expected: expected}, true
	}
	return nil, false
}

// cutTo returns msg from the first sep on ("" when none).
func cutTo(msg, sep string) string {
	if i := strings.Index(msg, sep); i >= 0 {
		return msg[i:]
	}
	return ""
}

// ErrorName is ErrVersionMismatch's name. The message keeps RockLake's own
// form of this refusal ("FormatVersionMismatch (SQLSTATE 0A000): ...").
func (e *FormatVersionMismatch) ErrorName() string { return ErrVersionMismatch.ErrorName() }

// Is makes errors.Is(err, ErrVersionMismatch) hold.
func (e *FormatVersionMismatch) Is(target error) bool { return target == ErrVersionMismatch }

// SQLState returns "0A000" (feature not supported).
func (e *FormatVersionMismatch) SQLState() string { return SQLStateFeatureNotSupported }

// ErrDocumentedVersionForm is returned (wrapped) for a catalog-format-version
// stored as docs/schema-version.md describes it (the envelope around a
// protobuf-encoded u64) instead of as RockLake writes it (the envelope around
// a big-endian u32). RockLake cannot read such a catalog; this tool reads the
// number, reports the form, and refuses to operate on it.
var ErrDocumentedVersionForm = errors.New("format: catalog-format-version is in the documentation's protobuf form, which RockLake does not read")

// EncodeFormatVersion returns the value of the catalog-format-version key:
// 01 "SDKV" and n as a big-endian u32, in every format, so that every
// RockLake binary reads it (DESIGN 2.2 item 5).
func EncodeFormatVersion(n uint32) []byte {
	return binary.BigEndian.AppendUint32(EncodeEnvelope(V1, nil), n)
}

// DecodeFormatVersion reads the value of the catalog-format-version key. The
// version may be any number, supported or not. A value in the documentation's
// protobuf form is decoded too, and the error wraps
// ErrDocumentedVersionForm with the number it holds.
func DecodeFormatVersion(value []byte) (uint32, error) {
	payload, err := DecodeEnvelope(V1, value)
	if err != nil {
		return 0, fmt.Errorf("format: catalog-format-version value: %w", err)
	}
	if len(payload) == 4 {
		return binary.BigEndian.Uint32(payload), nil
	}
	var w wrapperspb.UInt64Value
	if proto.Unmarshal(payload, &w) == nil && len(payload) > 0 && len(payload) <= 11 {
		return 0, fmt.Errorf("%w (it holds %d)", ErrDocumentedVersionForm, w.GetValue())
	}
	return 0, fmt.Errorf("format: catalog-format-version value: %d payload bytes, want a 4-byte big-endian u32", len(payload))
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
	n, err := DecodeFormatVersion(found)
	if err != nil {
		return err
	}
	if uint64(n) != uint64(expected) {
		return &FormatVersionMismatch{Found: uint64(n), Expected: uint64(expected)}
	}
	return nil
}
