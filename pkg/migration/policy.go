package migration

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/rocklake/rocklake-migrate/pkg/blob"
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/format"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// UnknownTags says what a transform does with records of tags this binary
// does not know (a newer binary added a table).
type UnknownTags int

const (
	// UnknownFail refuses the input, listing each unknown tag and its count,
	// before anything is published. The default: data nobody understands is
	// not silently reshaped.
	UnknownFail UnknownTags = iota
	// UnknownCarry copies such records byte for byte.
	UnknownCarry
	// UnknownDrop skips them and reports how many.
	UnknownDrop
)

func (p UnknownTags) String() string {
	switch p {
	case UnknownCarry:
		return "carry"
	case UnknownDrop:
		return "drop"
	default:
		return "fail"
	}
}

// ParseUnknownTags reads "fail", "carry" or "drop".
func ParseUnknownTags(s string) (UnknownTags, error) {
	switch s {
	case "", "fail":
		return UnknownFail, nil
	case "carry":
		return UnknownCarry, nil
	case "drop":
		return UnknownDrop, nil
	}
	return 0, fmt.Errorf("migration: unknown-tags policy %q: want fail, carry or drop", s)
}

// The package's named errors (errname).
var (
	// ErrUnknownTags: the input holds records of tags this binary does not
	// know (a newer binary added a table) and the policy is fail. It is
	// matched by *UnknownTagsError, which lists them with their counts.
	ErrUnknownTags = errname.New("migration", "UnknownTags", "")
	// ErrFieldCollision: an unknown field of a source row has a number the
	// target format's message defines, so carrying it would make it mean
	// something else. It is matched by *FieldCollisionError.
	ErrFieldCollision = errname.New("migration", "UnknownFieldCollision", "")
	// ErrNestedUnknownFields: a row the migration rebuilds from its decoded
	// message holds fields unknown to a message nested in it, which the
	// rebuilt row could not be trusted to carry: the transform refuses it
	// rather than drop them.
	ErrNestedUnknownFields = errname.New("migration", "NestedUnknownFields", "")
	// ErrNoTargetForm: a record holds something the target format has no
	// form for, so the migration refuses it rather than drop or alter it.
	// It is matched by *NoTargetFormError.
	ErrNoTargetForm = errname.New("migration", "NoTargetForm", "")
)

// UnknownTagsError lists the unknown tags an input holds, with counts.
type UnknownTagsError struct {
	Counts map[format.Tag]uint64
}

func (e *UnknownTagsError) Error() string {
	tags := make([]format.Tag, 0, len(e.Counts))
	for t := range e.Counts {
		tags = append(tags, t)
	}
	sort.Slice(tags, func(i, j int) bool { return tags[i] < tags[j] })
	parts := make([]string, len(tags))
	for i, t := range tags {
		parts[i] = fmt.Sprintf("0x%02X: %d", byte(t), e.Counts[t])
	}
	return fmt.Sprintf("%s: input holds records of tags this binary does not know (%s); "+
		"rerun with --unknown-tags=carry to copy them byte for byte, or --unknown-tags=drop to skip them",
		ErrUnknownTags, strings.Join(parts, ", "))
}

func (e *UnknownTagsError) Is(target error) bool { return target == ErrUnknownTags }

// ErrorName is ErrUnknownTags' name.
func (e *UnknownTagsError) ErrorName() string { return ErrUnknownTags.ErrorName() }

// FieldCollisionError: an unknown protobuf field of a source row has a
// number that the target format's message defines, so carrying it would
// make it mean something else.
type FieldCollisionError struct {
	Key    []byte
	Table  string
	Number int32
	Field  string // the target message's field of that number
	To     format.Version
}

func (e *FieldCollisionError) Error() string {
	return fmt.Sprintf("%s: %s row at key %x carries unknown field %d, which format %s defines as %q",
		ErrFieldCollision, e.Table, e.Key, e.Number, e.To, e.Field)
}

func (e *FieldCollisionError) Is(target error) bool { return target == ErrFieldCollision }

// ErrorName is ErrFieldCollision's name.
func (e *FieldCollisionError) ErrorName() string { return ErrFieldCollision.ErrorName() }

// CheckUnknownTags reads the trailers of the shard files at urls and returns
// an *UnknownTagsError listing every tag this binary does not know, with
// counts, or nil: the fail policy's refusal, before any output is written.
// Each file's framing, record count and SHA-256 are checked (ndjson.SkimFile,
// at hashing speed, files in parallel), not its records: the transform that
// follows decodes them, checks the per-table counts and fails a shard whose
// records hold an unknown tag whatever its trailer says. records is what the
// trailers count in all.
func CheckUnknownTags(ctx context.Context, store *blob.Store, urls []string) (records uint64, err error) {
	trailers, err := ndjson.SkimFiles(ctx, store, urls)
	if err != nil {
		return 0, fmt.Errorf("migration: %w", err)
	}
	counts := map[format.Tag]uint64{}
	for i, u := range urls {
		records += trailers[i].Records
		for name, n := range trailers[i].Counts {
			if _, ok := format.TagByName(name); ok {
				continue
			}
			var b byte
			if _, err := fmt.Sscanf(name, "tag 0x%02X", &b); err != nil {
				return records, fmt.Errorf("migration: %s: trailer counts a table %q this binary cannot name", u, name)
			}
			counts[format.Tag(b)] += n
		}
	}
	if len(counts) > 0 {
		return records, &UnknownTagsError{Counts: counts}
	}
	return records, nil
}
