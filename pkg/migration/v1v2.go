package migration

import (
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// Format 2 (DESIGN 2.2): compact integers in keys, tags and column tags
// keyed by a SHA-256 hash of the tag key, the checksummed envelope, the
// snapshot time as microseconds, and catalog-format-version 2 in the format-1
// envelope. Keys keep their shape and record counts are unchanged.
func init() {
	Register(Conversion{
		From: format.V1, To: format.V2,
		Apply:        v1ToV2,
		ExpectCounts: func(in map[string]uint64) map[string]uint64 { return in },
	})
}

func v1ToV2(rec ndjson.Record) ([]ndjson.Record, error) {
	rawKey, value := rec.Raw()
	if rec.Key().Raw != nil {
		// Unknown tags, counters and system keys: the same bytes in both
		// formats, since nothing in them is known to be an integer.
		out, err := ndjson.NewRecord(format.V2, rawKey, value)
		if err != nil {
			return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
		}
		return []ndjson.Record{out}, nil
	}
	if err := checkCollisions(rec, format.V2); err != nil {
		return nil, err
	}
	key, err := v2Key(rec)
	if err != nil {
		return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
	}
	// Every row but the snapshot has the same wire encoding in both
	// formats: its payload moves as it is.
	out, err := converted(rec, key, format.V1, format.V2, v2SnapshotRecord)
	if err != nil {
		return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
	}
	return []ndjson.Record{out}, nil
}

// rebuildable refuses a record whose row a migration would rebuild field by
// field when a nested message of it holds unknown fields.
func rebuildable(rec ndjson.Record) error {
	if rec.NestedUnknown() {
		key, _ := rec.Raw()
		return fmt.Errorf("%w: %s row at key %x holds fields unknown to a nested message; this migration rebuilds the row and would lose them",
			ErrNestedUnknownFields, rec.Tag(), key)
	}
	return nil
}

// v2SnapshotRecord rebuilds a snapshot row, the one row format 2 changes.
func v2SnapshotRecord(rec ndjson.Record, key format.Key) (ndjson.Record, error) {
	return snapshotRecord(rec, key, format.V2, v2Snapshot)
}

// v2Key is the same key, but for the tag-key hash of tags and column tags,
// which format 2 computes from the tag key in the row.
func v2Key(rec ndjson.Record) (format.Key, error) {
	k := rec.Key()
	if k.Tag != format.TagTag && k.Tag != format.TagColumnTag {
		return k, nil // decoding the row costs more than the rest of its move
	}
	tagKey, err := rowTagKey(rec)
	if err != nil {
		return k, err
	}
	parts := slices.Clone(k.Parts)
	for i, f := range format.Fields(k.Tag, k.Name) {
		// The format-1 hash is not recomputed or checked: Rust's
		// DefaultHasher may differ between the builds that wrote the
		// catalog; the row's tag key is the truth.
		if f.Name == "tag_key_hash" {
			parts[i] = format.TagKeyHash(format.V2, tagKey)
		}
	}
	k.Parts = parts
	return k, nil
}

// checkCollisions refuses to carry an unknown field whose number the target
// message defines or reserves: it would change meaning on the way. A number
// the source message reserves too is a field both formats retired (data
// files' legacy snapshot_id, field 7, which rows written before RockLake
// v0.24 still hold): it means the same on both sides and is carried.
func checkCollisions(rec ndjson.Record, to format.Version) error {
	unknown := rec.Unknown()
	if len(unknown) == 0 {
		return nil
	}
	target, err := format.NewRow(to, rec.Key())
	if err != nil {
		return err
	}
	desc := target.ProtoReflect().Descriptor()
	src, err := format.NewRow(rec.Version(), rec.Key())
	if err != nil {
		return err
	}
	source := src.ProtoReflect().Descriptor()
	var collision *FieldCollisionError
	err = eachUnknownField(unknown, func(num protowire.Number) error {
		name := ""
		if fd := desc.Fields().ByNumber(num); fd != nil {
			name = string(fd.Name())
		} else if desc.ReservedRanges().Has(num) && !source.ReservedRanges().Has(num) {
			name = "(reserved)"
		}
		if name != "" {
			collision = &FieldCollisionError{Key: rawKeyOf(rec), Table: rec.Tag().String(), Number: int32(num), Field: name, To: to}
			return collision
		}
		return nil
	})
	if err != nil && collision == nil {
		return fmt.Errorf("migration: key %x: %w", rawKeyOf(rec), err)
	}
	return err
}

func rawKeyOf(rec ndjson.Record) []byte {
	k, _ := rec.Raw()
	return k
}

// v2Snapshot copies every field but the time, by number (so a field both
// formats gain later is carried too), and converts the time.
func v2Snapshot(s *rocklakev1.Snapshot) (*rocklakev2.Snapshot, error) {
	out := &rocklakev2.Snapshot{}
	if err := copyFields(s.ProtoReflect(), out.ProtoReflect(), "snapshot_time", format.V2); err != nil {
		return nil, err
	}
	if s.SnapshotTime != "" {
		t, err := ParseSnapshotTime(s.SnapshotTime)
		if err != nil {
			return nil, err
		}
		micros := t.UnixMicro()
		out.SnapshotTimeMicros = &micros
	}
	return out, nil
}

// snapshotLayouts are the text forms a format-1 snapshot_time takes: DuckDB's
// TIMESTAMPTZ rendering and RFC 3339. A time without a zone is UTC.
var snapshotLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999Z07",
	"2006-01-02 15:04:05.999999999-07",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
}

// ParseSnapshotTime reads a format-1 snapshot_time. Text it cannot read is
// an error, never a zero time: a migration must not invent data.
func ParseSnapshotTime(s string) (time.Time, error) {
	for _, l := range snapshotLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("snapshot_time %q is not a timestamp this migration can read", s)
}
