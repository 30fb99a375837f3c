package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// Key is a decoded catalog key. Exactly one of Parts, Name and Raw is used,
// by tag:
//   - known table and internal tags: Parts, the u64 components in the order
//     ComponentNames gives;
//   - TagCounter and TagSystem: Name, the ASCII name after the tag byte;
//   - unknown tags: Raw, every byte after the tag byte, verbatim, so that a
//     key of a newer binary can be carried without being understood.
type Key struct {
	Tag   Tag
	Parts []uint64
	Name  string
	Raw   []byte
}

// Key errors. Decoders wrap them with the version, tag and component at fault.
var (
	ErrEmptyKey       = errors.New("format: empty key")
	ErrKeyLength      = errors.New("format: key length does not match its tag") // format 1
	ErrKeyTruncated   = errors.New("format: key ends inside a component")       // format 2
	ErrIntLength      = errors.New("format: integer length byte above 8")       // format 2
	ErrNonMinimalInt  = errors.New("format: integer not minimally encoded")     // format 2
	ErrTrailingBytes  = errors.New("format: bytes after the key's last component")
	ErrComponentCount = errors.New("format: wrong number of key components")
	ErrKeyName        = errors.New("format: counter or system key name is not printable ASCII")
	ErrKeyShape       = errors.New("format: key fields do not match its tag")
)

var (
	componentsV1 = [256][]string{
		TagMetadata:         {"metadata_id"},
		TagSnapshot:         {"snapshot_id"},
		TagSnapshotChanges:  {"snapshot_id"},
		TagSchema:           {"schema_id", "begin_snapshot"},
		TagTable:            {"table_id", "begin_snapshot"},
		TagView:             {"view_id", "begin_snapshot"},
		TagTag:              {"object_id", "begin_snapshot", "tag_id"},
		TagColumnTag:        {"table_id", "column_id", "begin_snapshot", "tag_id"},
		TagDataFile:         {"data_file_id"},
		TagDeleteFile:       {"delete_file_id"},
		TagColumn:           {"table_id", "column_id", "begin_snapshot"},
		TagTableStats:       {"table_id"},
		TagTableColumnStats: {"table_id", "column_id"},
		TagNameIndex:        {"parent_id", "name_hash"},
		TagFileDeletion:     {"data_file_id"},
		TagCommitLog:        {"snapshot_id"},
	}
	componentsV2 = func() [256][]string {
		c := componentsV1
		// DESIGN 2.2 item 2: a table's files are one prefix scan.
		c[TagDataFile] = []string{"table_id", "data_file_id"}
		c[TagDeleteFile] = []string{"table_id", "delete_file_id"}
		return c
	}()
)

func components(v Version, t Tag) []string {
	if v == V2 {
		return componentsV2[t]
	}
	return componentsV1[t]
}

// ComponentNames returns the names of the u64 components of a key with tag t
// in format v, in key order (for example table_id, data_file_id for
// TagDataFile in V2). It returns nil for TagCounter, TagSystem, unknown tags
// and unsupported versions, whose keys have no components.
func ComponentNames(v Version, t Tag) []string {
	if !Supported(v) {
		return nil
	}
	return append([]string(nil), components(v, t)...)
}

// EncodeKey encodes k in format v.
func EncodeKey(v Version, k Key) ([]byte, error) {
	return AppendKey(nil, v, k)
}

// AppendKey appends the format-v encoding of k to dst, so that a scan loop can
// reuse one buffer. On error dst is returned unchanged.
func AppendKey(dst []byte, v Version, k Key) ([]byte, error) {
	if !Supported(v) {
		return dst, errUnsupported(v)
	}
	switch {
	case !k.Tag.Known():
		// Unknown tags are opaque: their bytes are the same in every format.
		if k.Parts != nil || k.Name != "" {
			return dst, keyErr(v, k.Tag, ErrKeyShape, "a key of an unknown tag carries only Raw")
		}
		return append(append(growBytes(dst, 1+len(k.Raw)), byte(k.Tag)), k.Raw...), nil
	case k.Tag.namedKey():
		if k.Parts != nil || k.Raw != nil {
			return dst, keyErr(v, k.Tag, ErrKeyShape, "a named key carries only Name")
		}
		if !validName(k.Name) {
			return dst, keyErr(v, k.Tag, ErrKeyName, fmt.Sprintf("%q", k.Name))
		}
		return append(append(growBytes(dst, 1+len(k.Name)), byte(k.Tag)), k.Name...), nil
	}
	names := components(v, k.Tag)
	if k.Name != "" || k.Raw != nil {
		return dst, keyErr(v, k.Tag, ErrKeyShape, "a table key carries only Parts")
	}
	if len(k.Parts) != len(names) {
		return dst, keyErr(v, k.Tag, ErrComponentCount, fmt.Sprintf("have %d, want %d (%v)", len(k.Parts), len(names), names))
	}
	return appendParts(dst, v, k.Tag, k.Parts), nil
}

// KeyPrefix encodes the first len(parts) components of a key with table or
// internal tag t, for prefix scans: with V2, KeyPrefix(V2, TagDataFile, id)
// covers every data file of table id. Every key that starts with those
// components starts with the returned bytes, and no other key does.
func KeyPrefix(v Version, t Tag, parts ...uint64) ([]byte, error) {
	if !Supported(v) {
		return nil, errUnsupported(v)
	}
	if !t.Known() || t.namedKey() {
		return nil, keyErr(v, t, ErrKeyShape, "prefixes are for table and internal tags")
	}
	if names := components(v, t); len(parts) > len(names) {
		return nil, keyErr(v, t, ErrComponentCount, fmt.Sprintf("have %d, at most %d (%v)", len(parts), len(names), names))
	}
	return appendParts(nil, v, t, parts), nil
}

func appendParts(dst []byte, v Version, t Tag, parts []uint64) []byte {
	n := 1
	for _, x := range parts {
		if v == V1 {
			n += 8
		} else {
			n += 1 + intLen(x)
		}
	}
	dst = growBytes(dst, n)
	dst = append(dst, byte(t))
	for _, x := range parts {
		if v == V1 {
			dst = binary.BigEndian.AppendUint64(dst, x)
			continue
		}
		// Format 2: length byte, then the significant big-endian bytes. A
		// longer number has a larger length byte and equal lengths compare
		// big-endian, so byte order is numeric order; the length makes each
		// component self-delimiting, so tuples sort component-wise too.
		l := intLen(x)
		dst = append(dst, byte(l))
		for i := l - 1; i >= 0; i-- {
			dst = append(dst, byte(x>>(8*i)))
		}
	}
	return dst
}

// intLen is the number of significant bytes of x (0 for 0).
func intLen(x uint64) int { return (bits.Len64(x) + 7) / 8 }

// growBytes makes room for n more bytes in one allocation, where append
// would grow b step by step.
func growBytes(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	g := make([]byte, len(b), len(b)+n)
	copy(g, b)
	return g
}

// DecodeKey decodes a format-v key. It accepts exactly the bytes EncodeKey
// produces: a key that decodes re-encodes to the same bytes. The result does
// not alias b.
func DecodeKey(v Version, b []byte) (Key, error) {
	if !Supported(v) {
		return Key{}, errUnsupported(v)
	}
	if len(b) == 0 {
		return Key{}, fmt.Errorf("%w (%s)", ErrEmptyKey, v)
	}
	t, rest := Tag(b[0]), b[1:]
	switch {
	case !t.Known():
		return Key{Tag: t, Raw: append([]byte{}, rest...)}, nil
	case t.namedKey():
		name := string(rest)
		if !validName(name) {
			return Key{}, keyErr(v, t, ErrKeyName, fmt.Sprintf("%q", name))
		}
		return Key{Tag: t, Name: name}, nil
	}
	names := components(v, t)
	parts := make([]uint64, len(names))
	if v == V1 {
		if len(rest) != 8*len(names) {
			return Key{}, keyErr(v, t, ErrKeyLength, fmt.Sprintf("%d bytes after the tag, want %d (%v)", len(rest), 8*len(names), names))
		}
		for i := range parts {
			parts[i] = binary.BigEndian.Uint64(rest[8*i:])
		}
		return Key{Tag: t, Parts: parts}, nil
	}
	for i, name := range names {
		if len(rest) == 0 {
			return Key{}, keyErr(v, t, ErrKeyTruncated, "missing "+name)
		}
		l := int(rest[0])
		if l > 8 {
			return Key{}, keyErr(v, t, ErrIntLength, fmt.Sprintf("%s has length %d", name, l))
		}
		if len(rest) < 1+l {
			return Key{}, keyErr(v, t, ErrKeyTruncated, fmt.Sprintf("%s needs %d bytes, %d left", name, l, len(rest)-1))
		}
		if l > 0 && rest[1] == 0 {
			return Key{}, keyErr(v, t, ErrNonMinimalInt, name+" has a leading zero byte")
		}
		var x uint64
		for _, c := range rest[1 : 1+l] {
			x = x<<8 | uint64(c)
		}
		parts[i] = x
		rest = rest[1+l:]
	}
	if len(rest) != 0 {
		return Key{}, keyErr(v, t, ErrTrailingBytes, fmt.Sprintf("%d bytes", len(rest)))
	}
	return Key{Tag: t, Parts: parts}, nil
}

// validName reports whether s can follow TagCounter or TagSystem: non-empty
// printable ASCII, as DESIGN 2.1 has it, so names print safely in reports.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

func keyErr(v Version, t Tag, err error, detail string) error {
	return fmt.Errorf("%w (%s %s key: %s)", err, v, t, detail)
}
