package ndjson

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// ExportFormatVersion is the version of the shard file layout this package
// writes, and the only one it reads. A change to the layout that an older
// reader would misread is a new version.
const ExportFormatVersion = 1

// Header is what a shard file's first line says about its records.
type Header struct {
	CatalogFormat format.Version // format of every record's key and value
	ShardIndex    int            // 0-based, below ShardCount
	ShardCount    int
	// KeyStart and KeyEnd bound the export scan that made the shard, as raw
	// keys of the source catalog: from KeyStart (inclusive; empty is the
	// first key) to KeyEnd (exclusive; empty is past the last key).
	KeyStart, KeyEnd []byte
	CheckpointID     string // the source checkpoint the export read
	Source           string // the source catalog's URL
	CreatedBy        string // the program and version that wrote the file
}

// headerLine is the header as JSON, for example:
//
//	{"rocklake_export_format":1,"catalog_format_version":1,"shard_index":0,"shard_count":4,"key_start":"","key_end":"09000000000000c350","checkpoint_id":"0195…","source":"s3://b/catalog","created_by":"rocklake-migrate 0.1.0"}
type headerLine struct {
	ExportFormat  *int   `json:"rocklake_export_format"`
	CatalogFormat uint64 `json:"catalog_format_version"`
	ShardIndex    int    `json:"shard_index"`
	ShardCount    int    `json:"shard_count"`
	KeyStart      string `json:"key_start"`
	KeyEnd        string `json:"key_end"`
	CheckpointID  string `json:"checkpoint_id"`
	Source        string `json:"source"`
	CreatedBy     string `json:"created_by,omitempty"`
}

// decodeStrict decodes one JSON object, rejecting fields v lacks and
// anything after the object.
func decodeStrict(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON object")
	}
	return nil
}

func (h Header) validate() error {
	if !format.Supported(h.CatalogFormat) {
		return fmt.Errorf("catalog format: %w %d", format.ErrUnsupportedVersion, uint64(h.CatalogFormat))
	}
	if h.ShardCount < 1 || h.ShardIndex < 0 || h.ShardIndex >= h.ShardCount {
		return fmt.Errorf("shard %d of %d", h.ShardIndex, h.ShardCount)
	}
	if len(h.KeyEnd) > 0 && bytes.Compare(h.KeyStart, h.KeyEnd) >= 0 {
		return fmt.Errorf("empty key range [%x, %x)", h.KeyStart, h.KeyEnd)
	}
	return nil
}

func (h Header) marshal() ([]byte, error) {
	if err := h.validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	v := ExportFormatVersion
	b, err := json.Marshal(headerLine{
		ExportFormat:  &v,
		CatalogFormat: uint64(h.CatalogFormat),
		ShardIndex:    h.ShardIndex,
		ShardCount:    h.ShardCount,
		KeyStart:      hex.EncodeToString(h.KeyStart),
		KeyEnd:        hex.EncodeToString(h.KeyEnd),
		CheckpointID:  h.CheckpointID,
		Source:        h.Source,
		CreatedBy:     h.CreatedBy,
	})
	return append(b, '\n'), err
}

func parseHeader(line []byte) (Header, error) {
	// The version first, leniently: a newer layout may have other fields,
	// and the error should say "version 2", not "unknown field".
	var probe struct {
		ExportFormat *int `json:"rocklake_export_format"`
	}
	if json.Unmarshal(line, &probe) != nil || probe.ExportFormat == nil {
		return Header{}, fmt.Errorf("%w: line 1 is not a rocklake-migrate shard header", ErrHeader)
	}
	if *probe.ExportFormat != ExportFormatVersion {
		return Header{}, fmt.Errorf("%w: export format version %d, this binary reads only %d",
			ErrHeader, *probe.ExportFormat, ExportFormatVersion)
	}
	var l headerLine
	if err := decodeStrict(line, &l); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	start, err1 := hex.DecodeString(l.KeyStart)
	end, err2 := hex.DecodeString(l.KeyEnd)
	if err := errors.Join(err1, err2); err != nil {
		return Header{}, fmt.Errorf("%w: key range: %w", ErrHeader, err)
	}
	h := Header{
		CatalogFormat: format.Version(l.CatalogFormat),
		ShardIndex:    l.ShardIndex,
		ShardCount:    l.ShardCount,
		KeyStart:      start,
		KeyEnd:        end,
		CheckpointID:  l.CheckpointID,
		Source:        l.Source,
		CreatedBy:     l.CreatedBy,
	}
	// Empty bounds read back as nil, as they are usually written.
	if len(h.KeyStart) == 0 {
		h.KeyStart = nil
	}
	if len(h.KeyEnd) == 0 {
		h.KeyEnd = nil
	}
	if err := h.validate(); err != nil {
		return Header{}, fmt.Errorf("%w: %w", ErrHeader, err)
	}
	return h, nil
}

// Trailer is what a shard file's last line says about its records.
type Trailer struct {
	Records uint64            `json:"records"` // number of record lines
	Counts  map[string]uint64 `json:"counts"`  // records per table (format.Tag's String)
	SHA256  string            `json:"sha256"`  // hex SHA-256 of the record lines, newlines included
}

// trailerLine is the trailer as JSON, for example:
//
//	{"trailer":{"records":2,"counts":{"ducklake_data_file":1,"rocklake_counter":1},"sha256":"9f86d0…"}}
type trailerLine struct {
	Trailer *Trailer `json:"trailer"`
}

func (t Trailer) marshal() ([]byte, error) {
	b, err := json.Marshal(trailerLine{&t}) // sorts Counts: same records, same bytes
	return append(b, '\n'), err
}

func parseTrailer(line []byte) (Trailer, error) {
	var l trailerLine
	if err := decodeStrict(line, &l); err != nil {
		return Trailer{}, err
	}
	if l.Trailer == nil {
		return Trailer{}, errors.New(`no "trailer"`)
	}
	return *l.Trailer, nil
}

// tagCounts counts records per tag without a map lookup per record.
type tagCounts [256]uint64

func (c *tagCounts) toMap() map[string]uint64 {
	m := map[string]uint64{}
	for t, n := range c {
		if n > 0 {
			m[format.Tag(t).String()] = n
		}
	}
	return m
}
