// Package migration owns the catalog format migrations: a registry of
// per-record transforms between adjacent format versions, in both
// directions (v1→v2, and v2→v1 back down: its exact inverse, for a rollback
// that carries keys written on the new catalog back to the old one and for
// `migrate --to` an older format), chained so that a caller asks for any
// from→to and gets the path, the unknown-tag policy (DESIGN 2.3), and the
// streaming shard transform that the CLI's `transform`, the workflow's
// TransformShard and, one record at a time, its ExportTransformShard
// (pkg/shard) run.
//
// A migration is a pure function of one record: it never looks at other
// records, so shards transform independently and in parallel, and re-running
// a transform gives the same bytes.
package migration
