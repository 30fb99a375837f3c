package format_test

import (
	"bytes"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

func TestEnvelopeLayout(t *testing.T) {
	payload := []byte("123456789")
	// CRC-32C("123456789") is the standard check value 0xE3069283.
	cases := map[format.Version]string{
		format.V1: "01" + hex.EncodeToString([]byte("SDKV")) + hex.EncodeToString(payload),
		format.V2: "02" + hex.EncodeToString([]byte("SDKV")) + "e3069283" + hex.EncodeToString(payload),
	}
	for v, want := range cases {
		got := format.EncodeEnvelope(v, payload)
		if hex.EncodeToString(got) != want {
			t.Errorf("EncodeEnvelope(%s) = %x, want %s", v, got, want)
		}
		back, err := format.DecodeEnvelope(v, got)
		if err != nil || !bytes.Equal(back, payload) {
			t.Errorf("DecodeEnvelope(%s) = %q, %v", v, back, err)
		}
		empty := format.EncodeEnvelope(v, nil)
		if back, err := format.DecodeEnvelope(v, empty); err != nil || len(back) != 0 {
			t.Errorf("%s empty payload: %x, %v", v, back, err)
		}
	}
	if got := crc32.Checksum(payload, crc32.MakeTable(crc32.Castagnoli)); got != 0xE3069283 {
		t.Fatalf("CRC-32C check value = %08x", got)
	}
}

func TestEnvelopeChecksumMismatch(t *testing.T) {
	good := format.EncodeEnvelope(format.V2, []byte("a catalog row"))
	// Every single-bit flip in the checksum or the payload is caught.
	for i := 5; i < len(good); i++ {
		for bit := range 8 {
			bad := bytes.Clone(good)
			bad[i] ^= 1 << bit
			if _, err := format.DecodeEnvelope(format.V2, bad); !errors.Is(err, format.ErrChecksum) {
				t.Fatalf("flip of byte %d bit %d: %v, want ErrChecksum", i, bit, err)
			}
		}
	}
	// Format 1 has no checksum to check: the same flip goes through.
	v1 := format.EncodeEnvelope(format.V1, []byte("a catalog row"))
	v1[len(v1)-1] ^= 1
	if _, err := format.DecodeEnvelope(format.V1, v1); err != nil {
		t.Fatalf("v1: %v", err)
	}
}

func TestDecodeEnvelopeRejects(t *testing.T) {
	v1 := format.EncodeEnvelope(format.V1, []byte{8, 1})
	v2 := format.EncodeEnvelope(format.V2, []byte{8, 1})
	cases := []struct {
		name  string
		v     format.Version
		value []byte
		want  error
	}{
		{"nil", format.V1, nil, format.ErrEnvelopeTruncated},
		{"version byte only", format.V2, []byte{2}, format.ErrEnvelopeTruncated},
		{"magic cut short", format.V1, []byte("\x01SDK"), format.ErrEnvelopeTruncated},
		{"v2 checksum cut short", format.V2, []byte("\x02SDKV\x00\x00"), format.ErrEnvelopeTruncated},
		{"bad magic", format.V1, []byte("\x01SDKX\x08\x01"), format.ErrBadMagic},
		{"lower-case magic", format.V2, []byte("\x02sdkv\x00\x00\x00\x00"), format.ErrBadMagic},
		{"bare protobuf", format.V1, []byte{8, 1, 0, 0, 0, 0}, format.ErrBadMagic},
		{"v2 value read as v1", format.V1, v2, format.ErrEnvelopeVersion},
		{"v1 value read as v2", format.V2, v1, format.ErrEnvelopeVersion},
		{"unsupported reader", 3, v1, format.ErrUnsupportedVersion},
	}
	for _, c := range cases {
		if p, err := format.DecodeEnvelope(c.v, c.value); !errors.Is(err, c.want) {
			t.Errorf("%s: DecodeEnvelope(%s, %x) = %x, %v; want %v", c.name, c.v, c.value, p, err, c.want)
		}
	}
}

func TestEncodeEnvelopePanicsOnUnsupportedVersion(t *testing.T) {
	defer func() {
		if r := recover(); r == nil {
			t.Fatal("no panic")
		}
	}()
	format.EncodeEnvelope(3, nil)
}
