package ndjson

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Digest summarises a set of records independently of their order, so that
// a catalog scan and the shard files of the same records, read in any
// order and split in any way, give equal digests (compare with ==). It is
// the sum modulo 2^256 of the SHA-256 of each record's raw key and value,
// and the count per table. A sum, unlike an exclusive or, does not cancel
// out a record that is there twice. The zero Digest is the empty set.
type Digest struct {
	counts tagCounts
	sum    [4]uint64 // big-endian 256-bit integer: sum[0] most significant
}

// Add adds r, by its raw key and value (Record.Raw): the bytes in the
// catalog, which do not depend on how the record was read.
func (d *Digest) Add(r Record) { d.AddRaw(r.rawKey, r.rawValue) }

// AddRaw adds the catalog entry key, value as Add adds its Record, without
// decoding it: for a scan of the catalog. An empty key, which no catalog
// holds, counts under tag 0x00.
func (d *Digest) AddRaw(key, value []byte) {
	d.add(entryHash(key, value))
	d.counts[tagOf(key)]++
}

// Remove takes r out of the digest: the inverse of Add, for a record a
// catch-up round replaces or deletes (the sum is modulo 2^256, so the
// digest equals the one of the set without r).
func (d *Digest) Remove(r Record) { d.RemoveRaw(r.rawKey, r.rawValue) }

// RemoveRaw is Remove by the entry's raw key and value.
func (d *Digest) RemoveRaw(key, value []byte) {
	h := entryHash(key, value)
	var borrow uint64
	for i := 3; i >= 0; i-- {
		d.sum[i], borrow = bits.Sub64(d.sum[i], h[i], borrow)
	}
	d.counts[tagOf(key)]--
}

func tagOf(key []byte) format.Tag {
	if len(key) == 0 {
		return 0
	}
	return format.Tag(key[0])
}

// entryHash is the SHA-256 of one entry as a 256-bit integer.
func entryHash(key, value []byte) [4]uint64 {
	// Length-prefixing the key keeps (key, value) pairs from colliding
	// when a boundary moves. A small buffer on the stack saves an
	// allocation per record.
	var stack [1024]byte
	b := stack[:0]
	b = binary.AppendUvarint(b, uint64(len(key)))
	b = append(b, key...)
	b = append(b, value...)
	h := sha256.Sum256(b)
	return [4]uint64{
		binary.BigEndian.Uint64(h[0:]), binary.BigEndian.Uint64(h[8:]),
		binary.BigEndian.Uint64(h[16:]), binary.BigEndian.Uint64(h[24:]),
	}
}

func (d *Digest) add(x [4]uint64) {
	var carry uint64
	for i := 3; i >= 0; i-- {
		d.sum[i], carry = bits.Add64(d.sum[i], x[i], carry)
	}
}

// Merge adds the records of o, as if each had been added to d.
func (d *Digest) Merge(o Digest) {
	d.add(o.sum)
	for t, n := range o.counts {
		d.counts[t] += n
	}
}

// Counts returns the number of records per table, by format.Tag's String
// ("ducklake_data_file", "tag 0xC8" for an unknown tag).
func (d Digest) Counts() map[string]uint64 { return d.counts.toMap() }

// Sum returns the 256-bit sum as 64 hex digits.
func (d Digest) Sum() string {
	var b [32]byte
	for i, w := range d.sum {
		binary.BigEndian.PutUint64(b[8*i:], w)
	}
	return hex.EncodeToString(b[:])
}

// digestJSON is a Digest as JSON, for step outputs:
//
//	{"sum":"…64 hex digits…","counts":{"ducklake_data_file":3,"tag 0xC8":1}}
type digestJSON struct {
	Sum    string            `json:"sum"`
	Counts map[string]uint64 `json:"counts"`
}

// MarshalJSON writes the digest as {"sum": Sum(), "counts": Counts()}.
func (d Digest) MarshalJSON() ([]byte, error) {
	return json.Marshal(digestJSON{Sum: d.Sum(), Counts: d.Counts()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Digest) UnmarshalJSON(b []byte) error {
	var j digestJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	sum, err := hex.DecodeString(j.Sum)
	if err != nil || len(sum) != 32 {
		return fmt.Errorf("ndjson: digest sum %q is not 64 hex digits", j.Sum)
	}
	var out Digest
	for i := range out.sum {
		out.sum[i] = binary.BigEndian.Uint64(sum[8*i:])
	}
	for name, n := range j.Counts {
		t, ok := tagOfName(name)
		if !ok {
			return fmt.Errorf("ndjson: digest counts: %q is not a table", name)
		}
		out.counts[t] = n
	}
	*d = out
	return nil
}

// tagOfName inverts format.Tag's String.
func tagOfName(name string) (format.Tag, bool) {
	if t, ok := format.TagByName(name); ok {
		return t, true
	}
	hexByte, ok := strings.CutPrefix(name, "tag 0x")
	if !ok {
		return 0, false
	}
	x, err := strconv.ParseUint(hexByte, 16, 8)
	if t := format.Tag(x); err == nil && !t.Known() && t.String() == name {
		return t, true
	}
	return 0, false
}
