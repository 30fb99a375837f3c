package format

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Magic follows the version byte of every value envelope.
const Magic = "SDKV"

// castagnoli is CRC-32C, which amd64 and arm64 compute in hardware.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EnvelopeHeaderLen is the header size of format v: version byte, magic, and
// in format 2 the CRC-32C of the payload. v must be Supported.
func EnvelopeHeaderLen(v Version) int {
	if v == V2 {
		return 1 + len(Magic) + 4
	}
	return 1 + len(Magic)
}

// EncodeEnvelope wraps payload in the value envelope of format v:
//   - V1: 0x01 "SDKV" payload
//   - V2: 0x02 "SDKV" CRC-32C(payload), 4 bytes big-endian, payload
//
// It panics if v is not Supported: versions come from constants or
// ParseVersion, so another one is a programming error.
func EncodeEnvelope(v Version, payload []byte) []byte {
	mustSupport(v)
	b := make([]byte, EnvelopeHeaderLen(v), EnvelopeHeaderLen(v)+len(payload))
	return SealEnvelope(v, append(b, payload...))
}

// SealEnvelope fills in the header of b, whose payload already follows
// EnvelopeHeaderLen(v) reserved bytes, and returns b: a value built in place
// (EncodeValue marshals into it, a shard reader appends a row's encoding)
// costs no copy. v must be Supported.
func SealEnvelope(v Version, b []byte) []byte {
	b[0] = byte(v)
	copy(b[1:], Magic)
	if v == V2 {
		h := EnvelopeHeaderLen(v)
		binary.BigEndian.PutUint32(b[1+len(Magic):], crc32.Checksum(b[h:], castagnoli))
	}
	return b
}

// DecodeEnvelope checks the format-v envelope of value and returns its
// payload, a subslice of value (copy it to keep it past value's lifetime). In
// format 2 a payload whose CRC-32C does not match is rejected.
func DecodeEnvelope(v Version, value []byte) ([]byte, error) {
	if !Supported(v) {
		return nil, errUnsupported(v)
	}
	h := EnvelopeHeaderLen(v)
	if len(value) < 1+len(Magic) {
		return nil, fmt.Errorf("%w (%s: %d bytes)", ErrEnvelopeTruncated, v, len(value))
	}
	if string(value[1:1+len(Magic)]) != Magic {
		return nil, fmt.Errorf("%w (%s: found %q)", ErrBadMagic, v, value[1:1+len(Magic)])
	}
	if Version(value[0]) != v {
		return nil, fmt.Errorf("%w (want %s, found version byte 0x%02X)", ErrEnvelopeVersion, v, value[0])
	}
	if len(value) < h {
		return nil, fmt.Errorf("%w (%s: %d bytes, header is %d)", ErrEnvelopeTruncated, v, len(value), h)
	}
	payload := value[h:]
	if v == V2 {
		want := binary.BigEndian.Uint32(value[1+len(Magic):])
		if got := crc32.Checksum(payload, castagnoli); got != want {
			return nil, fmt.Errorf("%w (%s: stored %08x, computed %08x)", ErrChecksum, v, want, got)
		}
	}
	return payload, nil
}

func mustSupport(v Version) {
	if !Supported(v) {
		panic(errUnsupported(v))
	}
}
