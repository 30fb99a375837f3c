//go:build race

package ndjson_test

// raceEnabled: the race detector makes each record about 30 times slower.
const raceEnabled = true
