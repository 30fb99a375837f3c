package format

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"unicode/utf8"
)

// Key is a decoded catalog key.
//   - Name selects the shape for tags that have several (ShapeNames): the
//     counter or system key name, the inlined-row subtype, 0xFC's index; ""
//     for the others.
//   - Parts are the integer components and Strs the string components, each
//     in key order (Fields says which is which).
//   - Raw, for unknown tags and for counter and system keys of no known
//     shape, is every byte after the tag, verbatim, so that a key of a newer
//     binary is carried without being understood. Raw keys have no Name,
//     Parts or Strs.
type Key struct {
	Tag   Tag
	Name  string
	Parts []uint64
	Strs  []string
	Raw   []byte
}

// Key errors. Decoders wrap them with the version, tag and component at fault.
var (
	ErrEmptyKey       = errors.New("format: empty key")
	ErrKeyTruncated   = errors.New("format: key ends inside a component")
	ErrIntLength      = errors.New("format: integer length byte above 8")   // format 2
	ErrNonMinimalInt  = errors.New("format: integer not minimally encoded") // format 2
	ErrTrailingBytes  = errors.New("format: bytes after the key's last component")
	ErrComponentCount = errors.New("format: wrong number of key components")
	ErrKeyShape       = errors.New("format: key does not match any shape of its tag")
	ErrKeyString      = errors.New("format: key string is not UTF-8 or longer than 65535 bytes")
	ErrIntRange       = errors.New("format: key integer out of its component's range")
)

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
	if k.Raw != nil || !k.Tag.Known() {
		if k.Name != "" || k.Parts != nil || k.Strs != nil {
			return dst, keyErr(v, k.Tag, ErrKeyShape, "a raw key carries only Raw")
		}
		if k.Tag.Known() && !openShapes(k.Tag) {
			// Only counter and system keys may be of no known shape: a key of
			// a DuckLake table that does not parse is corrupt, not unknown.
			return dst, keyErr(v, k.Tag, ErrKeyShape, "Raw is for unknown tags, counters and system keys")
		}
		return append(append(growBytes(dst, 1+len(k.Raw)), byte(k.Tag)), k.Raw...), nil
	}
	s := shapeOf(k)
	if s == nil {
		return dst, keyErr(v, k.Tag, ErrKeyShape, fmt.Sprintf("no shape named %q", k.Name))
	}
	out, err := appendShape(append(growBytes(dst, 1+len(s.sel)+10*len(k.Parts)), byte(k.Tag)), v, s, k, len(k.Parts), len(k.Strs), true)
	if err != nil {
		return dst, keyErr(v, k.Tag, err, "")
	}
	return out, nil
}

// KeyPrefix encodes the tag, the shape's selector and the first components
// of a key: parts and strs in key order, stopping after the last one given.
// With V1, KeyPrefix(V1, Key{Tag: TagDataFile, Parts: []uint64{id}}) covers
// every data file of table id: every key that starts with those components
// starts with the returned bytes, and no other key of that shape does.
func KeyPrefix(v Version, k Key) ([]byte, error) {
	if !Supported(v) {
		return nil, errUnsupported(v)
	}
	s := shapeOf(k)
	if s == nil || s == &rawShape {
		return nil, keyErr(v, k.Tag, ErrKeyShape, "prefixes are for keys of a known shape")
	}
	out, err := appendShape([]byte{byte(k.Tag)}, v, s, k, len(k.Parts), len(k.Strs), false)
	if err != nil {
		return nil, keyErr(v, k.Tag, err, "")
	}
	return out, nil
}

// appendShape appends the selector and the components of k; when full, k
// must have exactly the shape's components, else a prefix of them.
func appendShape(dst []byte, v Version, s *shape, k Key, nParts, nStrs int, full bool) ([]byte, error) {
	dst = append(dst, s.sel...)
	pi, si := 0, 0
	for _, f := range s.fields {
		switch f.kind {
		case kLit:
			if pi == nParts && si == nStrs && !full {
				return dst, nil
			}
			dst = append(dst, f.lit...)
			continue
		case kStr:
			if si == nStrs {
				if full {
					return dst, fmt.Errorf("%w: missing %s", ErrComponentCount, f.name)
				}
				return dst, nil
			}
			str := k.Strs[si]
			si++
			if len(str) > math.MaxUint16 || !utf8.ValidString(str) {
				return dst, fmt.Errorf("%w: %s", ErrKeyString, f.name)
			}
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(str)))
			dst = append(dst, str...)
			continue
		}
		if pi == nParts {
			if full {
				return dst, fmt.Errorf("%w: missing %s", ErrComponentCount, f.name)
			}
			return dst, nil
		}
		x := k.Parts[pi]
		pi++
		switch f.kind {
		case kU8:
			if x > math.MaxUint8 {
				return dst, fmt.Errorf("%w: %s %d is not a byte", ErrIntRange, f.name, x)
			}
			dst = append(dst, byte(x))
		case kU32:
			if x > math.MaxUint32 {
				return dst, fmt.Errorf("%w: %s %d is not a u32", ErrIntRange, f.name, x)
			}
			dst = binary.BigEndian.AppendUint32(dst, uint32(x))
		case kU64:
			dst = appendU64(dst, v, x)
		}
	}
	if pi != nParts || si != nStrs {
		return dst, fmt.Errorf("%w: have %d integers and %d strings, the shape has fewer", ErrComponentCount, nParts, nStrs)
	}
	return dst, nil
}

// appendU64 is the one place the formats' integer components differ.
func appendU64(dst []byte, v Version, x uint64) []byte {
	if v == V1 {
		return binary.BigEndian.AppendUint64(dst, x)
	}
	// Format 2: a length byte, then the significant big-endian bytes. A
	// longer number has a larger length byte and equal lengths compare
	// big-endian, so byte order is numeric order; the length makes each
	// component self-delimiting, so tuples sort component-wise too.
	l := intLen(x)
	dst = append(dst, byte(l))
	for i := l - 1; i >= 0; i-- {
		dst = append(dst, byte(x>>(8*i)))
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
	if !t.Known() {
		return Key{Tag: t, Raw: append([]byte{}, rest...)}, nil
	}
	var firstErr error
	for i := range shapes[t] {
		s := &shapes[t][i]
		if !strings.HasPrefix(string(rest), s.sel) {
			continue
		}
		k, err := decodeShape(v, t, s, rest[len(s.sel):])
		if err == nil {
			return k, nil
		}
		if firstErr == nil {
			firstErr = err
		}
	}
	if openShapes(t) {
		// DESIGN 2.3: counter and system keys of newer binaries are carried.
		return Key{Tag: t, Raw: append([]byte{}, rest...)}, nil
	}
	if firstErr == nil {
		firstErr = ErrKeyShape
	}
	return Key{}, keyErr(v, t, firstErr, fmt.Sprintf("%d bytes after the tag", len(rest)))
}

func decodeShape(v Version, t Tag, s *shape, b []byte) (Key, error) {
	k := Key{Tag: t, Name: s.name}
	for _, f := range s.fields {
		switch f.kind {
		case kLit:
			if !strings.HasPrefix(string(b), f.lit) {
				return Key{}, fmt.Errorf("%w: expected %q", ErrKeyShape, f.lit)
			}
			b = b[len(f.lit):]
		case kStr:
			if len(b) < 2 {
				return Key{}, fmt.Errorf("%w: %s length", ErrKeyTruncated, f.name)
			}
			n := int(binary.BigEndian.Uint16(b))
			if len(b) < 2+n {
				return Key{}, fmt.Errorf("%w: %s needs %d bytes, %d left", ErrKeyTruncated, f.name, n, len(b)-2)
			}
			str := string(b[2 : 2+n])
			if !utf8.ValidString(str) {
				return Key{}, fmt.Errorf("%w: %s", ErrKeyString, f.name)
			}
			k.Strs = append(k.Strs, str)
			b = b[2+n:]
		case kU8:
			if len(b) < 1 {
				return Key{}, fmt.Errorf("%w: %s", ErrKeyTruncated, f.name)
			}
			k.Parts = append(k.Parts, uint64(b[0]))
			b = b[1:]
		case kU32:
			if len(b) < 4 {
				return Key{}, fmt.Errorf("%w: %s", ErrKeyTruncated, f.name)
			}
			k.Parts = append(k.Parts, uint64(binary.BigEndian.Uint32(b)))
			b = b[4:]
		case kU64:
			x, n, err := decodeU64(v, b, f.name)
			if err != nil {
				return Key{}, err
			}
			k.Parts = append(k.Parts, x)
			b = b[n:]
		}
	}
	if len(b) != 0 {
		return Key{}, fmt.Errorf("%w (%d bytes)", ErrTrailingBytes, len(b))
	}
	return k, nil
}

func decodeU64(v Version, b []byte, name string) (uint64, int, error) {
	if v == V1 {
		if len(b) < 8 {
			return 0, 0, fmt.Errorf("%w: %s needs 8 bytes, %d left", ErrKeyTruncated, name, len(b))
		}
		return binary.BigEndian.Uint64(b), 8, nil
	}
	if len(b) == 0 {
		return 0, 0, fmt.Errorf("%w: missing %s", ErrKeyTruncated, name)
	}
	l := int(b[0])
	if l > 8 {
		return 0, 0, fmt.Errorf("%w: %s has length %d", ErrIntLength, name, l)
	}
	if len(b) < 1+l {
		return 0, 0, fmt.Errorf("%w: %s needs %d bytes, %d left", ErrKeyTruncated, name, l, len(b)-1)
	}
	if l > 0 && b[1] == 0 {
		return 0, 0, fmt.Errorf("%w: %s has a leading zero byte", ErrNonMinimalInt, name)
	}
	var x uint64
	for _, c := range b[1 : 1+l] {
		x = x<<8 | uint64(c)
	}
	return x, 1 + l, nil
}

// openShapes reports whether keys of t may have shapes this binary does not
// know: counters and system keys, which newer binaries add (DESIGN 2.3).
func openShapes(t Tag) bool { return t == TagCounter || t == TagSystem }

func keyErr(v Version, t Tag, err error, detail string) error {
	if detail == "" {
		return fmt.Errorf("%w (%s %s key)", err, v, t)
	}
	return fmt.Errorf("%w (%s %s key: %s)", err, v, t, detail)
}

// CounterKey returns the format-v key of counter name (NameNextSnapshotID,
// ...); per-table counters take the table id.
func CounterKey(v Version, name string, tableID ...uint64) []byte {
	return mustKey(v, Key{Tag: TagCounter, Name: name, Parts: tableID})
}

// SystemKey returns the key of the system value name that has no integer
// components (SystemWriterEpoch, ...): 0xFF followed by the name, the same
// in both formats.
func SystemKey(name string) []byte { return append([]byte{byte(TagSystem)}, name...) }

// FormatVersionKey returns 0xFF "catalog-format-version", the key every
// component reads before anything else (DESIGN 2.4).
func FormatVersionKey() []byte { return SystemKey(SystemCatalogFormatVersion) }

func mustKey(v Version, k Key) []byte {
	b, err := EncodeKey(v, k)
	if err != nil {
		panic(err) // callers pass constants
	}
	return b
}
