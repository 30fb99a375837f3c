package migration_test

import (
	"bytes"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/migration"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
)

// nestedUnknownRecord is a format-1 packed-meta row one of whose columns
// holds a field its type does not know.
func nestedUnknownRecord(t *testing.T) ndjson.Record {
	t.Helper()
	row := &rocklakev1.PackedTableMetadata{TableId: 5, Columns: []*rocklakev1.Column{{ColumnId: 1, ColumnName: "a"}, {ColumnId: 2}}}
	row.Columns[1].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 98, protowire.VarintType), 5))
	k := format.Key{Tag: format.TagSystem, Name: format.SystemPackedMeta, Parts: []uint64{5}}
	key, _ := format.EncodeKey(format.V1, k)
	value, err := format.EncodeValue(format.V1, k, row)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ndjson.NewRecord(format.V1, key, value)
	if err != nil || !rec.NestedUnknown() {
		t.Fatalf("record: %v, NestedUnknown %t", err, rec.NestedUnknown())
	}
	return rec
}

// A row the migration moves as bytes keeps a nested message's unknown
// fields through the transform's files: the same payload in format 2's
// envelope.
func TestNestedUnknownFieldsMoveAsBytes(t *testing.T) {
	in := nestedUnknownRecord(t)
	out, _, err := transform(t, shard(t, format.V1, in), migration.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, v1 := in.Raw()
	payload, _ := format.DecodeEnvelope(format.V1, v1)
	if _, v2 := out[0].Raw(); len(out) != 1 || !bytes.Equal(v2, format.EncodeEnvelope(format.V2, payload)) {
		t.Fatalf("transformed to %x, want the payload %x in format 2's envelope", v2, payload)
	}
	if !out[0].NestedUnknown() {
		t.Fatal("the transformed record lost NestedUnknown")
	}
}
