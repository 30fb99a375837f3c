// Package shard owns moving catalogs to and from NDJSON shard files, the
// pieces of the export/import migration (Strategy B) that the CLI runs by
// hand and the workflow runs one shard at a time:
//
//   - plan.go: key ranges that partition the whole key space, so every key
//     (unknown tags included) is exported exactly once; balance.go: ranges
//     of about equal bytes, from one scan in parts on every CPU;
//   - export.go: one shard per range, read through a reader pinned to a
//     checkpoint (a consistent view that never writes to the source), and,
//     in the same pass, the shard transformed to another format
//     (ExportTransformShard: the workflow's Map reads each range once);
//   - files.go: shard file names, and checking that a set of shards is whole;
//   - transform.go: shard files transformed to another format, largest
//     first, unknown tags refused from the trailers before any is written
//     (the CLI's transform; the workflow transforms one shard at a time);
//   - import.go: the one writer of a fresh target, shard after shard (every
//     shard's checksum checked before the first write, each decoded on a
//     goroutine ahead of the writer), with its progress kept in the target
//     itself so a rerun continues, and the system keys with the format
//     version written last, in one batch;
//   - verify.go: per-table counts and the order-independent digest of a
//     catalog against those of its shards;
//   - errors.go: the package's named errors.
package shard
