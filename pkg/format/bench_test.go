package format_test

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/internal/testenv/catalogfixture"
	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Benchmarks per format and key shape, on values with every field set.
// Run: go test ./pkg/format -run '^$' -bench . -benchmem
func BenchmarkCodec(b *testing.B) {
	for _, v := range versions {
		for _, k := range catalogfixture.Keys(7) {
			name := v.String() + "/" + k.Tag.Name()
			if k.Name != "" {
				name += "." + k.Name
			}
			raw, err := format.EncodeKey(v, k)
			if err != nil {
				b.Fatal(err)
			}
			row, _ := format.NewRow(v, k)
			catalogfixture.Fill(row.ProtoReflect(), 7)
			if format.ValueKindOf(k) == format.ValueVersion {
				row, _ = format.DecodeValue(v, k, format.EncodeFormatVersion(uint32(v)))
			}
			val, err := format.EncodeValue(v, k, row)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(name+"/EncodeKey", func(b *testing.B) {
				b.ReportAllocs()
				var buf []byte
				for b.Loop() {
					buf, _ = format.AppendKey(buf[:0], v, k)
				}
			})
			b.Run(name+"/DecodeKey", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := format.DecodeKey(v, raw); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(name+"/DecodeValue", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := format.DecodeValue(v, k, val); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
