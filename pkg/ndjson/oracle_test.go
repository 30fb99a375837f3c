package ndjson_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The oracle: a record line as the package documentation and line.go
// define it, built on the contract wire.go names instead of on its code: a
// row is protojson with proto field names, compacted (json.Compact drops
// the spaces protojson adds at random), strings are quoted as protojson
// quotes them, and a line is read back with encoding/json and
// protojson.Unmarshal. Both are lenient where the codec is strict (member
// order, one spelling); oracleCanonical is what holds a read line to the
// one spelling.

var rowJSON = protojson.MarshalOptions{UseProtoNames: true}

// oracleLine is the line, newline included, of a stored entry.
func oracleLine(v format.Version, key, value []byte) ([]byte, error) {
	k, err := format.DecodeKey(v, key)
	if err != nil {
		return nil, err
	}
	t := k.Tag
	var b bytes.Buffer
	b.WriteString(`{"table":`)
	if k.Raw != nil {
		if t.Known() {
			b.Write(quote(t.Name()))
		} else {
			b.WriteString("null")
		}
		fmt.Fprintf(&b, `,"tag":%d,"raw_key":"%s","raw_value":"%s"}`+"\n", t,
			base64.StdEncoding.EncodeToString(key), base64.StdEncoding.EncodeToString(value))
		return b.Bytes(), nil
	}
	row, err := format.DecodeValue(v, k, value)
	if err != nil {
		return nil, err
	}
	canonical, err := format.EncodeValue(v, k, row)
	if err != nil {
		return nil, err
	}
	js, err := rowJSON.Marshal(row)
	if err != nil {
		return nil, err
	}
	b.Write(quote(t.Name()))
	fmt.Fprintf(&b, `,"tag":%d`, t)
	if k.Name != "" {
		b.WriteString(`,"name":`)
		b.Write(quote(k.Name))
	}
	if fields := format.Fields(t, k.Name); len(fields) > 0 {
		b.WriteString(`,"key":{`)
		parts, strs := k.Parts, k.Strs
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(quote(f.Name))
			b.WriteByte(':')
			if f.Str {
				b.Write(quote(strs[0]))
				strs = strs[1:]
			} else {
				b.Write(quote(strconv.FormatUint(parts[0], 10)))
				parts = parts[1:]
			}
		}
		b.WriteByte('}')
	}
	b.WriteString(`,"row":`)
	if err := json.Compact(&b, js); err != nil {
		return nil, err
	}
	if u := row.ProtoReflect().GetUnknown(); len(u) > 0 {
		fmt.Fprintf(&b, `,"unknown":"%s"`, base64.StdEncoding.EncodeToString(u))
	}
	// The stored bytes travel where the row's JSON cannot give them back.
	if !bytes.Equal(canonical, value) || nestedUnknown(row.ProtoReflect(), 0) {
		fmt.Fprintf(&b, `,"raw_value":"%s"`, base64.StdEncoding.EncodeToString(value))
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}

// quote is s as a JSON string, as protojson writes it.
func quote(s string) []byte {
	b, err := protojson.Marshal(wrapperspb.String(s))
	if err != nil {
		panic(err) // key strings and names are UTF-8
	}
	return b
}

// nestedUnknown reports whether a message nested in m holds unknown
// fields, which protojson does not write.
func nestedUnknown(m protoreflect.Message, depth int) bool {
	found := depth > 0 && len(m.GetUnknown()) > 0
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch {
		case fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind:
		case fd.IsList():
			for i := range v.List().Len() {
				found = found || nestedUnknown(v.List().Get(i).Message(), depth+1)
			}
		case fd.IsMap():
		default:
			found = found || nestedUnknown(v.Message(), depth+1)
		}
		return !found
	})
	return found
}

// oracleLineFields are a record line's members, as encoding/json reads
// them (in any order, the last of a repeated one).
type oracleLineFields struct {
	Table    *string                    `json:"table"`
	Tag      *uint8                     `json:"tag"`
	Name     string                     `json:"name"`
	Key      map[string]json.RawMessage `json:"key"`
	Row      json.RawMessage            `json:"row"`
	Unknown  []byte                     `json:"unknown"`
	RawKey   []byte                     `json:"raw_key"`
	RawValue []byte                     `json:"raw_value"`
}

// oracleRead is the stored entry a line (without its newline) gives.
func oracleRead(v format.Version, line []byte) (key, value []byte, err error) {
	var l oracleLineFields
	d := json.NewDecoder(bytes.NewReader(line))
	d.DisallowUnknownFields()
	if err := d.Decode(&l); err != nil {
		return nil, nil, err
	}
	if d.More() {
		return nil, nil, errors.New("data after the JSON object")
	}
	if l.Tag == nil {
		return nil, nil, errors.New(`no "tag"`)
	}
	if l.RawKey != nil {
		return l.RawKey, l.RawValue, nil
	}
	k := format.Key{Tag: format.Tag(*l.Tag), Name: l.Name}
	for _, f := range format.Fields(k.Tag, k.Name) {
		var s string
		if err := json.Unmarshal(l.Key[f.Name], &s); err != nil {
			return nil, nil, fmt.Errorf("key %s: %w", f.Name, err)
		}
		if f.Str {
			k.Strs = append(k.Strs, s)
			continue
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return nil, nil, fmt.Errorf("key %s: %w", f.Name, err)
		}
		k.Parts = append(k.Parts, n)
	}
	if key, err = format.EncodeKey(v, k); err != nil {
		return nil, nil, err
	}
	if l.RawValue != nil {
		return key, l.RawValue, nil // the stored bytes rule
	}
	row, err := format.NewRow(v, k)
	if err != nil {
		return nil, nil, err
	}
	if err := protojson.Unmarshal(l.Row, row); err != nil {
		return nil, nil, err
	}
	// proto.Marshal writes unknown fields after the known ones.
	row.ProtoReflect().SetUnknown(l.Unknown)
	value, err = format.EncodeValue(v, k, row)
	return key, value, err
}

// oracleCanonical reports whether line (without its newline) reads as an
// entry whose line it is, but for JSON's insignificant spaces: the one
// spelling of that entry.
func oracleCanonical(v format.Version, line []byte) (key, value []byte, ok bool) {
	key, value, err := oracleRead(v, line)
	if err != nil {
		return nil, nil, false
	}
	want, err := oracleLine(v, key, value)
	if err != nil {
		return nil, nil, false
	}
	var compact bytes.Buffer
	if json.Compact(&compact, line) != nil {
		return nil, nil, false
	}
	return key, value, bytes.Equal(compact.Bytes(), want[:len(want)-1])
}
