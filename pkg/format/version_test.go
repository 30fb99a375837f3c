package format_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

func TestVersions(t *testing.T) {
	if format.V1 != 1 || format.V2 != 2 {
		t.Fatal("V1 and V2 must be 1 and 2: they are the stored catalog-format-version")
	}
	for v, want := range map[format.Version]bool{0: false, 1: true, 2: true, 3: false, 99: false} {
		if format.Supported(v) != want {
			t.Errorf("Supported(%d) = %v", v, !want)
		}
	}
	for in, want := range map[string]format.Version{"v1": format.V1, "1": format.V1, "v2": format.V2, "2": format.V2} {
		got, err := format.ParseVersion(in)
		if err != nil || got != want {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v", in, got, err, want)
		}
		if in[0] == 'v' && got.String() != in {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), in)
		}
	}
	for _, in := range []string{"", "v", "v0", "v3", "V1", "-1", "one", "v1.0"} {
		if _, err := format.ParseVersion(in); !errors.Is(err, format.ErrUnsupportedVersion) {
			t.Errorf("ParseVersion(%q) error = %v, want ErrUnsupportedVersion", in, err)
		}
	}
}

func TestCheckVersion(t *testing.T) {
	for _, v := range versions {
		if err := format.CheckVersion(format.EncodeUint64(v, uint64(v)), v); err != nil {
			t.Errorf("%s catalog, expecting %s: %v", v, v, err)
		}
	}

	cases := []struct {
		name     string
		found    []byte
		expected format.Version
		want     format.FormatVersionMismatch
		texts    []string
	}{
		{"v1 catalog, v2 binary", format.EncodeUint64(format.V1, 1), format.V2,
			format.FormatVersionMismatch{Found: 1, Expected: 2}, []string{"found catalog format version 1", "expected 2"}},
		{"v2 catalog, v1 binary", format.EncodeUint64(format.V2, 2), format.V1,
			format.FormatVersionMismatch{Found: 2, Expected: 1}, []string{"found catalog format version 2", "expected 1"}},
		// docs/schema-version.md: a catalog with version 99 is refused.
		{"version 99", format.EncodeUint64(format.V1, 99), format.V1,
			format.FormatVersionMismatch{Found: 99, Expected: 1}, []string{"version 99", "expected 1"}},
		{"uninitialized", nil, format.V2,
			format.FormatVersionMismatch{Expected: 2, Missing: true}, []string{"found no catalog format version", "uninitialized", "expected 2"}},
	}
	for _, c := range cases {
		err := format.CheckVersion(c.found, c.expected)
		var m *format.FormatVersionMismatch
		if !errors.As(err, &m) {
			t.Errorf("%s: error %v is not a *FormatVersionMismatch", c.name, err)
			continue
		}
		if *m != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, *m, c.want)
		}
		if m.SQLState() != "0A000" {
			t.Errorf("%s: SQLState %q", c.name, m.SQLState())
		}
		msg := err.Error()
		for _, s := range append([]string{"FormatVersionMismatch (SQLSTATE 0A000)"}, c.texts...) {
			if !strings.Contains(msg, s) {
				t.Errorf("%s: %q lacks %q", c.name, msg, s)
			}
		}
	}
}

func TestCheckVersionUnreadable(t *testing.T) {
	bad := format.EncodeUint64(format.V2, 2)
	bad[len(bad)-1] ^= 0xFF
	cases := map[string]struct {
		value []byte
		want  error
	}{
		"empty value":       {[]byte{}, format.ErrEnvelopeTruncated},
		"not an envelope":   {[]byte("hello world"), format.ErrBadMagic},
		"future envelope":   {append([]byte{0x03}, "SDKV\x08\x03"...), format.ErrEnvelopeVersion},
		"checksum mismatch": {bad, format.ErrChecksum},
		// Format 2 written in a format-1 envelope is no format-2 catalog.
		"mixed envelope": {format.EncodeUint64(format.V1, 2), format.ErrEnvelopeVersion},
	}
	for name, c := range cases {
		err := format.CheckVersion(c.value, format.V2)
		var m *format.FormatVersionMismatch
		if errors.As(err, &m) || !errors.Is(err, c.want) {
			t.Errorf("%s: error %v, want %v and no FormatVersionMismatch", name, err, c.want)
		}
	}
	if err := format.CheckVersion(format.EncodeUint64(format.V1, 1), 7); !errors.Is(err, format.ErrUnsupportedVersion) {
		t.Errorf("expecting an unsupported version: %v", err)
	}
}

func TestDecodeFormatVersion(t *testing.T) {
	for _, v := range versions {
		for _, n := range []uint64{0, 1, 2, 99, 1<<64 - 1} {
			got, err := format.DecodeFormatVersion(format.EncodeUint64(v, n))
			if err != nil || got != n {
				t.Errorf("%s envelope holding %d: %d, %v", v, n, got, err)
			}
		}
	}
}
