package format

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"

	rocklakev1 "github.com/rocklake/rocklake-migrate/proto/rocklake/v1"
	rocklakev2 "github.com/rocklake/rocklake-migrate/proto/rocklake/v2"
)

// Row errors.
var (
	ErrUnknownTag   = errors.New("format: tag unknown to this binary has no row type")
	ErrWrongMessage = errors.New("format: message is not a row of this format")
	ErrBadRow       = errors.New("format: row payload does not decode")
)

// rowTypes maps each known tag to its row message, per format. Counter and
// system values are google.protobuf.UInt64Value in both formats.
var (
	rowTypesV1 = [256]protoreflect.MessageType{
		TagMetadata:         (*rocklakev1.Metadata)(nil).ProtoReflect().Type(),
		TagSnapshot:         (*rocklakev1.Snapshot)(nil).ProtoReflect().Type(),
		TagSnapshotChanges:  (*rocklakev1.SnapshotChanges)(nil).ProtoReflect().Type(),
		TagSchema:           (*rocklakev1.Schema)(nil).ProtoReflect().Type(),
		TagTable:            (*rocklakev1.Table)(nil).ProtoReflect().Type(),
		TagView:             (*rocklakev1.View)(nil).ProtoReflect().Type(),
		TagTag:              (*rocklakev1.Tag)(nil).ProtoReflect().Type(),
		TagColumnTag:        (*rocklakev1.ColumnTag)(nil).ProtoReflect().Type(),
		TagDataFile:         (*rocklakev1.DataFile)(nil).ProtoReflect().Type(),
		TagDeleteFile:       (*rocklakev1.DeleteFile)(nil).ProtoReflect().Type(),
		TagColumn:           (*rocklakev1.Column)(nil).ProtoReflect().Type(),
		TagTableStats:       (*rocklakev1.TableStats)(nil).ProtoReflect().Type(),
		TagTableColumnStats: (*rocklakev1.TableColumnStats)(nil).ProtoReflect().Type(),
		TagNameIndex:        (*rocklakev1.NameIndex)(nil).ProtoReflect().Type(),
		TagFileDeletion:     (*rocklakev1.FileScheduledForDeletion)(nil).ProtoReflect().Type(),
		TagCommitLog:        (*rocklakev1.CommitLogEntry)(nil).ProtoReflect().Type(),
		TagCounter:          uint64ValueType,
		TagSystem:           uint64ValueType,
	}
	rowTypesV2 = [256]protoreflect.MessageType{
		TagMetadata:         (*rocklakev2.Metadata)(nil).ProtoReflect().Type(),
		TagSnapshot:         (*rocklakev2.Snapshot)(nil).ProtoReflect().Type(),
		TagSnapshotChanges:  (*rocklakev2.SnapshotChanges)(nil).ProtoReflect().Type(),
		TagSchema:           (*rocklakev2.Schema)(nil).ProtoReflect().Type(),
		TagTable:            (*rocklakev2.Table)(nil).ProtoReflect().Type(),
		TagView:             (*rocklakev2.View)(nil).ProtoReflect().Type(),
		TagTag:              (*rocklakev2.Tag)(nil).ProtoReflect().Type(),
		TagColumnTag:        (*rocklakev2.ColumnTag)(nil).ProtoReflect().Type(),
		TagDataFile:         (*rocklakev2.DataFile)(nil).ProtoReflect().Type(),
		TagDeleteFile:       (*rocklakev2.DeleteFile)(nil).ProtoReflect().Type(),
		TagColumn:           (*rocklakev2.Column)(nil).ProtoReflect().Type(),
		TagTableStats:       (*rocklakev2.TableStats)(nil).ProtoReflect().Type(),
		TagTableColumnStats: (*rocklakev2.TableColumnStats)(nil).ProtoReflect().Type(),
		TagNameIndex:        (*rocklakev2.NameIndex)(nil).ProtoReflect().Type(),
		TagFileDeletion:     (*rocklakev2.FileScheduledForDeletion)(nil).ProtoReflect().Type(),
		TagCommitLog:        (*rocklakev2.CommitLogEntry)(nil).ProtoReflect().Type(),
		TagCounter:          uint64ValueType,
		TagSystem:           uint64ValueType,
	}
	uint64ValueType = (*wrapperspb.UInt64Value)(nil).ProtoReflect().Type()

	rowNamesV1 = rowNames(&rowTypesV1)
	rowNamesV2 = rowNames(&rowTypesV2)
)

func rowNames(types *[256]protoreflect.MessageType) map[protoreflect.FullName]bool {
	m := map[protoreflect.FullName]bool{}
	for _, mt := range types {
		if mt != nil {
			m[mt.Descriptor().FullName()] = true
		}
	}
	return m
}

func rowType(v Version, t Tag) (protoreflect.MessageType, error) {
	var mt protoreflect.MessageType
	switch v {
	case V1:
		mt = rowTypesV1[t]
	case V2:
		mt = rowTypesV2[t]
	default:
		return nil, errUnsupported(v)
	}
	if mt == nil {
		return nil, fmt.Errorf("%w (%s, %s)", ErrUnknownTag, v, t)
	}
	return mt, nil
}

// NewRow returns an empty row message for tag t in format v: a
// *rocklakev1.DataFile for (V1, TagDataFile), a *wrapperspb.UInt64Value for
// counters and system keys, and so on.
func NewRow(v Version, t Tag) (proto.Message, error) {
	mt, err := rowType(v, t)
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

// DecodeValue checks the format-v envelope of value and unmarshals its
// payload into the row message of tag t. Fields unknown to this binary are
// kept in the message and written back by EncodeValue. The message does not
// alias value.
func DecodeValue(v Version, t Tag, value []byte) (proto.Message, error) {
	mt, err := rowType(v, t)
	if err != nil {
		return nil, err
	}
	payload, err := DecodeEnvelope(v, value)
	if err != nil {
		return nil, err
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(payload, m); err != nil {
		return nil, fmt.Errorf("%w (%s %s): %w", ErrBadRow, v, t, err)
	}
	return m, nil
}

// EncodeValue marshals row msg deterministically (same message, same bytes,
// so digests of a catalog are reproducible) into the envelope of format v.
// msg must be a row message of format v, as NewRow returns.
func EncodeValue(v Version, msg proto.Message) ([]byte, error) {
	var names map[protoreflect.FullName]bool
	switch v {
	case V1:
		names = rowNamesV1
	case V2:
		names = rowNamesV2
	default:
		return nil, errUnsupported(v)
	}
	if msg == nil {
		return nil, fmt.Errorf("%w (nil)", ErrWrongMessage)
	}
	if name := msg.ProtoReflect().Descriptor().FullName(); !names[name] {
		return nil, fmt.Errorf("%w (%s is not a %s row)", ErrWrongMessage, name, v)
	}
	// Size first, then marshal into one buffer with the header reserved in
	// front, reusing the computed sizes: a single allocation per value.
	size := proto.MarshalOptions{Deterministic: true}.Size(msg)
	h := envelopeHeaderLen(v)
	b, err := proto.MarshalOptions{Deterministic: true, UseCachedSize: true}.MarshalAppend(make([]byte, h, h+size), msg)
	if err != nil {
		return nil, fmt.Errorf("format: marshal %s row: %w", v, err)
	}
	return sealEnvelope(v, b), nil
}
