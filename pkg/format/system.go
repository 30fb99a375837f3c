package format

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// System key names (tag 0xFF), the same in formats 1 and 2.
const (
	SystemWriterEpoch          = "writer-epoch"
	SystemRetainFrom           = "retain-from"
	SystemCatalogFormatVersion = "catalog-format-version"
	SystemHotKey               = "hot-key"
)

// Counter key names (tag 0xFE), the same in formats 1 and 2.
const (
	CounterNextSnapshotID = "next-snapshot-id"
	CounterNextSchemaID   = "next-schema-id"
	CounterNextTableID    = "next-table-id"
	CounterNextColumnID   = "next-column-id"
	CounterNextFileID     = "next-file-id"
	CounterNextMetadataID = "next-metadata-id"
	CounterNextTagID      = "next-tag-id"
)

// SystemNames returns the system key names DESIGN 2.1 defines. A catalog may
// hold others, from newer binaries; they are carried unchanged.
func SystemNames() []string {
	return []string{SystemWriterEpoch, SystemRetainFrom, SystemCatalogFormatVersion, SystemHotKey}
}

// CounterNames returns the counter names DESIGN 2.1 defines. As with system
// keys, others may exist and are carried unchanged.
func CounterNames() []string {
	return []string{
		CounterNextSnapshotID, CounterNextSchemaID, CounterNextTableID, CounterNextColumnID,
		CounterNextFileID, CounterNextMetadataID, CounterNextTagID,
	}
}

// SystemKey returns the key of system value name: 0xFF followed by name.
// Names are not validated here (they are constants); EncodeKey validates.
func SystemKey(name string) []byte { return append([]byte{byte(TagSystem)}, name...) }

// CounterKey returns the key of counter name: 0xFE followed by name.
func CounterKey(name string) []byte { return append([]byte{byte(TagCounter)}, name...) }

// FormatVersionKey returns 0xFF "catalog-format-version", the key every
// component reads before anything else (DESIGN 2.4).
func FormatVersionKey() []byte { return SystemKey(SystemCatalogFormatVersion) }

// EncodeUint64 returns the value of a counter or system key in format v: a
// google.protobuf.UInt64Value in that format's envelope. It panics if v is
// not Supported, like EncodeEnvelope.
func EncodeUint64(v Version, n uint64) []byte {
	mustSupport(v)
	// The deterministic encoding of UInt64Value{value: n}, written directly
	// because counters are hot: field 1 as a varint, omitted when 0.
	h := envelopeHeaderLen(v)
	b := make([]byte, h, h+1+protowire.SizeVarint(n))
	if n != 0 {
		b = protowire.AppendTag(b, 1, protowire.VarintType)
		b = protowire.AppendVarint(b, n)
	}
	return sealEnvelope(v, b)
}

// DecodeUint64 decodes the value of a counter or system key in format v.
func DecodeUint64(v Version, value []byte) (uint64, error) {
	payload, err := DecodeEnvelope(v, value)
	if err != nil {
		return 0, err
	}
	var w wrapperspb.UInt64Value
	if err := proto.Unmarshal(payload, &w); err != nil {
		return 0, fmt.Errorf("format: %s UInt64Value: %w", v, err)
	}
	return w.GetValue(), nil
}
