// Package slatedb is the Go binding of the real SlateDB engine: the slatedb
// crate, linked in through the small Rust crate under native/ and its C ABI.
//
// It owns opening databases by URL (file:///abs/path, s3://bucket/prefix,
// memory://name/prefix), the single writer (whose open fences any earlier
// writer), readers pinned to a checkpoint or following the latest state, range
// scans, and checkpoints.
//
// The engine reads no AWS_* variable: before an s3:// database is opened, the
// process's AWS configuration (pkg/awsconfig, which pkg/blob uses too) is
// handed to it, and credentials that expire are handed over again ahead of
// expiry (aws.go). No credentials is ErrNoCredentials, as in pkg/blob.
//
// Two writer profiles tune the engine for this project's writers:
// Options.BulkLoad loads a whole database in memory that does not grow with it,
// writing no WAL (import, seed), and Options.Passive writes without compacting or collecting
// garbage (Freeze on RockLake's catalog, Finalize, kv).
//
// Goroutine safety: a Writer and a Reader may be used by many goroutines at
// once; Close waits for calls in flight and makes later calls fail with
// ErrClosed. An Iterator belongs to one goroutine. Every native handle is freed
// by Close (LiveHandles counts them, for leak tests).
//
// Every call that does I/O takes a context.Context: its deadline becomes the
// native call's timeout and its cancellation aborts the call, returning the
// context's error.
//
// The static library must be built first (make native, which the Makefile's
// build and test targets run).
package slatedb
