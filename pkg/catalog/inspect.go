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
	// Tables counts the keys of every known tag but counters and system
	// keys, by tag name.
	Tables map[string]uint64 `json:"tables"`
	// UnknownTags counts the keys of tags this binary does not know, by
	// Tag.String ("tag 0x0E"), so that they are never invisible.
	UnknownTags map[string]uint64 `json:"unknown_tags"`
	Counters    map[string]uint64 `json:"counters"`
	System      map[string]uint64 `json:"system"`
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
	if s.Counters, err = c.values(ctx, format.TagCounter); err != nil {
		return nil, err
	}
	if s.System, err = c.values(ctx, format.TagSystem); err != nil {
		return nil, err
	}
	return s, nil
}

func (c *Catalog) values(ctx context.Context, t format.Tag) (map[string]uint64, error) {
	m := map[string]uint64{}
	for row, err := range c.Scan(ctx, t) {
		if err != nil {
			return nil, err
		}
		m[row.Key.Name] = row.Msg.(*wrapperspb.UInt64Value).GetValue() // format's type for both tags
	}
	return m, nil
}

// MarshalJSON renders the row as one JSON object: its table, the key in hex, its
// components by name (or its counter or system name), the row with proto
// field names, and any fields unknown to this binary in hex, so that a
// newer binary's additions show. The output is canonical (protojson's own
// is not byte-stable), so equal rows give equal bytes.
func (r Row) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"table":"`)
	b.WriteString(r.Key.Tag.Name())
	b.WriteString(`","key":"`)
	b.WriteString(hex.EncodeToString(r.Raw.Key))
	b.WriteByte('"')
	if names := format.ComponentNames(r.Version, r.Key.Tag); names != nil {
		b.WriteString(`,"parts":{`)
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(n))
			b.WriteByte(':')
			b.WriteString(strconv.FormatUint(r.Key.Parts[i], 10))
		}
		b.WriteByte('}')
	} else {
		name, _ := json.Marshal(r.Key.Name)
		b.WriteString(`,"name":`)
		b.Write(name)
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
