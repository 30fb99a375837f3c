// Package pointer owns the catalog pointer object: the small JSON object, in
// a versioned S3 bucket (for example s3://bucket/rocklake/CURRENT), that
// names the catalog RockLake serves, its format version, the migration that
// wrote the pointer and the catalog and migration before it (DESIGN 3).
//
//	{
//	  "catalog": "s3://bucket/catalogs/prod-v2",
//	  "format_version": 2,
//	  "migration_id": "mig-20260101-abcd",
//	  "previous_catalog": "s3://bucket/catalogs/prod-v1",
//	  "previous_migration_id": "initial",
//	  "updated_at": "2026-01-01T12:00:00Z"
//	}
//
// Every change is a conditional write and every object version is kept:
//
//   - Create writes the first pointer (If-None-Match: *).
//   - Flip writes the next one only if the pointer is still the version read
//     earlier (If-Match on its ETag); if someone else moved it, nothing is
//     written and the error is PointerConflict.
//   - Rollback makes an earlier version current again, by writing its exact
//     bytes as a new version, conditional on the current ETag. It undoes the
//     latest flip: it restores the newest kept version that holds the
//     pointer named by the current pointer's previous_catalog and
//     previous_migration_id. A second rollback therefore goes one more step
//     back along that chain (not back to where the first one started), and
//     fails with NoPreviousVersion once a pointer names no previous one.
//   - History lists the versions, newest first, for `status`.
//
// Create, Flip, Rollback and History refuse a bucket without versioning
// enabled (PointerUnversioned): rollback relies on S3 keeping the old versions.
// Read works on any object, local files included.
//
// Decoding is strict: unknown fields, missing required fields, trailing data,
// a catalog that is not an s3:// or file:/// URL, or a format version of 0
// are ErrBadPointer. A format version this binary does not support is still a
// valid pointer: the startup check of whoever opens the catalog refuses it.
//
// Every error this package returns for a pointer-level condition is an
// *Error whose ErrorName is a stable Step Functions error name
// (PointerConflict, PointerUnversioned, PointerMissing, PointerExists,
// NoPreviousVersion, BadPointer); match it with errors.Is against the Err*
// values, or errors.As to an *Error. Failures of S3 itself (network,
// permissions) are returned wrapped as they are, without a name.
package pointer
