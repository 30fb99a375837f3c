package migration

// What v1→v2 and v2→v1 share: both move a record between the formats the
// same way, the snapshot row the one they rebuild field by field.

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// converted is rec, of format from, in format to under key (its key
// there): a version key holds the target's version, a raw value stays as
// it is, a counter's or row's payload moves as it is (unknown fields and
// all, nested ones too, without decoding it again) into the target's
// envelope, and a snapshot row, the one row format 2 changes, is rebuilt
// by snapshot.
func converted(rec ndjson.Record, key format.Key, from, to format.Version, snapshot func(ndjson.Record, format.Key) (ndjson.Record, error)) (ndjson.Record, error) {
	_, value := rec.Raw()
	switch format.ValueKindOf(key) {
	case format.ValueVersion:
		return recordIn(to, key, format.EncodeFormatVersion(uint32(to)))
	case format.ValueRaw:
		return recordIn(to, key, value)
	case format.ValueCounter, format.ValueEnveloped:
		payload, err := format.DecodeEnvelope(from, value)
		if err != nil {
			return ndjson.Record{}, err
		}
		return recordIn(to, key, format.EncodeEnvelope(to, payload))
	}
	if key.Tag == format.TagSnapshot {
		return snapshot(rec, key)
	}
	payload, err := format.DecodeEnvelope(from, value)
	if err != nil {
		return ndjson.Record{}, err
	}
	return rec.Move(to, key, format.EncodeEnvelope(to, payload))
}

// recordIn is the record of key k in format v, holding value.
func recordIn(v format.Version, k format.Key, value []byte) (ndjson.Record, error) {
	raw, err := format.EncodeKey(v, k)
	if err != nil {
		return ndjson.Record{}, err
	}
	return ndjson.NewRecord(v, raw, value)
}

// snapshotRecord rebuilds rec's snapshot row, an S, as the row convert
// makes of it in format to.
func snapshotRecord[S, T proto.Message](rec ndjson.Record, key format.Key, to format.Version, convert func(S) (T, error)) (ndjson.Record, error) {
	if err := rebuildable(rec); err != nil {
		return ndjson.Record{}, err
	}
	snap, ok := rec.Row().(S)
	if !ok {
		return ndjson.Record{}, fmt.Errorf("a %s row is a %T", rec.Tag(), rec.Row())
	}
	row, err := convert(snap)
	if err != nil {
		return ndjson.Record{}, err
	}
	return ndjson.NewRowRecord(to, key, row)
}

// copyFields copies every field of src but the one named but (the
// snapshot's time, which the formats hold differently) into dst, by number
// (so a field both formats gain later is carried too), and src's unknown
// fields; to names dst's format in an error.
func copyFields(src, dst protoreflect.Message, but protoreflect.Name, to format.Version) error {
	var copyErr error
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() == but {
			return true
		}
		dfd := dst.Descriptor().Fields().ByNumber(fd.Number())
		if dfd == nil || dfd.Kind() != fd.Kind() || dfd.Cardinality() != fd.Cardinality() {
			copyErr = fmt.Errorf("field %s has no like-typed counterpart in format %d", fd.Name(), to)
			return false
		}
		dst.Set(dfd, v)
		return true
	})
	if copyErr != nil {
		return copyErr
	}
	dst.SetUnknown(src.GetUnknown())
	return nil
}

// rowTagKey is the tag key of rec's row, a tag or a column tag.
func rowTagKey(rec ndjson.Record) (string, error) {
	row, ok := rec.Row().(interface{ GetTagKey() string })
	if !ok {
		return "", fmt.Errorf("a %s row is a %T", rec.Key().Tag, rec.Row())
	}
	return row.GetTagKey(), nil
}

// eachUnknownField calls f on the number of each field in unknown, a
// row's unknown fields, until f returns an error; malformed bytes are one.
func eachUnknownField(unknown []byte, f func(protowire.Number) error) error {
	for b := unknown; len(b) > 0; {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed unknown fields: %w", protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("malformed unknown fields: %w", protowire.ParseError(m))
		}
		b = b[n+m:]
		if err := f(num); err != nil {
			return err
		}
	}
	return nil
}
