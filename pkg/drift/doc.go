// Package drift owns the scheduled drift check (DESIGN 3): it reads the
// catalog pointer, opens the catalog it names read-only (catalog.Open, so the
// startup check runs first and nothing is written or fenced), and reports
// what an operator should know about:
//
//   - PointerMissing, BadPointer: there is no pointer, or it is not valid;
//   - DanglingPointer: the pointer names a location with no catalog;
//   - MissingVersionKey: the catalog has no catalog-format-version key (an
//     import that never finished, or a location RockLake cannot open);
//   - BadVersionKey: the version key's value cannot be read;
//   - VersionMismatch: the catalog's format is not the one the deployed
//     release expects (Options.Expect): RockLake refuses to open it;
//   - PointerVersionDisagrees: the pointer's format_version is not the
//     catalog's actual format;
//   - LeftoverCheckpoint: a SlateDB checkpoint of this tool (named
//     "rocklake-migrate…") on the current catalog older than
//     CheckpointMaxAge and not yet expired; it keeps the catalog's old files
//     from garbage collection;
//   - LeftoverStaging: staging objects of a migration (under
//     <staging>/<migration-id>/) that is neither the current pointer's nor the
//     previous one's, untouched for longer than StagingMaxAge: left by an
//     aborted or abandoned run.
//
// Findings have a stable Kind (JSON "kind"). A Report is JSON-serialisable and
// has a text rendering; pkg/notify sends one SNS message per report with
// findings. Check returns an error only when it could not look (S3 or SlateDB
// unreachable, bad options): drift itself is always a finding.
package drift
