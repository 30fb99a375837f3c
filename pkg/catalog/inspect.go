package catalog

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Summary is what a catalog holds, in numbers: what `inspect` reports.
type Summary struct {
	FormatVersion format.Version `json:"format_version"`
	// Tables counts the keys of every known tag, by tag name.
	Tables map[string]uint64 `json:"tables"`
	// UnknownTags counts the keys of tags this binary does not know, by
	// Tag.String ("tag 0x0E"), so that they are never invisible.
	UnknownTags map[string]uint64 `json:"unknown_tags"`
	// Counters are the counters by name; per-table counters as
	// "next_column_id[7]".
	Counters map[string]uint64 `json:"counters"`
	// System are the system keys without integer components (not the audit
	// log, packed metadata or excisions), by name, as text: integers in
	// decimal, raw values as they are when printable, else in hex.
	System map[string]string `json:"system"`
}

// Summary counts the catalog's rows and reads its counters and system keys.
func (c *Catalog) Summary(ctx context.Context) (*Summary, error) {
	s := &Summary{FormatVersion: c.version, UnknownTags: map[string]uint64{}}
	var err error
	if s.Tables, err = c.Counts(ctx); err != nil {
		return nil, err
	}
	unknown, err := c.UnknownTags(ctx)
	if err != nil {
		return nil, err
	}
	for t, n := range unknown {
		s.UnknownTags[t.String()] = n
	}
	if s.Counters, err = c.counters(ctx); err != nil {
		return nil, err
	}
	if s.System, err = c.system(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *Catalog) counters(ctx context.Context) (map[string]uint64, error) {
	m := map[string]uint64{}
	for row, err := range c.Scan(ctx, format.TagCounter) {
		if err != nil {
			return nil, err
		}
		n, ok := row.Msg.(*wrapperspb.UInt64Value)
		if !ok {
			continue // a newer binary's counter: carried, not read
		}
		name := row.Key.Name
		for _, p := range row.Key.Parts {
			name += "[" + strconv.FormatUint(p, 10) + "]"
		}
		m[name] = n.GetValue()
	}
	return m, nil
}

func (c *Catalog) system(ctx context.Context) (map[string]string, error) {
	m := map[string]string{}
	for row, err := range c.Scan(ctx, format.TagSystem) {
		if err != nil {
			return nil, err
		}
		if row.Key.Raw != nil || len(row.Key.Parts) > 0 {
			continue
		}
		switch v := row.Msg.(type) {
		case *wrapperspb.UInt64Value:
			m[row.Key.Name] = strconv.FormatUint(v.GetValue(), 10)
		case *wrapperspb.UInt32Value:
			m[row.Key.Name] = strconv.FormatUint(uint64(v.GetValue()), 10)
		case *wrapperspb.BytesValue:
			m[row.Key.Name] = printable(v.GetValue())
		default:
			m[row.Key.Name] = fmt.Sprintf("(%d bytes)", len(row.Raw.Value))
		}
	}
	return m, nil
}

func printable(b []byte) string {
	for _, c := range b {
		if c < 0x20 || c > 0x7E {
			return hex.EncodeToString(b)
		}
	}
	return string(b)
}

// MarshalJSON renders the row as one JSON object: its table, the key in hex, its
// components by name (or its counter or system name), the row with proto
// field names, and any fields unknown to this binary in hex, so that a
// newer binary's additions show. The output is canonical (protojson's own
// is not byte-stable), so equal rows give equal bytes.
func (r Row) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"table":"`)
	b.WriteString(r.Key.Tag.String())
	b.WriteString(`","key":"`)
	b.WriteString(hex.EncodeToString(r.Raw.Key))
	b.WriteByte('"')
	if r.Key.Name != "" {
		name, _ := json.Marshal(r.Key.Name)
		b.WriteString(`,"name":`)
		b.Write(name)
	}
	if fields := format.Fields(r.Key.Tag, r.Key.Name); len(fields) > 0 && r.Key.Raw == nil {
		b.WriteString(`,"parts":{`)
		pi, si := 0, 0
		for i, f := range fields {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(f.Name))
			b.WriteByte(':')
			if f.Str {
				s, _ := json.Marshal(r.Key.Strs[si])
				b.Write(s)
				si++
			} else {
				b.WriteString(strconv.FormatUint(r.Key.Parts[pi], 10))
				pi++
			}
		}
		b.WriteByte('}')
	}
	row, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(r.Msg)
	if err != nil {
		return nil, fmt.Errorf("catalog: render key %x: %w", r.Raw.Key, err)
	}
	b.WriteString(`,"row":`)
	if err := json.Compact(&b, row); err != nil {
		return nil, fmt.Errorf("catalog: render key %x: %w", r.Raw.Key, err)
	}
	if u := r.Msg.ProtoReflect().GetUnknown(); len(u) > 0 {
		b.WriteString(`,"unknown_fields":"`)
		b.WriteString(hex.EncodeToString(u))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// InspectJSON writes the catalog's Summary as one indented JSON document,
// and with tables, a "rows" object holding every row of each (one per line,
// in key order). The output depends only on the catalog's contents (no URL,
// no times; maps sorted), so equal catalogs give equal bytes.
func (c *Catalog) InspectJSON(ctx context.Context, w io.Writer, tables ...format.Tag) error {
	s, err := c.Summary(ctx)
	if err != nil {
		return err
	}
	doc, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	if len(tables) == 0 {
		bw.Write(doc)
		bw.WriteString("\n")
		return bw.Flush()
	}
	// Splice "rows" in before the document's closing brace, streaming, since
	// a table may hold millions of rows.
	bw.Write(bytes.TrimSuffix(doc, []byte("\n}")))
	bw.WriteString(",\n  \"rows\": {")
	tables = slices.Clone(tables)
	slices.Sort(tables)
	tables = slices.Compact(tables)
	for i, t := range tables {
		if i > 0 {
			bw.WriteString(",")
		}
		fmt.Fprintf(bw, "\n    %q: [", t.Name())
		n := 0
		for row, err := range c.Scan(ctx, t) {
			if err != nil {
				return err
			}
			line, err := row.MarshalJSON()
			if err != nil {
				return err
			}
			if n > 0 {
				bw.WriteString(",")
			}
			bw.WriteString("\n      ")
			bw.Write(line)
			n++
		}
		if n > 0 {
			bw.WriteString("\n    ")
		}
		bw.WriteString("]")
	}
	bw.WriteString("\n  }\n}\n")
	return bw.Flush()
}
