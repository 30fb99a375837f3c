package format

import (
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
)

// TagKeyHash is the tag_key_hash key component of tags (0x1A) and column
// tags (0x1B) for a tag's key, in format v:
//   - V1: what RockLake v0.47.11 computes, Rust's DefaultHasher (SipHash-1-3
//     with zero keys) over the string's bytes and a 0xFF terminator, as
//     `str::hash` feeds it. Rust does not promise to keep it stable, which
//     is why format 2 replaces it. RockLake also keys variant stats (0x14)
//     by this hash of the variant key.
//   - V2: the first 8 bytes of SHA-256 of the UTF-8, big-endian (DESIGN 2.2
//     item 2).
func TagKeyHash(v Version, tagKey string) uint64 {
	if v == V2 {
		sum := sha256.Sum256([]byte(tagKey))
		return binary.BigEndian.Uint64(sum[:8])
	}
	return sipHash13(append([]byte(tagKey), 0xFF))
}

// sipHash13 is SipHash-1-3 with the key (0, 0): Rust's DefaultHasher::new().
func sipHash13(b []byte) uint64 {
	v0 := uint64(0x736f6d6570736575)
	v1 := uint64(0x646f72616e646f6d)
	v2 := uint64(0x6c7967656e657261)
	v3 := uint64(0x7465646279746573)
	round := func() {
		v0 += v1
		v1 = bits.RotateLeft64(v1, 13)
		v1 ^= v0
		v0 = bits.RotateLeft64(v0, 32)
		v2 += v3
		v3 = bits.RotateLeft64(v3, 16)
		v3 ^= v2
		v0 += v3
		v3 = bits.RotateLeft64(v3, 21)
		v3 ^= v0
		v2 += v1
		v1 = bits.RotateLeft64(v1, 17)
		v1 ^= v2
		v2 = bits.RotateLeft64(v2, 32)
	}
	n := len(b)
	for len(b) >= 8 {
		m := binary.LittleEndian.Uint64(b)
		v3 ^= m
		round()
		v0 ^= m
		b = b[8:]
	}
	last := uint64(n) << 56
	for i, c := range b {
		last |= uint64(c) << (8 * i)
	}
	v3 ^= last
	round()
	v0 ^= last
	v2 ^= 0xff
	round()
	round()
	round()
	return v0 ^ v1 ^ v2 ^ v3
}
