package shard

import (
	"slices"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
)

func TestAncestors(t *testing.T) {
	for in, want := range map[string][]string{
		"s3://b/catalogs/prod/wal": {"s3://b/catalogs/prod", "s3://b/catalogs", "s3://b"},
		"s3://b/x/":                {"s3://b"},
		"s3://b":                   nil,
		"file:///tmp/a/b":          {"file:///tmp/a", "file:///tmp"},
		"file:///tmp":              nil,
	} {
		loc, err := blob.Parse(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := ancestors(loc); !slices.Equal(got, want) {
			t.Errorf("ancestors(%s) = %q, want %q", in, got, want)
		}
	}
}
