package migration

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
)

// No row v1→v2 rebuilds (snapshots) has a nested message today, so the
// refusal is tried on a hot-key row, which has one.
func TestRebuildRefusesNestedUnknownFields(t *testing.T) {
	row := &rocklakev1.HotKey{CurrentSnapshotId: 1, TableFileCounts: []*rocklakev1.TableFileCount{{TableId: 2}}}
	row.TableFileCounts[0].ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 9, protowire.VarintType), 1))
	k := format.Key{Tag: format.TagSystem, Name: format.SystemHotKey}
	value, err := format.EncodeValue(format.V1, k, row)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ndjson.NewRecord(format.V1, format.SystemKey(format.SystemHotKey), value)
	if err != nil {
		t.Fatal(err)
	}
	if err := rebuildable(rec); !errors.Is(err, ErrNestedUnknownFields) {
		t.Fatalf("rebuildable = %v, want ErrNestedUnknownFields", err)
	}
	snap, err := format.EncodeValue(format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}}, &rocklakev1.Snapshot{SnapshotId: 1})
	if err != nil {
		t.Fatal(err)
	}
	key, _ := format.EncodeKey(format.V1, format.Key{Tag: format.TagSnapshot, Parts: []uint64{1}})
	rec, err = ndjson.NewRecord(format.V1, key, snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := rebuildable(rec); err != nil {
		t.Fatalf("a snapshot without nested unknown fields: %v", err)
	}
}
