package migration_test

import (
	"slices"
	"testing"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// A path of several steps feeds every record one step makes to the next,
// in order; a one-step path returns that step's records as they are.
func TestRecordsAlongAPath(t *testing.T) {
	counter := func(n uint64) ndjson.Record {
		rec, err := ndjson.NewRecord(format.V1, format.CounterKey(format.V1, format.NameNextFileID), format.EncodeCounter(format.V1, n))
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	value := func(rec ndjson.Record) uint64 {
		_, v := rec.Raw()
		n, err := format.DecodeCounter(format.V1, v)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// double makes two records of one: n*10 and n*10+1.
	double := migration.Conversion{From: format.V1, To: format.V2, Apply: func(rec ndjson.Record) ([]ndjson.Record, error) {
		n := value(rec)
		return []ndjson.Record{counter(n * 10), counter(n*10 + 1)}, nil
	}}
	for _, c := range []struct {
		path []migration.Conversion
		want []uint64
	}{
		{nil, []uint64{7}},
		{[]migration.Conversion{double}, []uint64{70, 71}},
		{[]migration.Conversion{double, double}, []uint64{700, 701, 710, 711}},
	} {
		out, err := migration.Records(counter(7), c.path, migration.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var got []uint64
		for _, o := range out {
			got = append(got, value(o))
		}
		if !slices.Equal(got, c.want) {
			t.Fatalf("%d steps: %v, want %v", len(c.path), got, c.want)
		}
	}
}
