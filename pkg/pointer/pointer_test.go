package pointer_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/pointer"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 600_000_000, time.UTC)

func samplePointer() pointer.Pointer {
	return pointer.Pointer{
		Catalog:             "s3://bucket/catalogs/prod-v2",
		FormatVersion:       format.V2,
		MigrationID:         "mig-2",
		PreviousCatalog:     "s3://bucket/catalogs/prod-v1",
		PreviousMigrationID: "initial",
		UpdatedAt:           t0,
	}
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	p := samplePointer()
	b, err := p.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "catalog": "s3://bucket/catalogs/prod-v2",
  "format_version": 2,
  "migration_id": "mig-2",
  "previous_catalog": "s3://bucket/catalogs/prod-v1",
  "previous_migration_id": "initial",
  "updated_at": "2026-01-02T03:04:05.6Z"
}
`
	if string(b) != want {
		t.Fatalf("encoded:\n%s\nwant:\n%s", b, want)
	}
	got, err := pointer.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if got != p {
		t.Fatalf("decoded %+v, want %+v", got, p)
	}

	// The first pointer has no previous fields, and they are left out.
	first := pointer.Pointer{Catalog: "file:///var/cat", FormatVersion: format.V1, UpdatedAt: t0}
	b, err = first.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "previous") || strings.Contains(string(b), "migration_id") {
		t.Fatalf("empty optional fields written: %s", b)
	}
	if got, err := pointer.Decode(b); err != nil || got != first {
		t.Fatalf("decode first pointer: %+v, %v", got, err)
	}

	// A time in another zone is written as UTC, and as an RFC 3339 string.
	p.UpdatedAt = time.Date(2026, 1, 2, 5, 4, 5, 0, time.FixedZone("x", 2*3600))
	b, _ = p.Encode()
	if !strings.Contains(string(b), `"updated_at": "2026-01-02T03:04:05Z"`) {
		t.Fatalf("updated_at not UTC: %s", b)
	}
}

func TestNext(t *testing.T) {
	p := samplePointer()
	n := p.Next("s3://bucket/catalogs/prod-v3", 3, "mig-3")
	want := pointer.Pointer{Catalog: "s3://bucket/catalogs/prod-v3", FormatVersion: 3, MigrationID: "mig-3",
		PreviousCatalog: p.Catalog, PreviousMigrationID: p.MigrationID, Generation: p.Generation + 1}
	if n != want {
		t.Fatalf("Next: %+v, want %+v", n, want)
	}
}

func TestDecodeStrict(t *testing.T) {
	valid := `"catalog":"s3://b/c","format_version":2,"updated_at":"2026-01-02T03:04:05Z"`
	cases := map[string]string{
		"empty":              ``,
		"not json":           `catalog=s3://b/c`,
		"array":              `[` + `{` + valid + `}` + `]`,
		"unknown field":      `{` + valid + `,"owner":"me"}`,
		"case-folded key":    `{"Catalog":"s3://b/c","format_version":2,"updated_at":"2026-01-02T03:04:05Z"}`,
		"repeated key":       `{` + valid + `,"catalog":"s3://b/d"}`,
		"missing catalog":    `{"format_version":2,"updated_at":"2026-01-02T03:04:05Z"}`,
		"missing version":    `{"catalog":"s3://b/c","updated_at":"2026-01-02T03:04:05Z"}`,
		"missing updated_at": `{"catalog":"s3://b/c","format_version":2}`,
		"null field":         `{` + valid + `,"migration_id":null}`,
		"version zero":       `{"catalog":"s3://b/c","format_version":0,"updated_at":"2026-01-02T03:04:05Z"}`,
		"version negative":   `{"catalog":"s3://b/c","format_version":-1,"updated_at":"2026-01-02T03:04:05Z"}`,
		"version fraction":   `{"catalog":"s3://b/c","format_version":2.5,"updated_at":"2026-01-02T03:04:05Z"}`,
		"version string":     `{"catalog":"s3://b/c","format_version":"2","updated_at":"2026-01-02T03:04:05Z"}`,
		"relative catalog":   `{"catalog":"catalogs/c","format_version":2,"updated_at":"2026-01-02T03:04:05Z"}`,
		"http catalog":       `{"catalog":"http://x/c","format_version":2,"updated_at":"2026-01-02T03:04:05Z"}`,
		"s3 without bucket":  `{"catalog":"s3:///c","format_version":2,"updated_at":"2026-01-02T03:04:05Z"}`,
		"empty catalog":      `{"catalog":"","format_version":2,"updated_at":"2026-01-02T03:04:05Z"}`,
		"bad time":           `{"catalog":"s3://b/c","format_version":2,"updated_at":"yesterday"}`,
		"bad previous":       `{` + valid + `,"previous_catalog":"nowhere"}`,
		"orphan previous id": `{` + valid + `,"previous_migration_id":"m1"}`,
		"trailing data":      `{` + valid + `} {}`,
		"trailing garbage":   `{` + valid + `}x`,
		"too big":            `{` + valid + `,"migration_id":"` + strings.Repeat("x", pointer.MaxSize) + `"}`,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := pointer.Decode([]byte(in))
			if !errors.Is(err, pointer.ErrBadPointer) {
				t.Fatalf("Decode(%.80q) = %v, want ErrBadPointer", in, err)
			}
			var pe *pointer.Error
			if !errors.As(err, &pe) || pe.ErrorName() != "BadPointer" || pe.Detail == "" {
				t.Fatalf("error %#v: want a named BadPointer with a detail", err)
			}
		})
	}
	// Whitespace around the object is fine, and so is a version this
	// binary does not support (the catalog's startup check refuses it).
	if p, err := pointer.Decode([]byte("\n {" + `"catalog":"s3://b/c","format_version":7,"updated_at":"2026-01-02T03:04:05+02:00"` + "}\n\n")); err != nil || p.FormatVersion != 7 {
		t.Fatalf("valid pointer refused: %+v %v", p, err)
	}
}

func TestJSONEmbedding(t *testing.T) {
	type report struct {
		P pointer.Pointer `json:"p"`
	}
	b, err := json.Marshal(report{P: samplePointer()})
	if err != nil {
		t.Fatal(err)
	}
	var r report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.P != samplePointer() {
		t.Fatalf("round trip through JSON: %+v", r.P)
	}
	if err := json.Unmarshal([]byte(`{"p":{"catalog":"s3://b/c"}}`), &r); !errors.Is(err, pointer.ErrBadPointer) {
		t.Fatalf("strictness lost when embedded: %v", err)
	}
}

func TestErrorNames(t *testing.T) {
	for err, name := range map[*errname.Error]string{
		pointer.ErrPointerConflict:   "PointerConflict",
		pointer.ErrUnversioned:       "PointerUnversioned",
		pointer.ErrPointerMissing:    "PointerMissing",
		pointer.ErrPointerExists:     "PointerExists",
		pointer.ErrNoPreviousVersion: "NoPreviousVersion",
		pointer.ErrBadPointer:        "BadPointer",
	} {
		if err.ErrorName() != name {
			t.Errorf("%v: ErrorName %q, want %q", err, err.ErrorName(), name)
		}
	}
	e := &pointer.Error{Kind: pointer.ErrPointerConflict, Op: "flip", URL: "s3://b/p"}
	if !errors.Is(e, pointer.ErrPointerConflict) || errors.Is(e, pointer.ErrBadPointer) {
		t.Fatal("errors.Is does not match by name")
	}
}
