package shard

import (
	"github.com/rocklake/rocklake-migrate/pkg/errname"
	"github.com/rocklake/rocklake-migrate/pkg/ndjson"
)

// The package's named errors (errname).
var (
	// ErrIncompleteSet: the shard files given are not one whole export: a
	// shard is missing or doubled, or they disagree on source, checkpoint
	// or format.
	ErrIncompleteSet = errname.New("shard", ndjson.NameShardCorrupt, "incomplete shard set")
	// ErrTransformOutput: the output is a file for an input of many files,
	// or the other way round.
	ErrTransformOutput = errname.New("shard", "BadTransformOutput", "")
	// ErrMismatch: the catalog's records differ from the shards'.
	ErrMismatch = errname.New("shard", "VerifyMismatch", "the catalog's records differ from the shards'")
	// ErrCatchUp: a change could not be carried into the target.
	ErrCatchUp = errname.New("shard", "CatchUpFailed", "catch-up")
)
