//go:build !race

package ndjson_test

const raceEnabled = false
