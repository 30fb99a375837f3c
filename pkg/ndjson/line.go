package ndjson

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Record lines, for example:
//
//	{"table":"ducklake_data_file","tag":9,"key":{"data_file_id":"7"},"row":{"data_file_id":"7","table_id":"3"},"unknown":"oDgB"}
//	{"table":"rocklake_counter","tag":254,"name":"next-file-id","row":"8"}
//	{"table":null,"tag":200,"raw_key":"yAE=","raw_value":"AVNES1YK"}
//
// Members come in the order of lineMembers, each at most once, so that a
// record has one spelling. Key components are decimal strings, as protobuf
// JSON writes 64-bit integers, since JSON numbers lose precision past 2^53
// in most parsers. "raw_value" appears on a known-tag record only when the
// stored value is not the canonical encoding of its row (Record.verbatim).
var lineMembers = [...]string{"table", "tag", "key", "name", "row", "unknown", "raw_key", "raw_value"}

const (
	mTable = iota
	mTag
	mKey
	mName
	mRow
	mUnknown
	mRawKey
	mRawValue
)

// b64 is strict so that each byte string has one spelling.
var b64 = base64.StdEncoding.Strict()

// componentNames caches format.ComponentNames, which copies, by version and
// tag.
var componentNames = func() (c [][256][]string) {
	for v := format.Version(0); v == 0 || format.Supported(v); v++ {
		c = append(c, [256][]string{})
		for t := range 256 {
			c[v][t] = format.ComponentNames(v, format.Tag(t))
		}
	}
	return c
}()

// appendRecordLine appends r's line, newline included, to dst.
func appendRecordLine(dst []byte, r Record) ([]byte, error) {
	t := r.key.Tag
	dst = append(dst, `{"table":`...)
	if !t.Known() {
		dst = append(dst, `null,"tag":`...)
		dst = strconv.AppendUint(dst, uint64(t), 10)
		dst = appendBase64Member(dst, "raw_key", r.rawKey)
		dst = appendBase64Member(dst, "raw_value", r.rawValue)
		return append(dst, "}\n"...), nil
	}
	dst = append(dst, '"')
	dst = append(dst, t.Name()...)
	dst = append(dst, `","tag":`...)
	dst = strconv.AppendUint(dst, uint64(t), 10)
	if names := componentNames[r.version][t]; names == nil {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, r.key.Name)
	} else {
		dst = append(dst, `,"key":{`...)
		for i, name := range names {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, '"')
			dst = append(dst, name...)
			dst = append(dst, '"', ':')
			dst = appendQuotedUint(dst, r.key.Parts[i])
		}
		dst = append(dst, '}')
	}
	dst = append(dst, `,"row":`...)
	dst, err := appendRow(dst, r.row.ProtoReflect())
	if err != nil {
		return dst, fmt.Errorf("ndjson: key %x: row to JSON: %w", r.rawKey, err)
	}
	if u := r.Unknown(); u != nil {
		dst = appendBase64Member(dst, "unknown", u)
	}
	if r.verbatim {
		dst = appendBase64Member(dst, "raw_value", r.rawValue)
	}
	return append(dst, "}\n"...), nil
}

func appendBase64Member(dst []byte, name string, b []byte) []byte {
	dst = append(dst, `,"`...)
	dst = append(dst, name...)
	dst = append(dst, `":"`...)
	dst = b64.AppendEncode(dst, b)
	return append(dst, '"')
}

// recordLine is what a record line holds, before it is checked.
type recordLine struct {
	seen                      [len(lineMembers)]bool
	table                     []byte // nil for null; aliases the line
	tag                       format.Tag
	key                       format.Key
	row                       proto.Message // empty until the payload is unmarshalled
	payload                   []byte        // the row's encoding, from its JSON
	unknown, rawKey, rawValue []byte
}

// lineDecoder decodes the record lines of a format-v shard, reusing its
// buffer for each row's encoding.
type lineDecoder struct {
	v    format.Version
	wire []byte
}

func (d *lineDecoder) decode(line []byte) (Record, error) {
	s := scanner{b: line}
	l := recordLine{payload: d.wire[:0]}
	err := s.members(d.v, &l)
	d.wire = l.payload
	if err != nil {
		return Record{}, err
	}
	if s.peek() != 0 {
		return Record{}, s.errorf("data after the JSON object")
	}
	if !l.seen[mTag] {
		return Record{}, errors.New(`no "tag"`)
	}
	if !l.tag.Known() {
		return unknownTagRecord(d.v, &l)
	}
	if string(l.table) != l.tag.Name() {
		return Record{}, fmt.Errorf(`tag %d is table %q, the line says %s`, l.tag, l.tag.Name(), quoteOrNull(l.table))
	}
	switch {
	case !l.seen[mKey] && !l.seen[mName]:
		return Record{}, errors.New(`no "key" or "name"`)
	case !l.seen[mRow]:
		return Record{}, errors.New(`no "row"`)
	case l.seen[mRawKey]:
		return Record{}, fmt.Errorf(`a %s record has no "raw_key"`, l.tag)
	}
	rawKey, err := format.EncodeKey(d.v, l.key)
	if err != nil {
		return Record{}, err
	}
	// proto.Marshal writes unknown fields after the known ones.
	payload := append(l.payload, l.unknown...)
	d.wire = payload
	if err := proto.Unmarshal(payload, l.row); err != nil {
		return Record{}, fmt.Errorf(`"unknown" is not protobuf: %w`, err)
	}
	if !bytes.Equal(l.row.ProtoReflect().GetUnknown(), l.unknown) {
		// They would decode as known fields: not the same row.
		return Record{}, errors.New(`"unknown" holds fields the row type knows`)
	}
	r := Record{version: d.v, key: l.key, row: l.row, rawKey: rawKey}
	if l.rawValue == nil {
		r.rawValue = format.EncodeEnvelope(d.v, payload)
		return r, nil
	}
	// The stored bytes rule; the row must say the same.
	stored, err := format.DecodeValue(d.v, l.tag, l.rawValue)
	if err != nil {
		return Record{}, fmt.Errorf("raw_value: %w", err)
	}
	if !proto.Equal(stored, l.row) {
		return Record{}, errors.New(`"raw_value" and "row"/"unknown" differ`)
	}
	r.rawValue, r.verbatim = l.rawValue, true
	return r, nil
}

// members reads the line's object into l.
func (s *scanner) members(v format.Version, l *recordLine) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	last := -1
	for first := true; ; first = false {
		more, err := s.more('}', first)
		if err != nil || !more {
			return err
		}
		name, err := s.key()
		if err != nil {
			return err
		}
		m := -1
		for i, n := range lineMembers {
			if n == string(name) {
				m = i
			}
		}
		switch {
		case m < 0:
			return s.errorf("unknown member %q", name)
		case m <= last:
			return s.errorf("member %q out of order or repeated (the order is %v)", name, lineMembers)
		case m > mTag && !l.seen[mTag]:
			return s.errorf(`member %q before "tag"`, name)
		}
		last, l.seen[m] = m, true
		if err := s.member(v, m, l); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
}

func (s *scanner) member(v format.Version, m int, l *recordLine) error {
	var err error
	switch m {
	case mTable:
		if !s.literal("null") {
			l.table, err = s.rawString()
		}
	case mTag:
		var n int64
		if n, err = s.number(); err == nil && (n < 0 || n > 0xFF) {
			err = fmt.Errorf("%d is not a byte", n)
		}
		l.tag = format.Tag(n)
	case mKey:
		l.key, err = s.parseKey(v, l.tag)
	case mName:
		if names := componentNames[v][l.tag]; !l.tag.Known() || names != nil {
			return fmt.Errorf(`a %s record has no "name"`, l.tag)
		}
		l.key.Tag = l.tag
		l.key.Name, err = s.string()
	case mRow:
		if l.row, err = format.NewRow(v, l.tag); err != nil {
			return err
		}
		l.payload, err = s.appendRowWire(l.payload, l.row.ProtoReflect().Descriptor())
	case mUnknown:
		l.unknown, err = s.base64()
	case mRawKey:
		l.rawKey, err = s.base64()
	case mRawValue:
		l.rawValue, err = s.base64()
	}
	return err
}

// parseKey reads the components of a key with tag t, by name, in order.
func (s *scanner) parseKey(v format.Version, t format.Tag) (format.Key, error) {
	names := componentNames[v][t]
	if names == nil {
		return format.Key{}, fmt.Errorf(`a %s record has no "key"`, t)
	}
	if err := s.expect('{'); err != nil {
		return format.Key{}, err
	}
	parts := make([]uint64, len(names))
	for i, name := range names {
		if i > 0 {
			if err := s.expect(','); err != nil {
				return format.Key{}, fmt.Errorf("a %s %s key is %v: %w", v, t, names, err)
			}
		}
		k, err := s.key()
		if err == nil && string(k) != name {
			err = fmt.Errorf("found %q", k)
		}
		if err == nil {
			parts[i], err = s.uintString()
		}
		if err != nil {
			return format.Key{}, fmt.Errorf("a %s %s key is %v: %w", v, t, names, err)
		}
	}
	if err := s.expect('}'); err != nil {
		return format.Key{}, fmt.Errorf("a %s %s key is %v: %w", v, t, names, err)
	}
	return format.Key{Tag: t, Parts: parts}, nil
}

// base64 reads a string of base64 and returns the bytes, which do not alias
// the line.
func (s *scanner) base64() ([]byte, error) {
	b, err := s.rawString()
	if err != nil {
		return nil, err
	}
	out, err := b64.AppendDecode(make([]byte, 0, b64.DecodedLen(len(b))), b)
	if err != nil {
		return nil, s.errorf("bad base64: %v", err)
	}
	return out, nil
}

func unknownTagRecord(v format.Version, l *recordLine) (Record, error) {
	// "key", "name" and "row" have failed already: they need a known tag.
	if l.table != nil || l.seen[mUnknown] {
		return Record{}, fmt.Errorf(`a record of unknown %s has only "table":null, "tag", "raw_key" and "raw_value"`, l.tag)
	}
	if len(l.rawKey) == 0 || l.rawKey[0] != byte(l.tag) || l.rawValue == nil {
		return Record{}, fmt.Errorf(`a record of unknown %s needs "raw_key" starting with that tag, and "raw_value"`, l.tag)
	}
	k, err := format.DecodeKey(v, l.rawKey)
	if err != nil {
		return Record{}, err
	}
	return Record{version: v, key: k, rawKey: l.rawKey, rawValue: l.rawValue}, nil
}

func quoteOrNull(b []byte) string {
	if b == nil {
		return "null"
	}
	return strconv.Quote(string(b))
}
