package format

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Version is a catalog format version, the value of the
// catalog-format-version system key.
type Version uint64

// The catalog formats this package reads and writes.
const (
	V1 Version = 1 // DESIGN 2.1
	V2 Version = 2 // DESIGN 2.2
)

// Supported reports whether this package implements format v.
func Supported(v Version) bool { return v == V1 || v == V2 }

// String returns "v1", "v2", ..., the spelling of the CLI's --format flag.
func (v Version) String() string { return "v" + strconv.FormatUint(uint64(v), 10) }

// ParseVersion parses "v1" or "1" (and so on) into a supported version.
func ParseVersion(s string) (Version, error) {
	n, err := strconv.ParseUint(strings.TrimPrefix(s, "v"), 10, 64)
	if err != nil || !Supported(Version(n)) {
		return 0, fmt.Errorf("%w: %q (this binary supports %s and %s)", ErrUnsupportedVersion, s, V1, V2)
	}
	return Version(n), nil
}

// ErrUnsupportedVersion is returned (wrapped) when a function is asked for a
// format this package does not implement.
var ErrUnsupportedVersion = errors.New("format: unsupported catalog format version")

func errUnsupported(v Version) error {
	return fmt.Errorf("%w %d", ErrUnsupportedVersion, uint64(v))
}
