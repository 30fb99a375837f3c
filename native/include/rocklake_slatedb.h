/* C ABI of native/ (the slatedb crate), used by pkg/slatedb through cgo.
 * Every call returns RL_OK or an RL_ERR_* code; on error *err_out holds a
 * message the caller frees with rl_string_free. Buffers handed out are freed
 * with rl_bytes_free, strings with rl_string_free. timeout_ms 0 = no limit;
 * cancel may be NULL. Byte formats (u32 little-endian lengths):
 *   write batch: repeated op:u8 (0 put, 1 delete) | klen | key | [vlen | value]
 *   scan chunk:  repeated klen | key | vlen | value                           */
#ifndef ROCKLAKE_SLATEDB_H
#define ROCKLAKE_SLATEDB_H
#include <stddef.h>
#include <stdint.h>

#define RL_OK 0
#define RL_ERR_INTERNAL 1
#define RL_ERR_INVALID 2
#define RL_ERR_NOT_FOUND 3
#define RL_ERR_FENCED 4
#define RL_ERR_CHECKPOINT_MISSING 5
#define RL_ERR_UNAVAILABLE 6
#define RL_ERR_CLOSED 7
#define RL_ERR_DATA 8
#define RL_ERR_TIMEOUT 9
#define RL_ERR_CANCELED 10
#define RL_ERR_NO_DATABASE 11
#define RL_ERR_NO_BUCKET 12
#define RL_ERR_NO_CREDENTIALS 13

typedef struct rl_writer rl_writer;
typedef struct rl_reader rl_reader;
typedef struct rl_iter rl_iter;
typedef struct rl_cancel rl_cancel;
typedef struct rl_changes rl_changes;

/* The process's AWS settings, from Go (pkg/awsconfig): a JSON object
 * {"region","endpoint","path_style","access_key_id","secret_access_key",
 *  "session_token","expires_unix_ms"} (endpoint "" = AWS S3; expires 0 = never).
 * s3:// stores opened later use its region and endpoint, and every S3 request,
 * on open stores too, is signed with the credentials handed last; with none
 * handed, s3:// fails with RL_ERR_NO_CREDENTIALS. AWS_* variables are not read. */
int32_t rl_aws_set(const char *settings_json, char **err_out);

int32_t rl_writer_open(const char *url, const char *opts_json, uint64_t timeout_ms,
                       const rl_cancel *cancel, rl_writer **out, char **err_out);
/* What the writer's open fetched ahead with options' warm_wal: WAL SSTs,
 * their bytes, and the milliseconds taken, before the open itself. */
int32_t rl_writer_warmed(rl_writer *w, uint64_t *ssts, uint64_t *bytes, uint64_t *ms, char **err_out);
int32_t rl_writer_write(rl_writer *w, const uint8_t *batch, size_t batch_len, uint8_t durable,
                        uint64_t timeout_ms, const rl_cancel *cancel, char **err_out);
int32_t rl_writer_flush(rl_writer *w, uint64_t timeout_ms, const rl_cancel *cancel, char **err_out);
int32_t rl_writer_flush_memtable(rl_writer *w, uint64_t timeout_ms, const rl_cancel *cancel, char **err_out);
int32_t rl_writer_close(rl_writer *w, uint64_t timeout_ms, char **err_out);
int32_t rl_writer_checkpoint(rl_writer *w, uint64_t lifetime_ms, const char *name,
                             uint64_t timeout_ms, const rl_cancel *cancel, char **out,
                             char **err_out);

int32_t rl_reader_open(const char *url, const char *opts_json, const char *checkpoint_id,
                       uint64_t timeout_ms, const rl_cancel *cancel, rl_reader **out,
                       char **err_out);
int32_t rl_reader_close(rl_reader *r, uint64_t timeout_ms, char **err_out);

/* kind: 0 = rl_writer*, 1 = rl_reader* */
int32_t rl_get(uint8_t kind, void *h, const uint8_t *key, size_t key_len, uint64_t timeout_ms,
               const rl_cancel *cancel, uint8_t **out, size_t *out_len, char **err_out);
int32_t rl_scan(uint8_t kind, void *h, const uint8_t *start, size_t start_len,
                const uint8_t *end, size_t end_len, uint64_t timeout_ms,
                const rl_cancel *cancel, rl_iter **out, char **err_out);
int32_t rl_iter_next(rl_iter *it, size_t max_entries, size_t max_bytes, uint64_t timeout_ms,
                     const rl_cancel *cancel, uint8_t **out, size_t *out_len, char **err_out);
void rl_iter_close(rl_iter *it);

int32_t rl_checkpoint_create(const char *url, const char *opts_json, uint64_t lifetime_ms,
                             const char *name, uint64_t timeout_ms, const rl_cancel *cancel,
                             char **out, char **err_out);
int32_t rl_checkpoint_list(const char *url, const char *opts_json, uint64_t timeout_ms,
                           const rl_cancel *cancel, char **out, char **err_out);
int32_t rl_checkpoint_delete(const char *url, const char *opts_json, const char *checkpoint_id,
                             uint64_t timeout_ms, const rl_cancel *cancel, char **err_out);
int32_t rl_checkpoint_copy(const char *url, const char *opts_json, const char *checkpoint_id,
                           uint64_t wal_end, const char *dest_url, uint64_t timeout_ms, const rl_cancel *cancel,
                           char **out, char **err_out);
/* Where the database's bytes lie in key order, from its compacted SSTs'
 * indexes (no data read, nothing written), as checkpoint_id holds it (NULL
 * or "": the latest manifest), in at most max(max_blocks, SSTs) blocks
 * (0: no bound). *out (free with rl_bytes_free), little-endian:
 *   manifest_id:u64 | ssts:u64 | wal_ssts:u64 | wal_bytes:u64 | merged:u32 | n:u32
 *   then n times klen:u32 | key | bytes:u64 | run:i64 (-1 = L0) | sst ULID:16 (big-endian) */
int32_t rl_block_profile(const char *url, const char *opts_json, const char *checkpoint_id,
                         size_t max_blocks, uint64_t timeout_ms, const rl_cancel *cancel,
                         uint8_t **out, size_t *out_len, char **err_out);

/* What changed between two views of the database at url, each a checkpoint
 * plus the WAL SSTs past its manifest's up to *_wal_end (exclusive; at or
 * below the manifest's own end: none): the keys of the compacted SSTs and
 * WAL SSTs one view names and the other does not, read in both views; or, when those sources hold more than
 * max_fraction of the later view's bytes (<= 0: always), a merge scan of both
 * views. Writes nothing. *summary_out (JSON, rl_string_free):
 * {"method":"sst-diff"|"merge-scan","reason","from_manifest","to_manifest",
 *  "from_wal_end","to_wal_end",
 *  "ssts_added","ssts_removed","wals_added","wals_removed","changed_bytes",
 *  "total_bytes","candidates"}. Chunks from rl_changes_next, in key order:
 *   repeated klen | key | old | new, each of old and new 0:u8 (absent) or
 *   1:u8 | vlen | value; an empty chunk is the end. */
int32_t rl_changes_open(const char *url, const char *opts_json, const char *from_checkpoint,
                        uint64_t from_wal_end, const char *to_checkpoint, uint64_t to_wal_end,
                        double max_fraction, uint64_t timeout_ms, const rl_cancel *cancel,
                        rl_changes **out, char **summary_out, char **err_out);
/* One past the highest WAL SST id of the database at url in *out (0: none). */
int32_t rl_wal_end(const char *url, const char *opts_json, uint64_t timeout_ms,
                   const rl_cancel *cancel, uint64_t *out, char **err_out);
int32_t rl_changes_next(rl_changes *c, size_t max_entries, size_t max_bytes, uint64_t timeout_ms,
                        const rl_cancel *cancel, uint8_t **out, size_t *out_len, char **err_out);
int32_t rl_changes_close(rl_changes *c, uint64_t timeout_ms, char **err_out);

rl_cancel *rl_cancel_new(void);
void rl_cancel_fire(const rl_cancel *c);
void rl_cancel_free(rl_cancel *c);
void rl_bytes_free(uint8_t *p, size_t len);
void rl_string_free(char *p);
int64_t rl_live_handles(void);
const char *rl_slatedb_version(void);

#endif
