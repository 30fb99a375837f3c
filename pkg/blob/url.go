package blob

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
)

// Location is a parsed object URL: an S3 object (or prefix) or a local path.
type Location struct {
	Bucket string // S3 bucket; empty for a local path
	Key    string // S3 key or key prefix, as given (may be empty)
	Path   string // local filesystem path; empty for S3
}

// IsS3 reports whether l names an S3 object rather than a local file.
func (l Location) IsS3() bool { return l.Bucket != "" }

// String is s3://bucket/key for S3 and the plain path for a local file.
func (l Location) String() string {
	if l.IsS3() {
		return "s3://" + l.Bucket + "/" + l.Key
	}
	return l.Path
}

// Parse parses s3://bucket/key, file:///absolute/path or a plain path
// (relative paths are relative to the working directory). S3 keys are taken
// byte for byte, without URL decoding or cleaning, because keys may contain
// "%", "?" or "//"; file URLs are decoded as RFC 8089 says, as SlateDB does.
func Parse(raw string) (Location, error) {
	switch {
	case strings.HasPrefix(raw, "s3://"):
		bucket, key, _ := strings.Cut(strings.TrimPrefix(raw, "s3://"), "/")
		if bucket == "" {
			return Location{}, fmt.Errorf("blob: %q: no bucket", raw)
		}
		return Location{Bucket: bucket, Key: key}, nil
	case strings.HasPrefix(raw, "file:"):
		u, err := url.Parse(raw)
		if err != nil {
			return Location{}, fmt.Errorf("blob: %w", err)
		}
		if u.Host != "" && u.Host != "localhost" {
			return Location{}, fmt.Errorf("blob: %q: file URLs must be local (file:///path)", raw)
		}
		if !strings.HasPrefix(u.Path, "/") {
			return Location{}, fmt.Errorf("blob: %q: file URLs need an absolute path", raw)
		}
		return Location{Path: cleanPath(u.Path)}, nil
	case raw == "":
		return Location{}, fmt.Errorf("blob: empty URL")
	case strings.Contains(raw, "://"):
		return Location{}, fmt.Errorf("blob: %q: unsupported scheme (want s3:// or file://)", raw)
	default:
		return Location{Path: cleanPath(raw)}, nil
	}
}

// cleanPath cleans p but keeps a trailing slash, which marks a directory
// prefix for List and DeletePrefix.
func cleanPath(p string) string {
	c := filepath.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}
