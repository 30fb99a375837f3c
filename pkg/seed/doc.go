// Package seed owns deterministic test catalogs in RockLake's real layout:
// Seed writes a catalog whose content is a plausible DuckLake history as
// RockLake v0.47.11 stores it, the same bytes for the same options.
//
// A history is a sequence of commits, each one snapshot with its
// snapshot_changes: schemas and tables created (with their columns, column
// and table stats, schema versions, tags and column tags, partitioning, the
// 0xFC table_by_id index and the per-table column and row-id counters),
// tables renamed (the old row ended, a new version begun), data files added
// in batches (each with its 0x21 by-snapshot index entry, its column stats
// per column and, for partitioned tables, its partition values), delete
// files, files scheduled for deletion, and small tables whose rows are
// inlined (0x0E and 0xFD). Ids come from RockLake's counters, which end past
// every id used; snapshot times increase.
//
// Memory is bounded whatever the size: the generator holds one table at a
// time and writes through a catalog.Initializer in batches, and the
// initialization batch, the format version among it, goes last, so a seed
// that dies midway leaves nothing a binary opens.
package seed
