package migration

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// Format 2 (DESIGN 2.2): compact ordered integers in keys, data and delete
// files keyed by table, the checksummed envelope, the snapshot time as
// microseconds, and catalog-format-version 2. Record counts are unchanged.
func init() {
	Register(Migration{
		From: format.V1, To: format.V2,
		Apply:        v1ToV2,
		ExpectCounts: func(in map[string]uint64) map[string]uint64 { return in },
	})
}

func v1ToV2(rec ndjson.Record) ([]ndjson.Record, error) {
	rawKey, _ := rec.Raw()
	if err := checkCollisions(rec, format.V2); err != nil {
		return nil, err
	}
	key, err := v2Key(rec)
	if err != nil {
		return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
	}
	var out ndjson.Record
	switch {
	case key.Tag == format.TagSnapshot:
		row, err := v2Snapshot(rec.Row().(*rocklakev1.Snapshot))
		if err != nil {
			return nil, fmt.Errorf("migration v1→v2: snapshot at key %x: %w", rawKey, err)
		}
		out, err = ndjson.NewRowRecord(format.V2, key, row)
		if err != nil {
			return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
		}
	case key.Tag == format.TagSystem && key.Name == format.SystemCatalogFormatVersion:
		out, err = recordOf(key, format.EncodeUint64(format.V2, uint64(format.V2)))
	default:
		// Every other row has the same wire encoding in both formats: move the
		// payload as it is (unknown fields and all) into the new envelope.
		_, value := rec.Raw()
		payload, err := format.DecodeEnvelope(format.V1, value)
		if err != nil {
			return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
		}
		out, err = recordOf(key, format.EncodeEnvelope(format.V2, payload))
	}
	if err != nil {
		return nil, fmt.Errorf("migration v1→v2: key %x: %w", rawKey, err)
	}
	return []ndjson.Record{out}, nil
}

func recordOf(k format.Key, value []byte) (ndjson.Record, error) {
	raw, err := format.EncodeKey(format.V2, k)
	if err != nil {
		return ndjson.Record{}, err
	}
	return ndjson.NewRecord(format.V2, raw, value)
}

// v2Key maps key components by name: those format 2 adds (table_id of data
// and delete files) come from the row.
func v2Key(rec ndjson.Record) (format.Key, error) {
	k := rec.Key()
	if k.Tag == format.TagSystem || k.Tag == format.TagCounter {
		return k, nil
	}
	from := format.ComponentNames(format.V1, k.Tag)
	to := format.ComponentNames(format.V2, k.Tag)
	parts := make([]uint64, len(to))
	for i, name := range to {
		found := false
		for j, n := range from {
			if n == name {
				parts[i], found = k.Parts[j], true
				break
			}
		}
		if found {
			continue
		}
		v, err := rowUint(rec.Row(), name)
		if err != nil {
			return format.Key{}, err
		}
		parts[i] = v
	}
	return format.Key{Tag: k.Tag, Parts: parts}, nil
}

func rowUint(row proto.Message, name string) (uint64, error) {
	m := row.ProtoReflect()
	fd := m.Descriptor().Fields().ByName(protoreflect.Name(name))
	if fd == nil || fd.Kind() != protoreflect.Uint64Kind {
		return 0, fmt.Errorf("row %s has no uint64 field %s for the format-2 key", m.Descriptor().FullName(), name)
	}
	if fd.HasPresence() && !m.Has(fd) {
		return 0, fmt.Errorf("row %s has no %s: the format-2 key needs it", m.Descriptor().FullName(), name)
	}
	return m.Get(fd).Uint(), nil
}

// checkCollisions refuses to carry an unknown field whose number the target
// message defines or reserves: it would change meaning on the way.
func checkCollisions(rec ndjson.Record, to format.Version) error {
	unknown := rec.Unknown()
	if len(unknown) == 0 {
		return nil
	}
	target, err := format.NewRow(to, rec.Tag())
	if err != nil {
		return err
	}
	desc := target.ProtoReflect().Descriptor()
	for b := unknown; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("migration: key %x: malformed unknown fields: %w", rawKeyOf(rec), protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("migration: key %x: malformed unknown fields: %w", rawKeyOf(rec), protowire.ParseError(m))
		}
		b = b[n+m:]
		name := ""
		if fd := desc.Fields().ByNumber(num); fd != nil {
			name = string(fd.Name())
		} else if desc.ReservedRanges().Has(num) {
			name = "(reserved)"
		}
		if name != "" {
			return &FieldCollisionError{Key: rawKeyOf(rec), Table: rec.Tag().String(), Number: int32(num), Field: name, To: to}
		}
	}
	return nil
}

func rawKeyOf(rec ndjson.Record) []byte {
	k, _ := rec.Raw()
	return k
}

// v2Snapshot copies every field but the time, by number (so a field both
// formats gain later is carried too), and converts the time.
func v2Snapshot(s *rocklakev1.Snapshot) (*rocklakev2.Snapshot, error) {
	out := &rocklakev2.Snapshot{}
	src, dst := s.ProtoReflect(), out.ProtoReflect()
	var copyErr error
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() == "snapshot_time" {
			return true
		}
		dfd := dst.Descriptor().Fields().ByNumber(fd.Number())
		if dfd == nil || dfd.Kind() != fd.Kind() || dfd.Cardinality() != fd.Cardinality() {
			copyErr = fmt.Errorf("field %s has no like-typed counterpart in format 2", fd.Name())
			return false
		}
		dst.Set(dfd, v)
		return true
	})
	if copyErr != nil {
		return nil, copyErr
	}
	dst.SetUnknown(src.GetUnknown())
	if s.SnapshotTime != nil {
		t, err := ParseSnapshotTime(*s.SnapshotTime)
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
