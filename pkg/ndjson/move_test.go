package ndjson_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// Move takes the row's own payload, decoded or not, and refuses another.
func TestMove(t *testing.T) {
	k := format.Key{Tag: format.TagDataFile, Parts: []uint64{9, 4}}
	key, _ := format.EncodeKey(format.V1, k)
	value, _ := format.EncodeValue(format.V1, k, &rocklakev1.DataFile{DataFileId: 4, TableId: 9, Path: "f.parquet"})
	rec, err := ndjson.NewRecord(format.V1, key, value)
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := format.DecodeEnvelope(format.V1, value)
	moved, err := rec.Move(format.V2, k, format.EncodeEnvelope(format.V2, payload))
	if err != nil {
		t.Fatal(err)
	}
	row, ok := moved.Row().(*rocklakev2.DataFile)
	if !ok || !proto.Equal(row, &rocklakev2.DataFile{DataFileId: 4, TableId: 9, Path: "f.parquet"}) || moved.Version() != format.V2 {
		t.Fatalf("moved row %T %v in %s", moved.Row(), moved.Row(), moved.Version())
	}
	if k2, _ := moved.Raw(); !bytes.Equal(k2, []byte{0x0B, 1, 9, 1, 4}) {
		t.Fatalf("moved key %x", k2)
	}
	other, _ := format.EncodeValue(format.V2, k, &rocklakev2.DataFile{DataFileId: 5, TableId: 9})
	if _, err := rec.Move(format.V2, k, other); err == nil {
		t.Fatal("Move took another row's payload")
	}
	if _, err := rec.Move(format.V2, k, value); err == nil {
		t.Fatal("Move took a value in the source format's envelope")
	}
	// The snapshot's types are not alike (its time changed): decoded.
	if format.RowsAlike(format.V1, format.V2, format.Key{Tag: format.TagSnapshot}) ||
		!format.RowsAlike(format.V1, format.V2, k) || format.RowsAlike(format.V1, format.V2, format.Key{Tag: format.TagCounter, Name: format.NameNextFileID}) {
		t.Fatal("RowsAlike: the snapshot's rows differ, the data file's do not, counters are no rows")
	}
}
