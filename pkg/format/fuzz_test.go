package format_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The fuzz targets check that decoders never panic and that whatever they
// accept is canonical: re-encoding gives back the input (keys, envelopes) or
// an equal message (rows). Seed corpora: testdata/fuzz/<FuzzName>/.
// Run one with: go test ./pkg/format -run '^$' -fuzz '^FuzzDecodeKeyV2$' -fuzztime 20s

func FuzzDecodeKeyV1(f *testing.F) { fuzzKey(f, format.V1) }
func FuzzDecodeKeyV2(f *testing.F) { fuzzKey(f, format.V2) }

func fuzzKey(f *testing.F, v format.Version) {
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := format.DecodeKey(v, b)
		if err != nil {
			return
		}
		re, err := format.EncodeKey(v, k)
		if err != nil || !bytes.Equal(re, b) {
			t.Fatalf("%s key %x decoded to %+v, re-encoded to %x (%v)", v, b, k, re, err)
		}
	})
}

func FuzzDecodeEnvelopeV1(f *testing.F) { fuzzEnvelope(f, format.V1) }
func FuzzDecodeEnvelopeV2(f *testing.F) { fuzzEnvelope(f, format.V2) }

func fuzzEnvelope(f *testing.F, v format.Version) {
	f.Fuzz(func(t *testing.T, b []byte) {
		payload, err := format.DecodeEnvelope(v, b)
		if err != nil {
			return
		}
		if re := format.EncodeEnvelope(v, payload); !bytes.Equal(re, b) {
			t.Fatalf("%s envelope %x re-encoded to %x", v, b, re)
		}
	})
}

// FuzzDecodeValueV1/V2 take a tag byte followed by a value.
func FuzzDecodeValueV1(f *testing.F) { fuzzValue(f, format.V1) }
func FuzzDecodeValueV2(f *testing.F) { fuzzValue(f, format.V2) }

func fuzzValue(f *testing.F, v format.Version) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 {
			return
		}
		tag, value := format.Tag(b[0]), b[1:]
		m, err := format.DecodeValue(v, tag, value)
		if err != nil {
			return
		}
		re, err := format.EncodeValue(v, m)
		if err != nil {
			t.Fatalf("%s %s: decoded %v but cannot re-encode: %v", v, tag, m, err)
		}
		back, err := format.DecodeValue(v, tag, re)
		if err != nil || !proto.Equal(back, m) {
			t.Fatalf("%s %s: %x re-decoded to %v (%v), first %v", v, tag, re, back, err, m)
		}
	})
}

func FuzzCheckVersion(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		n, decodeErr := format.DecodeFormatVersion(b)
		for _, v := range []format.Version{format.V1, format.V2} {
			err := format.CheckVersion(b, v)
			if err == nil && (decodeErr != nil || n != uint64(v)) {
				t.Fatalf("CheckVersion(%x, %s) accepted a value that decodes to %d, %v", b, v, n, decodeErr)
			}
		}
	})
}
