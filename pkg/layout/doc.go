// Package layout owns where rocklake-migrate's objects live: pure functions
// from a pointer URL, a catalog URL, a staging root and a migration id to
// the URL of every object the tool writes or reads, the names it gives
// SlateDB checkpoints, and the parsers that recognise those names again in
// a listing. No other package builds these names: drift, workflow,
// inplace, history, claim, shard, supervise and the CLI ask here (the CDK
// module's grants, which do not import the tool, spell the three pointer
// suffixes by key, and its TestLambdaLeastPrivilege pins them).
//
// Objects already sit in buckets under these names, so the bytes of every
// name are a contract (layout_test.go pins each one): a reader of a bucket
// can rely on the table below, and a change to it is a migration of its
// own. With the pointer s3://b/rocklake/CURRENT, the source catalog
// s3://b/catalogs/prod, the staging root s3://b/rocklake/migrations and
// migration m-1 from format v1 to v2:
//
//	object                         path                                                          written by
//	lock                           <pointer>.lock                                                Check; unlock breaks it
//	run record                     <pointer>.history/<start 20060102T150405.000Z>-<run id>.json  Check, Flip, Abort, Rollback, Cleanup, Restore
//	claim                          <pointer>.claims/<migration id>.json                          Check (target), InPlace (way back)
//	                               <pointer>.claims/replica-<id>.json                            Check (the read replica)
//	                               <pointer>.claims/reader-<supervisor>-<n>.json                 serve (its reader copy)
//	presence record                <pointer>.servers/<supervisor id>.json                        serve; the fencing steps read it
//	default staging root           <dir of the pointer>/migrations                               (the CLI's default)
//	target (Strategy B)            <dir of the source>/v<N>-<id>, or <target dir>/v<N>-<id>      Import
//	way back (Strategy A)          <dir of the source>/v<N-1>-<id>                               InPlace
//	read replica                   <dir of the source>/replica-<id>                              Freeze
//	a supervisor's reader copy     <dir of the catalog>/reader-<supervisor id>-<n>               serve
//	its checkpoint, while copying  rocklake-migrate-reader-<supervisor id> (on the catalog)      serve
//	Freeze's checkpoint            rocklake-migrate-<id> (on the source)                         Freeze
//	the way back's checkpoint      rocklake-migrate-inplace-<id> (on the source)                 InPlace
//	an export's own checkpoint     rocklake-migrate-export                                       export (CLI)
//	a migration's staging          <staging>/<id>/                                               every step; Abort deletes it
//	plan                           <staging>/<id>/plan.json                                      Freeze
//	shards, source format          <staging>/<id>/v<from>/shard-<i 5 digits>-of-<n 5 digits>.ndjson.zst   the Map
//	shards, target format          <staging>/<id>/v<to>/…, in a rebuild <staging>/<id>/v<to>-rebuilt/…   the Map; Import reads them
//	shard results                  <staging>/<id>/results/{export,transform}-<i 5 digits>.json   the Map
//	step results                   <staging>/<id>/{owner,probe,import,target-claim,verify,flip-intent,gate}.json
//	step times                     <staging>/<id>/timing/<step>[-<i 5 digits>]-<end unix ns>.json
//	decision                       <staging>/decisions/<id>: "flip", "abort" or "withdrawn"     Flip, Abort (never deleted)
//
// <dir of X> is X's parent: a catalog at the root of its bucket or file
// system has no place beside it (ErrAtRoot). A shard file's name is the
// same wherever it is written (the CLI's export and transform take any
// directory), with .gz, .zst or no suffix. What is inside a catalog
// (manifest/, wal/, compacted/) is SlateDB's layout, not this tool's.
package layout
