package migration

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// Format 2 back down to format 1, the exact inverse of v1→v2 on every record
// v1→v2 makes: a rollback carries the keys written on a v2 catalog back into
// the v1 catalog it came from, and `migrate --to v1` migrates a v2 catalog
// down into a fresh one. Keys keep their shape and record counts are
// unchanged. A v2 value format 1 cannot hold is refused (NoTargetFormError),
// never dropped or altered.
func init() {
	Register(Conversion{
		From: format.V2, To: format.V1,
		Apply:        v2ToV1,
		ExpectCounts: func(in map[string]uint64) map[string]uint64 { return in },
	})
}

// NoTargetFormError: a record holds something the target format has no
// form for (a snapshot time outside RFC 3339's years, a tag key whose hash
// disagrees with its row, ...), so the migration refuses it rather than
// drop or alter it. Cause says what; it unwraps to it.
type NoTargetFormError struct {
	Key   []byte
	Table string
	To    format.Version
	Cause error
}

func (e *NoTargetFormError) Error() string {
	return fmt.Sprintf("%s: %s record at key %x has no format %s form: %v", ErrNoTargetForm, e.Table, e.Key, e.To, e.Cause)
}

func (e *NoTargetFormError) Unwrap() error { return e.Cause }

func (e *NoTargetFormError) Is(target error) bool { return target == ErrNoTargetForm }

// ErrorName is ErrNoTargetForm's name.
func (e *NoTargetFormError) ErrorName() string { return ErrNoTargetForm.ErrorName() }

func noV1Form(rec ndjson.Record, cause error) error {
	return &NoTargetFormError{Key: rawKeyOf(rec), Table: rec.Tag().String(), To: format.V1, Cause: cause}
}

func v2ToV1(rec ndjson.Record) ([]ndjson.Record, error) {
	rawKey, value := rec.Raw()
	if rec.Key().Raw != nil {
		// Counter and system keys of no known shape: carried as they are,
		// as v1→v2 carries them up, unless format 1 would read the bytes
		// as a key of its own (a compact integer's bytes read as a
		// big-endian one): that would give them a meaning.
		k, err := format.DecodeKey(format.V1, rawKey)
		if err != nil {
			return nil, noV1Form(rec, err)
		}
		if k.Raw == nil {
			return nil, noV1Form(rec, fmt.Errorf("a key of no known shape in format 2 reads as a format-1 %s %q key", k.Tag, k.Name))
		}
		out, err := ndjson.NewRecord(format.V1, rawKey, value)
		if err != nil {
			return nil, noV1Form(rec, err)
		}
		return []ndjson.Record{out}, nil
	}
	if err := checkCollisions(rec, format.V1); err != nil {
		return nil, err
	}
	if err := checkMistyped(rec); err != nil {
		return nil, noV1Form(rec, err)
	}
	key, err := v1Key(rec)
	if err != nil {
		return nil, noV1Form(rec, err)
	}
	if format.ValueKindOf(key) == format.ValueVersion {
		// v1→v2 writes 2 whatever it read; another number here is not a
		// catalog v1→v2 made, and writing 1 over it would hide that.
		n, err := format.DecodeFormatVersion(value)
		if err == nil && n != uint32(format.V2) {
			err = fmt.Errorf("catalog-format-version %d in a format-2 record", n)
		}
		if err != nil {
			return nil, noV1Form(rec, err)
		}
	}
	// As on the way up: a row's payload moves as it is, but the snapshot's.
	out, err := converted(rec, key, format.V2, format.V1, v1SnapshotRecord)
	if errors.Is(err, ErrNestedUnknownFields) {
		return nil, err // already says what and where
	}
	if err != nil {
		return nil, noV1Form(rec, err)
	}
	return []ndjson.Record{out}, nil
}

// v1Key is the same key, but for the tag-key hash of tags and column tags:
// RockLake's (format.TagKeyHash(V1, ...)) of the row's tag key, as RockLake
// v0.47.11 writes it, so a catalog it wrote comes back byte for byte.
func v1Key(rec ndjson.Record) (format.Key, error) {
	k := rec.Key()
	if k.Tag != format.TagTag && k.Tag != format.TagColumnTag {
		return k, nil
	}
	tagKey, err := rowTagKey(rec)
	if err != nil {
		return k, err
	}
	parts := slices.Clone(k.Parts)
	for i, f := range format.Fields(k.Tag, k.Name) {
		if f.Name != "tag_key_hash" {
			continue
		}
		// Unlike format 1's, format 2's hash is stable: one that is not
		// the row's tag key's is a key v1→v2 never makes, and rehashing
		// it could put two rows under one format-1 key.
		if want := format.TagKeyHash(format.V2, tagKey); parts[i] != want {
			return k, fmt.Errorf("tag_key_hash %016x is not format 2's hash of the row's tag key %q (%016x)", parts[i], tagKey, want)
		}
		parts[i] = format.TagKeyHash(format.V1, tagKey)
	}
	k.Parts = parts
	return k, nil
}

// checkMistyped refuses an unknown field whose number the record's own
// message defines (a known field with another wire type). checkCollisions
// catches those of fields both formats define; this catches format 2's
// snapshot_time_micros, field 100, which format 1 would carry as an unknown
// field 100 that v1→v2 then refuses as a collision: no way back up.
func checkMistyped(rec ndjson.Record) error {
	unknown := rec.Unknown()
	if len(unknown) == 0 {
		return nil
	}
	src, err := format.NewRow(rec.Version(), rec.Key())
	if err != nil {
		return err
	}
	fields := src.ProtoReflect().Descriptor().Fields()
	return eachUnknownField(unknown, func(num protowire.Number) error {
		if fd := fields.ByNumber(num); fd != nil {
			return fmt.Errorf("unknown field %d has the number of format %s's %s but another wire type", num, rec.Version(), fd.Name())
		}
		return nil
	})
}

// v1SnapshotRecord rebuilds a snapshot row, the one row format 2 changes.
func v1SnapshotRecord(rec ndjson.Record, key format.Key) (ndjson.Record, error) {
	return snapshotRecord(rec, key, format.V1, v1Snapshot)
}

// v1Snapshot copies every field but the time, by number, as v2Snapshot
// does, and writes the time as RockLake writes it. No time in format 2, none
// in format 1: nothing is invented.
func v1Snapshot(s *rocklakev2.Snapshot) (*rocklakev1.Snapshot, error) {
	out := &rocklakev1.Snapshot{}
	if err := copyFields(s.ProtoReflect(), out.ProtoReflect(), "snapshot_time_micros", format.V1); err != nil {
		return nil, err
	}
	if s.SnapshotTimeMicros != nil {
		text, err := FormatSnapshotTime(*s.SnapshotTimeMicros)
		if err != nil {
			return nil, err
		}
		out.SnapshotTime = text
	}
	return out, nil
}

// The instants a snapshot_time can hold: RFC 3339's four-digit years.
// chrono writes others with a sign, which no RFC 3339 reader reads, and
// ParseSnapshotTime would refuse on the way back up.
var (
	minSnapshotMicros = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	maxSnapshotMicros = time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC).UnixMicro()
)

// FormatSnapshotTime writes a format-2 snapshot_time_micros as the format-1
// snapshot_time RockLake writes for that instant: chrono's
// DateTime<Utc>::to_rfc3339 (SecondsFormat::AutoSi: 0, 3 or 6 fractional
// digits as the value needs, the 9 of nanoseconds never being needed at
// microsecond precision; the offset "+00:00"). ParseSnapshotTime reads it
// back to the same microsecond.
func FormatSnapshotTime(micros int64) (string, error) {
	if micros < minSnapshotMicros || micros > maxSnapshotMicros {
		return "", fmt.Errorf("snapshot_time_micros %d is outside the years 0000 to 9999 that RFC 3339 text holds", micros)
	}
	t := time.UnixMicro(micros).UTC()
	b := t.AppendFormat(make([]byte, 0, 32), "2006-01-02T15:04:05")
	switch ns := t.Nanosecond(); {
	case ns == 0:
	case ns%1_000_000 == 0:
		b = fmt.Appendf(b, ".%03d", ns/1_000_000)
	default:
		b = fmt.Appendf(b, ".%06d", ns/1_000)
	}
	return string(append(b, "+00:00"...)), nil
}
