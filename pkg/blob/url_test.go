package blob_test

import (
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want blob.Location
	}{
		{"s3://bucket/a/b.ndjson", blob.Location{Bucket: "bucket", Key: "a/b.ndjson"}},
		{"s3://bucket", blob.Location{Bucket: "bucket"}},
		{"s3://bucket/", blob.Location{Bucket: "bucket"}},
		{"s3://bucket/odd//key%20?x", blob.Location{Bucket: "bucket", Key: "odd//key%20?x"}},
		{"file:///tmp/cat/", blob.Location{Path: "/tmp/cat/"}},
		{"file:///tmp/a%20b", blob.Location{Path: "/tmp/a b"}},
		{"file://localhost/tmp/x", blob.Location{Path: "/tmp/x"}},
		{"/tmp/../tmp/x", blob.Location{Path: "/tmp/x"}},
		{"./out/shard-1.ndjson", blob.Location{Path: "out/shard-1.ndjson"}},
		{"out/", blob.Location{Path: "out/"}},
	} {
		got, err := blob.Parse(tc.raw)
		if err != nil || got != tc.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", tc.raw, got, err, tc.want)
		}
	}
	for _, raw := range []string{"", "s3://", "s3:///key", "file://host/x", "file:rel/x", "gs://bucket/x", "http://h/x"} {
		if l, err := blob.Parse(raw); err == nil {
			t.Errorf("Parse(%q) = %+v, want an error", raw, l)
		}
	}
}

func TestLocationString(t *testing.T) {
	for raw, want := range map[string]string{
		"s3://b/k":     "s3://b/k",
		"file:///x/y":  "/x/y",
		"rel/path.txt": "rel/path.txt",
	} {
		l, err := blob.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		if got := l.String(); got != want {
			t.Errorf("Parse(%q).String() = %q, want %q", raw, got, want)
		}
	}
}
