package format_test

import (
	"errors"
	"fmt"

	"github.com/rocklake/rocklake-migrate/pkg/format"
)

// The startup check: read 0xFF "catalog-format-version" (nil when absent)
// and refuse on a mismatch.
func ExampleCheckVersion() {
	stored := format.EncodeUint64(format.V1, 1) // what a format-1 catalog holds
	err := format.CheckVersion(stored, format.V2)

	var mismatch *format.FormatVersionMismatch
	if errors.As(err, &mismatch) {
		fmt.Println(mismatch.SQLState(), mismatch.Found, mismatch.Expected)
		fmt.Println(err)
	}
	// Output:
	// 0A000 1 2
	// FormatVersionMismatch (SQLSTATE 0A000): found catalog format version 1, expected 2
}

// Format 2 keys a table's data files by table, so one prefix covers them.
func ExampleKeyPrefix() {
	key, _ := format.EncodeKey(format.V2, format.Key{Tag: format.TagDataFile, Parts: []uint64{5, 256}})
	prefix, _ := format.KeyPrefix(format.V2, format.TagDataFile, 5)
	fmt.Printf("%x %x\n", key, prefix)
	// Output: 090105020100 090105
}
