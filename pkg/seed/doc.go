// Package seed owns deterministic test catalogs: Seed writes a catalog of
// exactly the requested number of rows whose content is a plausible DuckLake
// history (snapshots and their changes, schemas, tables with columns, tags,
// views, stats, and mostly data and delete files), the same bytes for the
// same seed.
//
// A catalog is first planned in memory as a sequence of commits, each one
// snapshot, so that every row is consistent with the others: a row's
// begin_snapshot is the commit that made it and its end_snapshot (when set)
// the later one that ended it, referenced ids exist, snapshot times
// increase, and the counters end past the highest ids used. The plan is then
// written through a catalog.Initializer: rows first, and the system and
// counter keys, the format version among them, in one final batch.
//
// "Rows" are all the keys but the counter and system keys: DuckLake tables
// and RockLake's internal ones (name index, files scheduled for deletion,
// commit log), which a real catalog holds too.
package seed
