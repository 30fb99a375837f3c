package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// pointerFlag adds the --pointer flag of the pointer commands.
func pointerFlag(fs *pflag.FlagSet) *string {
	return fs.String("pointer", "", "the pointer object: s3://bucket/key (versioned bucket)")
}

func needPointer(url string) error {
	if url == "" {
		return usagef("--pointer is required")
	}
	return nil
}

// defaultStaging puts staging beside the pointer: s3://b/rocklake/CURRENT →
// s3://b/rocklake/migrations.
func defaultStaging(pointerURL string) string {
	i := strings.LastIndex(pointerURL, "/")
	if i < 0 {
		return ""
	}
	return pointerURL[:i] + "/migrations"
}
