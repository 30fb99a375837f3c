package format_test

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// Benchmarks per format and row type; the sample rows have every field set.
// Run: go test ./pkg/format -run '^$' -bench . -benchmem

func benchEach(b *testing.B, fn func(b *testing.B, v format.Version, tag format.Tag)) {
	for _, v := range versions {
		for _, tag := range format.KnownTags() {
			b.Run(v.String()+"/"+tag.Name(), func(b *testing.B) {
				b.ReportAllocs()
				fn(b, v, tag)
			})
		}
	}
}

func BenchmarkEncodeKey(b *testing.B) {
	benchEach(b, func(b *testing.B, v format.Version, tag format.Tag) {
		k := sampleKey(v, tag, sampleRow(b, v, tag, 7), 7)
		for b.Loop() {
			if _, err := format.EncodeKey(v, k); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodeKey(b *testing.B) {
	benchEach(b, func(b *testing.B, v format.Version, tag format.Tag) {
		kb, err := format.EncodeKey(v, sampleKey(v, tag, sampleRow(b, v, tag, 7), 7))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := format.DecodeKey(v, kb); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkEncodeValue(b *testing.B) {
	benchEach(b, func(b *testing.B, v format.Version, tag format.Tag) {
		row := sampleRow(b, v, tag, 7)
		vb, err := format.EncodeValue(v, row)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(vb)))
		for b.Loop() {
			if _, err := format.EncodeValue(v, row); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecodeValue(b *testing.B) {
	benchEach(b, func(b *testing.B, v format.Version, tag format.Tag) {
		vb, err := format.EncodeValue(v, sampleRow(b, v, tag, 7))
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(vb)))
		for b.Loop() {
			if _, err := format.DecodeValue(v, tag, vb); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// The envelope alone: its cost is the header and, in format 2, the CRC-32C
// over the payload, so it varies with the row's size.
func BenchmarkEncodeEnvelope(b *testing.B) {
	benchEach(b, func(b *testing.B, v format.Version, tag format.Tag) {
		payload := payloadOf(b, v, tag)
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			format.EncodeEnvelope(v, payload)
		}
	})
}

func BenchmarkDecodeEnvelope(b *testing.B) {
	benchEach(b, func(b *testing.B, v format.Version, tag format.Tag) {
		value := format.EncodeEnvelope(v, payloadOf(b, v, tag))
		b.SetBytes(int64(len(value)))
		for b.Loop() {
			if _, err := format.DecodeEnvelope(v, value); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func payloadOf(b *testing.B, v format.Version, tag format.Tag) []byte {
	vb, err := format.EncodeValue(v, sampleRow(b, v, tag, 7))
	if err != nil {
		b.Fatal(err)
	}
	p, err := format.DecodeEnvelope(v, vb)
	if err != nil {
		b.Fatal(err)
	}
	return p
}
