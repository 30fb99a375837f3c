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
//     aborted or abandoned run;
//   - OrphanCheckpoint: a checkpoint of this tool, of any age, on any catalog
//     the pointer ever named (its history), that is not the active
//     migration's (Options.Active, the lock's holder) and not already a
//     LeftoverCheckpoint; a by-hand export's checkpoint is left to expire;
//   - (staging whose plan.json names another pointer is never a finding:
//     pointers beside each other share the default staging);
//   - OrphanStaging: <staging>/<id>/ of any age, not yet a LeftoverStaging,
//     of a migration that is neither the active one nor the current or
//     previous pointer's, nor that of the pointer version the current one
//     replaced (so a rollback keeps its audit trail, and so does the run it
//     rolled back);
//   - UnclaimedTarget: a Strategy B target that a run of this pointer
//     claimed (pkg/claim, <pointer>.claims/<id>.json, written before the
//     run created it), that no pointer version named and the active
//     migration is not making: a run that never flipped left it;
//   - WayBackKept: an in-place migration's way back (the catalog as it
//     was) that a run of this pointer claimed and no pointer version names:
//     the run died after the copy (restore brings the catalog back from
//     it), or the version that named it expired; never removable;
//   - ReleasedWayBack: such a way back that a later run recorded as no
//     longer needed (claim.Claim.Released): removable;
//   - Undecided: the pointer's history or the lock cannot be read (or a
//     version is not a valid pointer): orphans cannot be told from what is in
//     use, so none is reported, and pkg/workflow's Cleanup removes nothing.
//
// <staging>/decisions/ (layout.DecisionsDir) holds the migrations' decision
// markers, kept on purpose: it is never a finding. Kind.Removable says which
// kinds name something cleanup may delete. The names the check recognises
// (checkpoints, targets, way backs, staging, plans) are pkg/layout's, the
// ones the workflow gives what it leaves; which directories are this
// pointer's own is pkg/claim's.
//
// A directory beside the catalogs that no claim of this pointer names is
// never a finding, whatever its name: v<N>-<id> is also the shape of another
// pointer's live catalog beside this one's, of an operator's backup, and of
// a target another pointer's run is still importing.
//
// Findings have a stable Kind (JSON "kind"). A Report is JSON-serialisable and
// has a text rendering; pkg/notify sends one SNS message per report with
// findings. Check returns an error only when it could not look (S3 or SlateDB
// unreachable, bad options): drift itself is always a finding.
package drift
