package format

import (
	"encoding/binary"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Value errors.
var (
	ErrNoRowType    = errors.New("format: key has no row type (unknown tag or shape)")
	ErrWrongMessage = errors.New("format: message is not the row of this key and format")
	ErrCounterValue = errors.New("format: counter value is not 8 bytes")
)

// NewRow returns an empty message for the value of key k in format v: the
// row message (a *rocklakev1.DataFile for a format-1 data file, ...) for
// ValueRow keys, a *wrapperspb.UInt64Value for counters, a
// *wrapperspb.UInt32Value for the format version, and a
// *wrapperspb.BytesValue for enveloped and raw bytes.
func NewRow(v Version, k Key) (proto.Message, error) {
	mt, err := rowType(v, k)
	if err != nil {
		return nil, err
	}
	return mt.New().Interface(), nil
}

func rowType(v Version, k Key) (protoreflect.MessageType, error) {
	if !Supported(v) {
		return nil, errUnsupported(v)
	}
	s := shapeOf(k)
	if s == nil {
		return nil, fmt.Errorf("%w (%s %s %q)", ErrNoRowType, v, k.Tag, k.Name)
	}
	switch s.value {
	case ValueRow:
		return s.rows[v], nil
	case ValueCounter:
		return uint64ValueType, nil
	case ValueVersion:
		return uint32ValueType, nil
	default:
		return bytesValueType, nil
	}
}

// DecodeValue decodes the format-v value stored under key k into NewRow's
// message. Protobuf fields unknown to this binary are kept in the message and
// written back by EncodeValue. The message does not alias value.
func DecodeValue(v Version, k Key, value []byte) (proto.Message, error) {
	mt, err := rowType(v, k)
	if err != nil {
		return nil, err
	}
	switch ValueKindOf(k) {
	case ValueRaw:
		return wrapperspb.Bytes(append([]byte{}, value...)), nil
	case ValueVersion:
		n, err := DecodeFormatVersion(value)
		if err != nil {
			return nil, err
		}
		return wrapperspb.UInt32(n), nil
	}
	payload, err := DecodeEnvelope(v, value)
	if err != nil {
		return nil, err
	}
	switch ValueKindOf(k) {
	case ValueCounter:
		if len(payload) != 8 {
			return nil, fmt.Errorf("%w (%s %s: %d bytes)", ErrCounterValue, v, k.Tag, len(payload))
		}
		return wrapperspb.UInt64(binary.BigEndian.Uint64(payload)), nil
	case ValueEnveloped:
		return wrapperspb.Bytes(append([]byte{}, payload...)), nil
	}
	m := mt.New().Interface()
	if err := proto.Unmarshal(payload, m); err != nil {
		return nil, fmt.Errorf("%w (%s %s): %w", ErrBadRow, v, k.Tag, err)
	}
	return m, nil
}

// EncodeValue encodes msg, NewRow's message for key k, as format v stores
// it. Rows are marshalled deterministically in field-number order, as
// RockLake's prost does, so that the same row gives the same bytes.
func EncodeValue(v Version, k Key, msg proto.Message) ([]byte, error) {
	mt, err := rowType(v, k)
	if err != nil {
		return nil, err
	}
	if msg == nil || msg.ProtoReflect().Descriptor() != mt.Descriptor() {
		return nil, fmt.Errorf("%w (%s %s wants %s)", ErrWrongMessage, v, k.Tag, mt.Descriptor().FullName())
	}
	switch ValueKindOf(k) {
	case ValueRaw:
		return append([]byte{}, msg.(*wrapperspb.BytesValue).GetValue()...), nil
	case ValueVersion:
		return EncodeFormatVersion(msg.(*wrapperspb.UInt32Value).GetValue()), nil
	case ValueCounter:
		return EncodeCounter(v, msg.(*wrapperspb.UInt64Value).GetValue()), nil
	case ValueEnveloped:
		return EncodeEnvelope(v, msg.(*wrapperspb.BytesValue).GetValue()), nil
	}
	// Size first, then marshal into one buffer with the header reserved in
	// front, reusing the computed sizes: a single allocation per value.
	size := proto.MarshalOptions{Deterministic: true}.Size(msg)
	h := EnvelopeHeaderLen(v)
	b, err := proto.MarshalOptions{Deterministic: true, UseCachedSize: true}.MarshalAppend(make([]byte, h, h+size), msg)
	if err != nil {
		return nil, fmt.Errorf("format: marshal %s row: %w", v, err)
	}
	return SealEnvelope(v, b), nil
}

// EncodeCounter returns a counter value in format v: the envelope, then n as
// a big-endian u64 (RockLake's encode_counter).
func EncodeCounter(v Version, n uint64) []byte {
	mustSupport(v)
	h := EnvelopeHeaderLen(v)
	return SealEnvelope(v, binary.BigEndian.AppendUint64(make([]byte, h, h+8), n))
}

// DecodeCounter decodes a format-v counter value.
func DecodeCounter(v Version, value []byte) (uint64, error) {
	payload, err := DecodeEnvelope(v, value)
	if err != nil {
		return 0, err
	}
	if len(payload) != 8 {
		return 0, fmt.Errorf("%w (%s: %d bytes)", ErrCounterValue, v, len(payload))
	}
	return binary.BigEndian.Uint64(payload), nil
}
