package main

import "github.com/spf13/pflag"

// catalogFlag adds the --catalog flag every catalog command takes.
func catalogFlag(fs *pflag.FlagSet) *string {
	return fs.String("catalog", "", "catalog URL: file:///absolute/path or s3://bucket/prefix (the SlateDB root)")
}

// needCatalog rejects a missing --catalog before anything is opened.
func needCatalog(url string) error {
	if url == "" {
		return usagef("--catalog is required")
	}
	return nil
}
