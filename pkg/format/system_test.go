package format_test

import (
	"bytes"
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

func TestSystemAndCounterNames(t *testing.T) {
	wantSystem := []string{"writer-epoch", "retain-from", "catalog-format-version", "hot-key"}
	wantCounter := []string{"next-snapshot-id", "next-schema-id", "next-table-id", "next-column-id",
		"next-file-id", "next-metadata-id", "next-tag-id"}
	if got := format.SystemNames(); !slices.Equal(got, wantSystem) {
		t.Errorf("SystemNames = %v", got)
	}
	if got := format.CounterNames(); !slices.Equal(got, wantCounter) {
		t.Errorf("CounterNames = %v", got)
	}
}

func TestSystemKeysSameInBothFormats(t *testing.T) {
	if got := string(format.FormatVersionKey()); got != "\xffcatalog-format-version" {
		t.Errorf("FormatVersionKey = %q", got)
	}
	for _, name := range format.SystemNames() {
		for _, v := range versions {
			b, err := format.EncodeKey(v, format.Key{Tag: format.TagSystem, Name: name})
			if err != nil || !bytes.Equal(b, format.SystemKey(name)) {
				t.Errorf("%s system key %q: EncodeKey %q (%v), SystemKey %q", v, name, b, err, format.SystemKey(name))
			}
		}
	}
	for _, name := range format.CounterNames() {
		for _, v := range versions {
			b, err := format.EncodeKey(v, format.Key{Tag: format.TagCounter, Name: name})
			if err != nil || !bytes.Equal(b, format.CounterKey(name)) {
				t.Errorf("%s counter key %q: EncodeKey %q (%v), CounterKey %q", v, name, b, err, format.CounterKey(name))
			}
		}
	}
}

func TestUint64Values(t *testing.T) {
	for _, v := range versions {
		for _, n := range edgeValues {
			got := format.EncodeUint64(v, n)
			// The hand-written fast path must equal the generic encoder.
			want, err := format.EncodeValue(v, wrapperspb.UInt64(n))
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("%s EncodeUint64(%d) = %x, EncodeValue %x (%v)", v, n, got, want, err)
			}
			back, err := format.DecodeUint64(v, got)
			if err != nil || back != n {
				t.Fatalf("%s DecodeUint64 = %d, %v; want %d", v, back, err, n)
			}
		}
	}
	if _, err := format.DecodeUint64(format.V2, format.EncodeUint64(format.V1, 1)); !errors.Is(err, format.ErrEnvelopeVersion) {
		t.Errorf("v1 counter read as v2: %v", err)
	}
	if _, err := format.DecodeUint64(format.V1, format.EncodeEnvelope(format.V1, []byte{0x08})); err == nil {
		t.Error("truncated varint decoded")
	}
}
