//! C ABI over the `slatedb` crate, for rocklake-migrate's Go binding (`pkg/slatedb`).
//!
//! The surface is deliberately narrow: object stores by URL, a writer, a reader
//! (pinned to a checkpoint or following the latest state), range-scan iterators
//! that hand over many entries per call, and checkpoints. Every entry point:
//!
//! - returns an `i32` status code (`RL_OK` or one of the `RL_ERR_*` codes) and, on
//!   error, a message in `*err_out` that the caller frees with `rl_string_free`;
//! - catches panics, so none crosses the boundary (a panic becomes `RL_ERR_INTERNAL`);
//! - blocks the calling thread on one process-wide Tokio runtime, bounded by a
//!   timeout and by an optional cancel token, so Go's context deadlines hold.
//!
//! Byte formats shared with Go (all integers little-endian u32):
//! - write batch: repeated `op:u8 (0 put, 1 delete) | klen | key | [vlen | value]`;
//! - scan chunk:  repeated `klen | key | vlen | value`.

// Entry points take raw pointers from C; their validity is the contract the
// header states, and each dereference is commented where it happens. Marking
// every extern fn `unsafe` would change nothing for C callers.
#![allow(clippy::not_unsafe_ptr_arg_deref)]

mod aws;
mod blocks;
mod changes;
mod copy;
mod guard;
mod http;
mod manifest;
mod overlays;
mod store;

use std::ffi::{c_char, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::LazyLock;
use std::time::Duration;

use slatedb::bytes::Bytes;
use slatedb::config::{
    CheckpointOptions, CheckpointScope, DbReaderOptions, FlushOptions, FlushType, ScanOptions,
    Settings, WriteOptions,
};
use slatedb::{Db, DbIterator, DbReader, ErrorKind, WriteBatch};
use tokio::runtime::Runtime;
use tokio::sync::Notify;
use uuid::Uuid;

pub const RL_OK: i32 = 0;
pub const RL_ERR_INTERNAL: i32 = 1;
pub const RL_ERR_INVALID: i32 = 2;
pub const RL_ERR_NOT_FOUND: i32 = 3;
pub const RL_ERR_FENCED: i32 = 4;
pub const RL_ERR_CHECKPOINT_MISSING: i32 = 5;
pub const RL_ERR_UNAVAILABLE: i32 = 6;
pub const RL_ERR_CLOSED: i32 = 7;
pub const RL_ERR_DATA: i32 = 8;
pub const RL_ERR_TIMEOUT: i32 = 9;
pub const RL_ERR_CANCELED: i32 = 10;
pub const RL_ERR_NO_DATABASE: i32 = 11;
pub const RL_ERR_NO_BUCKET: i32 = 12;
pub const RL_ERR_NO_CREDENTIALS: i32 = 13;

/// One runtime per process: SlateDB's background tasks (flusher, compactor, GC,
/// manifest pollers) live here, independent of which Go thread calls in.
static RUNTIME: LazyLock<Result<Runtime, String>> = LazyLock::new(|| {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("rocklake-slatedb")
        .build()
        .map_err(|e| format!("start tokio runtime: {e}"))
});

/// Live native handles (writers, readers, iterators, cancel tokens), so tests can
/// prove that every handle is freed.
static LIVE: AtomicI64 = AtomicI64::new(0);

struct Fail {
    code: i32,
    msg: String,
}

type Res<T> = Result<T, Fail>;

fn fail(code: i32, msg: impl Into<String>) -> Fail {
    Fail {
        code,
        msg: msg.into(),
    }
}

/// The most an error message carries across the ABI: a message is read by
/// people, and S3 error responses would otherwise bring kilobytes of XML.
const MAX_MSG: usize = 2000;

/// Describes `e` with its causes on one line (SlateDB's own message often
/// hides the object store's reason in a source), S3 XML bodies reduced to
/// their Code and Message, at most MAX_MSG bytes.
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![e.to_string()];
    let mut cur = e.source();
    while let Some(s) = cur {
        let t = s.to_string();
        if !parts.iter().any(|p| p.contains(&t)) {
            parts.push(t);
        }
        cur = s.source();
    }
    bounded(&strip_xml(&parts.join(": ")))
}

/// Replaces an XML error body, from "<?xml" on, by its <Code> and <Message>.
fn strip_xml(s: &str) -> String {
    let Some(i) = s.find("<?xml") else {
        return s.to_string();
    };
    let body = &s[i..];
    let tag = |t: &str| -> String {
        let open = format!("<{t}>");
        let close = format!("</{t}>");
        body.find(&open)
            .map(|a| &body[a + open.len()..])
            .and_then(|rest| rest.find(&close).map(|b| rest[..b].to_string()))
            .unwrap_or_default()
    };
    format!("{}S3 error {}: {}", &s[..i], tag("Code"), tag("Message"))
}

fn bounded(s: &str) -> String {
    if s.len() <= MAX_MSG {
        return s.to_string();
    }
    let mut end = MAX_MSG;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}... ({} more bytes)", &s[..end], s.len() - end)
}

/// Maps SlateDB's public error kinds onto the ABI codes. CheckpointMissing has no
/// kind of its own (it is a Data error), so its message identifies it.
fn from_slate(context: &str, e: slatedb::Error) -> Fail {
    let msg = format!("{context}: {}", describe(&e));
    let code = match e.kind() {
        _ if msg.contains(aws::NO_CREDENTIALS) => RL_ERR_NO_CREDENTIALS,
        ErrorKind::Closed(slatedb::CloseReason::Fenced) => RL_ERR_FENCED,
        ErrorKind::Closed(_) => RL_ERR_CLOSED,
        ErrorKind::Unavailable => RL_ERR_UNAVAILABLE,
        ErrorKind::Invalid => RL_ERR_INVALID,
        ErrorKind::Data if msg.contains("checkpoint missing") => RL_ERR_CHECKPOINT_MISSING,
        ErrorKind::Data => RL_ERR_DATA,
        _ => RL_ERR_INTERNAL,
    };
    Fail { code, msg }
}

fn runtime() -> Res<&'static Runtime> {
    RUNTIME
        .as_ref()
        .map_err(|e| fail(RL_ERR_INTERNAL, e.clone()))
}

/// A cancel token: Go fires it when a context is canceled, and the blocked call
/// returns RL_ERR_CANCELED.
pub struct CancelToken {
    notify: Notify,
    fired: std::sync::atomic::AtomicBool,
}

/// Runs `fut` to completion on the runtime, giving up after `timeout_ms` (0 = no
/// limit) or when `cancel` fires. Abandoned futures are dropped, which SlateDB
/// tolerates: its writes are either applied or not.
fn block<T>(
    timeout_ms: u64,
    cancel: *const CancelToken,
    fut: impl std::future::Future<Output = Res<T>>,
) -> Res<T> {
    let rt = runtime()?;
    // SAFETY: Go keeps the token alive until the call returns.
    let cancel = unsafe { cancel.as_ref() };
    rt.block_on(async move {
        let cancelled = async {
            match cancel {
                Some(c) => loop {
                    let notified = c.notify.notified();
                    if c.fired.load(Ordering::SeqCst) {
                        return;
                    }
                    notified.await;
                },
                None => std::future::pending::<()>().await,
            }
        };
        let limit = async {
            if timeout_ms == 0 {
                std::future::pending::<()>().await
            } else {
                tokio::time::sleep(Duration::from_millis(timeout_ms)).await
            }
        };
        tokio::select! {
            r = fut => r,
            _ = cancelled => Err(fail(RL_ERR_CANCELED, "operation canceled")),
            _ = limit => Err(fail(RL_ERR_TIMEOUT, format!("operation timed out after {timeout_ms} ms"))),
        }
    })
}

/// Wraps an entry point: catches panics and writes the error message.
fn ffi(err_out: *mut *mut c_char, f: impl FnOnce() -> Res<()>) -> i32 {
    let result = catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        Err(fail(
            RL_ERR_INTERNAL,
            format!("panic in slatedb binding: {what}"),
        ))
    });
    match result {
        Ok(()) => RL_OK,
        Err(e) => {
            if !err_out.is_null() {
                let msg = CString::new(e.msg.replace('\0', " ")).unwrap_or_default();
                // SAFETY: err_out was checked non-null; the caller owns the string.
                unsafe { *err_out = msg.into_raw() };
            }
            e.code
        }
    }
}

fn cstr<'a>(p: *const c_char, what: &str) -> Res<&'a str> {
    if p.is_null() {
        return Err(fail(RL_ERR_INVALID, format!("{what} is null")));
    }
    // SAFETY: Go passes NUL-terminated strings that live for the call.
    unsafe { CStr::from_ptr(p) }
        .to_str()
        .map_err(|_| fail(RL_ERR_INVALID, format!("{what} is not UTF-8")))
}

fn bytes<'a>(p: *const u8, len: usize) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: Go passes a pointer to len readable bytes that live for the call.
        unsafe { std::slice::from_raw_parts(p, len) }
    }
}

fn out_bytes(v: Vec<u8>, out: *mut *mut u8, out_len: *mut usize) -> Res<()> {
    if out.is_null() || out_len.is_null() {
        return Err(fail(RL_ERR_INVALID, "output pointer is null"));
    }
    let boxed = v.into_boxed_slice();
    let len = boxed.len();
    let ptr = Box::into_raw(boxed) as *mut u8;
    // SAFETY: checked non-null above; ownership passes to the caller (rl_bytes_free).
    unsafe {
        *out = ptr;
        *out_len = len;
    }
    Ok(())
}

fn out_string(s: String, out: *mut *mut c_char) -> Res<()> {
    if out.is_null() {
        return Err(fail(RL_ERR_INVALID, "output pointer is null"));
    }
    let c = CString::new(s).map_err(|_| fail(RL_ERR_INTERNAL, "string holds NUL"))?;
    // SAFETY: checked non-null; ownership passes to the caller (rl_string_free).
    unsafe { *out = c.into_raw() };
    Ok(())
}

fn out_handle<T>(v: T, out: *mut *mut T) -> Res<()> {
    if out.is_null() {
        return Err(fail(RL_ERR_INVALID, "handle output pointer is null"));
    }
    LIVE.fetch_add(1, Ordering::SeqCst);
    // SAFETY: checked non-null; the caller frees the handle with its close function.
    unsafe { *out = Box::into_raw(Box::new(v)) };
    Ok(())
}

fn handle<'a, T>(p: *mut T, what: &str) -> Res<&'a T> {
    // SAFETY: Go passes a handle it got from us and has not closed.
    unsafe { p.as_ref() }.ok_or_else(|| fail(RL_ERR_INVALID, format!("{what} handle is null")))
}

fn take_handle<T>(p: *mut T) -> Option<Box<T>> {
    if p.is_null() {
        return None;
    }
    LIVE.fetch_sub(1, Ordering::SeqCst);
    // SAFETY: Go hands back each handle exactly once, on close.
    Some(unsafe { Box::from_raw(p) })
}

/// Drops SlateDB objects inside the runtime: their destructors may spawn or
/// abort tasks, which needs a runtime context on this (foreign) thread.
fn drop_in_runtime<T>(v: T) {
    match runtime() {
        Ok(rt) => {
            let _guard = rt.enter();
            drop(v);
        }
        Err(_) => drop(v),
    }
}

// ---------------------------------------------------------------------------
// AWS settings

/// Hands the process's AWS settings to the engine (see aws.rs): a JSON object
/// `{"region","endpoint","path_style","access_key_id","secret_access_key",
/// "session_token","expires_unix_ms"}`. S3 stores opened later use its
/// region and endpoint; every S3 request, on open stores too, is signed with
/// the credentials handed last. Invalid settings change nothing.
#[no_mangle]
pub extern "C" fn rl_aws_set(settings_json: *const c_char, err_out: *mut *mut c_char) -> i32 {
    ffi(err_out, || aws::set(cstr(settings_json, "AWS settings")?))
}

// ---------------------------------------------------------------------------
// Writer

pub struct Writer {
    db: Db,
    /// False for a writer without a WAL (bulk loads): its writes are durable
    /// only once their memtable is in L0.
    wal: bool,
    /// What its open fetched ahead (Options::warm_wal).
    warmed: changes::Warmed,
}

/// Opens the database at `url` as its writer, fencing any earlier writer.
/// `opts_json` is a JSON object of store.rs `Options` (may be null or "").
#[no_mangle]
pub extern "C" fn rl_writer_open(
    url: *const c_char,
    opts_json: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut Writer,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let store::Target { url, opts, loc } = store::open(url, opts_json)?;
        let db = block(timeout_ms, cancel, async {
            store::probe(&loc).await?;
            let (store, warmed) = if opts.warm_wal {
                changes::warm_wal(&loc, url).await?
            } else {
                (loc.store.clone(), changes::Warmed::default())
            };
            let defaults = Settings::default();
            // Object-store retries are bounded by the store itself
            // (guard::Bounded): SlateDB 0.13.1 has no object_store_max_retries.
            let settings = Settings {
                flush_interval: opts
                    .flush_interval_ms
                    .map(Duration::from_millis)
                    .or(defaults.flush_interval),
                max_unflushed_bytes: opts
                    .max_unflushed_bytes
                    .unwrap_or(defaults.max_unflushed_bytes),
                // SlateDB wants L0 SSTs smaller than the unflushed limit.
                l0_sst_size_bytes: opts
                    .max_unflushed_bytes
                    .map(|m| defaults.l0_sst_size_bytes.min(m / 4))
                    .unwrap_or(defaults.l0_sst_size_bytes),
                ..defaults
            };
            let settings = store::profiles(settings, &opts);
            let wal = settings.wal_enabled;
            Db::builder(loc.path.clone(), store)
                .with_settings(settings)
                .build()
                .await
                .map(|db| (db, wal, warmed))
                .map_err(|e| from_slate(&format!("open writer {url}"), e))
        })?;
        let (db, wal, warmed) = db;
        out_handle(Writer { db, wal, warmed }, out)
    })
}

/// What the writer's open fetched ahead (Options::warm_wal): WAL SSTs, their
/// bytes, and the milliseconds it took, before the open itself.
#[no_mangle]
pub extern "C" fn rl_writer_warmed(
    w: *mut Writer,
    ssts: *mut u64,
    bytes: *mut u64,
    ms: *mut u64,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let w = handle(w, "writer")?;
        if ssts.is_null() || bytes.is_null() || ms.is_null() {
            return Err(fail(RL_ERR_INVALID, "rl_writer_warmed: null output"));
        }
        // SAFETY: checked non-null; the caller passes valid u64 slots.
        unsafe {
            *ssts = w.warmed.ssts;
            *bytes = w.warmed.bytes;
            *ms = w.warmed.ms;
        }
        Ok(())
    })
}

/// Applies a batch of puts and deletes atomically. With `durable` != 0 it
/// returns only once the batch is durable in object storage.
#[no_mangle]
pub extern "C" fn rl_writer_write(
    w: *mut Writer,
    batch: *const u8,
    batch_len: usize,
    durable: u8,
    timeout_ms: u64,
    cancel: *const CancelToken,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let w = handle(w, "writer")?;
        let wb = decode_batch(bytes(batch, batch_len))?;
        // SlateDB 0.13.1 waits for durability inside the write call
        // (WriteOptions::await_durable); 0.18 returned a handle to await.
        // Without a WAL a write is durable once its memtable is in L0, which
        // the engine does only when the memtable is full: a durable write
        // moves it there itself rather than wait for that.
        let options = WriteOptions {
            await_durable: durable != 0 && w.wal,
            ..WriteOptions::default()
        };
        block(timeout_ms, cancel, async {
            w.db.write_with_options(wb, &options)
                .await
                .map_err(|e| from_slate("write batch", e))?;
            if durable != 0 && !w.wal {
                flush_memtables(&w.db).await?;
            }
            Ok(())
        })
    })
}

/// Decodes a batch from Go's encoding (batch.go). The batch is copied once,
/// and keys and values are slices of that copy: two allocations and copies
/// per entry cost the writer more than the memtable insert. The copy lives
/// as long as the memtable that holds its entries.
fn decode_batch(raw: &[u8]) -> Res<WriteBatch> {
    fn take(all: &Bytes, at: &mut usize, n: usize) -> Res<Bytes> {
        if all.len() - *at < n {
            return Err(fail(RL_ERR_INVALID, "write batch is truncated"));
        }
        *at += n;
        Ok(all.slice(*at - n..*at))
    }
    fn len(all: &Bytes, at: &mut usize) -> Res<usize> {
        let b = take(all, at, 4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
    }
    let all = Bytes::copy_from_slice(raw);
    let at = &mut 0usize;
    let mut wb = WriteBatch::new();
    let mut ops = 0usize;
    while *at < all.len() {
        let op = take(&all, at, 1)?[0];
        let klen = len(&all, at)?;
        let key = take(&all, at, klen)?;
        if key.is_empty() {
            return Err(fail(RL_ERR_INVALID, "write batch holds an empty key"));
        }
        match op {
            0 => {
                let vlen = len(&all, at)?;
                let value = take(&all, at, vlen)?;
                wb.put_bytes(key, value);
            }
            1 => wb.delete(key),
            _ => {
                return Err(fail(
                    RL_ERR_INVALID,
                    format!("write batch op {op} is unknown"),
                ))
            }
        }
        ops += 1;
    }
    if ops == 0 {
        return Err(fail(RL_ERR_INVALID, "write batch is empty"));
    }
    Ok(wb)
}

/// Makes every write so far durable in object storage.
#[no_mangle]
pub extern "C" fn rl_writer_flush(
    w: *mut Writer,
    timeout_ms: u64,
    cancel: *const CancelToken,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let w = handle(w, "writer")?;
        block(timeout_ms, cancel, async {
            w.db.flush().await.map_err(|e| from_slate("flush", e))
        })
    })
}

/// Writes the memtables to L0 SSTs and waits until they are there. Bulk loads
/// call it every few MiB: SlateDB's own limit (max_unflushed_bytes) counts
/// encoded bytes, and a memtable holds several times that in memory.
#[no_mangle]
pub extern "C" fn rl_writer_flush_memtable(
    w: *mut Writer,
    timeout_ms: u64,
    cancel: *const CancelToken,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let w = handle(w, "writer")?;
        block(timeout_ms, cancel, flush_memtables(&w.db))
    })
}

/// Moves the memtables to L0 SSTs and waits until they are there.
async fn flush_memtables(db: &Db) -> Res<()> {
    let to_l0 = FlushOptions {
        flush_type: FlushType::MemTable,
    };
    db.flush_with_options(to_l0)
        .await
        .map_err(|e| from_slate("flush memtables", e))
}

/// Closes the writer (flushing what it holds) and frees its handle, whatever the
/// outcome: the handle is invalid after this call.
#[no_mangle]
pub extern "C" fn rl_writer_close(
    w: *mut Writer,
    timeout_ms: u64,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let Some(w) = take_handle(w) else {
            return Err(fail(RL_ERR_INVALID, "writer handle is null"));
        };
        let r = block(timeout_ms, std::ptr::null(), async {
            // Memtables go to L0 before closing, so that readers opened later
            // replay no WAL: their memory then does not grow with what the
            // writer wrote.
            flush_memtables(&w.db).await?;
            w.db.close()
                .await
                .map_err(|e| from_slate("close writer", e))
        });
        drop_in_runtime(w);
        match r {
            // Closing a fenced writer reports the fencing; the handle is gone either way.
            Err(e) if e.code == RL_ERR_FENCED || e.code == RL_ERR_CLOSED => Ok(()),
            other => other,
        }
    })
}

/// Creates a checkpoint of everything written so far through this writer.
/// Returns JSON `{"id": "...", "manifest_id": N}` in `*out`.
#[no_mangle]
pub extern "C" fn rl_writer_checkpoint(
    w: *mut Writer,
    lifetime_ms: u64,
    name: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut c_char,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let w = handle(w, "writer")?;
        let options = checkpoint_options(lifetime_ms, name)?;
        let r = block(timeout_ms, cancel, async {
            w.db.create_checkpoint(CheckpointScope::All, &options)
                .await
                .map_err(|e| from_slate("create checkpoint", e))
        })?;
        out_string(
            format!(r#"{{"id":"{}","manifest_id":{}}}"#, r.id, r.manifest_id),
            out,
        )
    })
}

fn checkpoint_options(lifetime_ms: u64, name: *const c_char) -> Res<CheckpointOptions> {
    let mut options = CheckpointOptions::default();
    if lifetime_ms > 0 {
        options.lifetime = Some(Duration::from_millis(lifetime_ms));
    }
    if !name.is_null() {
        let n = cstr(name, "checkpoint name")?;
        if !n.is_empty() {
            options.name = Some(n.to_string());
        }
    }
    Ok(options)
}

// ---------------------------------------------------------------------------
// Reader

pub struct Reader {
    db: DbReader,
}

/// What a reader's own checkpoint is given as its lifetime. SlateDB 0.13.1
/// readers that follow the latest state keep a checkpoint of their own in the
/// manifest and refresh it after half its lifetime; here that checkpoint only
/// ever lives in the reader's private overlay (guard::Overlay), so it is given
/// a lifetime the reader never reaches (the manifest stores expiry times as
/// u32 seconds, so it must stay well short of 2106).
const READER_CHECKPOINT_LIFETIME: Duration = Duration::from_secs(20 * 365 * 24 * 3600);

/// The longest poll interval a reader takes (a fixed view polls "never").
const MAX_POLL_INTERVAL: Duration = Duration::from_secs(5 * 365 * 24 * 3600);

/// Opens a read-only view. With `checkpoint_id` non-empty the reader is pinned
/// to that checkpoint; otherwise it follows the latest state (the manifest and
/// the WAL beyond it, polled every `poll_interval_ms`). Opening a reader never
/// modifies the database: the reader sees the store through guard::Overlay,
/// which keeps what SlateDB 0.13.1's reader writes (a checkpoint of its own in
/// a new manifest version, replaced as the state moves, deleted on close) in
/// process memory. That checkpoint therefore does not hold off the database's
/// garbage collector, as 0.18's FollowLatest reader (which wrote nothing) did
/// not either; a pinned reader is protected by the checkpoint it is pinned to.
#[no_mangle]
pub extern "C" fn rl_reader_open(
    url: *const c_char,
    opts_json: *const c_char,
    checkpoint_id: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut Reader,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let store::Target { url, opts, loc } = store::open(url, opts_json)?;
        let pinned = match checkpoint_id.is_null() {
            true => None,
            false => match cstr(checkpoint_id, "checkpoint id")? {
                "" => None,
                id => Some(
                    Uuid::parse_str(id)
                        .map_err(|e| fail(RL_ERR_INVALID, format!("checkpoint id {id:?}: {e}")))?,
                ),
            },
        };
        let db = block(
            timeout_ms,
            cancel,
            open_reader(&loc, url, pinned, opts.poll_interval_ms, None),
        )?;
        out_handle(Reader { db }, out)
    })
}

/// Opens a reader on the database at `loc` (see rl_reader_open): pinned to
/// checkpoint `pinned`, or following the latest state, polled every
/// `poll_ms` (None: SlateDB's default), with `cache` for what it reads of
/// SSTs (None: the crate's default, none in this build).
async fn open_reader(
    loc: &store::Location,
    url: &str,
    pinned: Option<Uuid>,
    poll_ms: Option<u64>,
    cache: Option<std::sync::Arc<dyn slatedb::db_cache::DbCache>>,
) -> Res<DbReader> {
    if !store::has_manifest(loc).await? {
        return Err(fail(
            RL_ERR_NO_DATABASE,
            format!("open reader {url}: no SlateDB database there (no manifest)"),
        ));
    }
    let defaults = DbReaderOptions::default();
    let poll = poll_ms
        .map(Duration::from_millis)
        .unwrap_or(defaults.manifest_poll_interval)
        .min(MAX_POLL_INTERVAL);
    let options = DbReaderOptions {
        manifest_poll_interval: poll,
        checkpoint_lifetime: READER_CHECKPOINT_LIFETIME,
        ..defaults
    };
    let mut builder =
        DbReader::builder(loc.path.clone(), loc.read_only_store()).with_options(options);
    if let Some(id) = pinned {
        builder = builder.with_checkpoint_id(id);
    }
    if let Some(c) = cache {
        builder = builder.with_db_cache(c);
    }
    builder
        .build()
        .await
        .map_err(|e| from_slate(&format!("open reader {url}"), e))
}

#[no_mangle]
pub extern "C" fn rl_reader_close(
    r: *mut Reader,
    timeout_ms: u64,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let Some(r) = take_handle(r) else {
            return Err(fail(RL_ERR_INVALID, "reader handle is null"));
        };
        let res = block(timeout_ms, std::ptr::null(), async {
            r.db.close()
                .await
                .map_err(|e| from_slate("close reader", e))
        });
        drop_in_runtime(r);
        res
    })
}

// ---------------------------------------------------------------------------
// Reads, shared by writers (kind 0) and readers (kind 1).

enum Source<'a> {
    Writer(&'a Writer),
    Reader(&'a Reader),
}

fn source<'a>(kind: u8, h: *mut std::ffi::c_void) -> Res<Source<'a>> {
    match kind {
        0 => Ok(Source::Writer(handle(h as *mut Writer, "writer")?)),
        1 => Ok(Source::Reader(handle(h as *mut Reader, "reader")?)),
        _ => Err(fail(
            RL_ERR_INVALID,
            format!("handle kind {kind} is unknown"),
        )),
    }
}

/// Reads one key. A missing key is RL_ERR_NOT_FOUND.
#[no_mangle]
pub extern "C" fn rl_get(
    kind: u8,
    h: *mut std::ffi::c_void,
    key: *const u8,
    key_len: usize,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut u8,
    out_len: *mut usize,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let src = source(kind, h)?;
        let key = bytes(key, key_len);
        let v = block(timeout_ms, cancel, async {
            match src {
                Source::Writer(w) => w.db.get(key).await,
                Source::Reader(r) => r.db.get(key).await,
            }
            .map_err(|e| from_slate("get", e))
        })?;
        match v {
            Some(v) => out_bytes(v.to_vec(), out, out_len),
            None => Err(fail(RL_ERR_NOT_FOUND, "key not found")),
        }
    })
}

pub struct Iter {
    it: DbIterator,
}

/// Starts a scan of [start, end). An empty `end` means "to the end of the key
/// space".
#[no_mangle]
pub extern "C" fn rl_scan(
    kind: u8,
    h: *mut std::ffi::c_void,
    start: *const u8,
    start_len: usize,
    end: *const u8,
    end_len: usize,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut Iter,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let src = source(kind, h)?;
        let start = Bytes::copy_from_slice(bytes(start, start_len));
        let end = Bytes::copy_from_slice(bytes(end, end_len));
        if !end.is_empty() && end <= start {
            return Err(fail(RL_ERR_INVALID, "scan end must be greater than start"));
        }
        // Sequential full scans are the common case here: read ahead generously.
        let options = ScanOptions {
            read_ahead_bytes: 1 << 20,
            max_fetch_tasks: 2,
            ..ScanOptions::default()
        };
        let it = block(timeout_ms, cancel, async {
            let r = if end.is_empty() {
                match src {
                    Source::Writer(w) => w.db.scan_with_options(start.., &options).await,
                    Source::Reader(r) => r.db.scan_with_options(start.., &options).await,
                }
            } else {
                match src {
                    Source::Writer(w) => w.db.scan_with_options(start..end, &options).await,
                    Source::Reader(r) => r.db.scan_with_options(start..end, &options).await,
                }
            };
            r.map_err(|e| from_slate("scan", e))
        })?;
        out_handle(Iter { it }, out)
    })
}

/// Hands over the next entries: up to `max_entries`, and stops adding once the
/// chunk holds `max_bytes`. An empty chunk means the scan is done.
#[no_mangle]
pub extern "C" fn rl_iter_next(
    it: *mut Iter,
    max_entries: usize,
    max_bytes: usize,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut u8,
    out_len: *mut usize,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        // SAFETY: Go serialises calls on one iterator and passes a live handle.
        let it = unsafe { it.as_mut() }
            .ok_or_else(|| fail(RL_ERR_INVALID, "iterator handle is null"))?;
        let chunk = block(timeout_ms, cancel, async {
            let mut chunk = Vec::with_capacity(max_bytes.min(8 << 20));
            let mut n = 0usize;
            while n < max_entries.max(1) && chunk.len() < max_bytes.max(1) {
                match it.it.next().await.map_err(|e| from_slate("scan next", e))? {
                    Some(kv) => {
                        chunk.extend_from_slice(&(kv.key.len() as u32).to_le_bytes());
                        chunk.extend_from_slice(&kv.key);
                        chunk.extend_from_slice(&(kv.value.len() as u32).to_le_bytes());
                        chunk.extend_from_slice(&kv.value);
                        n += 1;
                    }
                    None => break,
                }
            }
            Ok(chunk)
        })?;
        out_bytes(chunk, out, out_len)
    })
}

#[no_mangle]
pub extern "C" fn rl_iter_close(it: *mut Iter) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if let Some(it) = take_handle(it) {
            drop_in_runtime(it);
        }
    }));
}

// ---------------------------------------------------------------------------
// Detached checkpoints (no writer needed; the manifest update is conditional,
// so they are safe next to a live writer).

/// Creates a checkpoint of the current durable state. Returns
/// `{"id": "...", "manifest_id": N}`.
#[no_mangle]
pub extern "C" fn rl_checkpoint_create(
    url: *const c_char,
    opts_json: *const c_char,
    lifetime_ms: u64,
    name: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut c_char,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let target = store::open(url, opts_json)?;
        let options = checkpoint_options(lifetime_ms, name)?;
        let r = block(timeout_ms, cancel, async {
            target
                .checked_admin()
                .await?
                .create_detached_checkpoint(&options)
                .await
                .map_err(|e| from_slate("create checkpoint", e))
        })?;
        out_string(
            format!(r#"{{"id":"{}","manifest_id":{}}}"#, r.id, r.manifest_id),
            out,
        )
    })
}

/// Lists checkpoints as a JSON array of
/// `{"id","manifest_id","create_time","expire_time","name"}`.
#[no_mangle]
pub extern "C" fn rl_checkpoint_list(
    url: *const c_char,
    opts_json: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut c_char,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let target = store::open(url, opts_json)?;
        let list = block(timeout_ms, cancel, async {
            target
                .checked_admin()
                .await?
                .list_checkpoints(None)
                .await
                .map_err(|e| from_slate("list checkpoints", e))
        })?;
        let items: Vec<String> = list
            .iter()
            .map(|c| {
                format!(
                    r#"{{"id":"{}","manifest_id":{},"create_time":"{}","expire_time":{},"name":{}}}"#,
                    c.id,
                    c.manifest_id,
                    c.create_time.to_rfc3339(),
                    c.expire_time
                        .map(|t| format!("\"{}\"", t.to_rfc3339()))
                        .unwrap_or_else(|| "null".into()),
                    c.name
                        .as_deref()
                        .map(json_string)
                        .unwrap_or_else(|| "null".into()),
                )
            })
            .collect();
        out_string(format!("[{}]", items.join(",")), out)
    })
}

fn json_string(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for ch in s.chars() {
        match ch {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Deletes a checkpoint. Deleting one that does not exist is
/// RL_ERR_CHECKPOINT_MISSING.
#[no_mangle]
pub extern "C" fn rl_checkpoint_delete(
    url: *const c_char,
    opts_json: *const c_char,
    checkpoint_id: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let target = store::open(url, opts_json)?;
        let raw = cstr(checkpoint_id, "checkpoint id")?;
        let id = Uuid::parse_str(raw)
            .map_err(|e| fail(RL_ERR_INVALID, format!("checkpoint id {raw:?}: {e}")))?;
        block(timeout_ms, cancel, async {
            let admin = target.checked_admin().await?;
            let list = admin
                .list_checkpoints(None)
                .await
                .map_err(|e| from_slate("list checkpoints", e))?;
            if !list.iter().any(|c| c.id == id) {
                return Err(fail(
                    RL_ERR_CHECKPOINT_MISSING,
                    format!("delete checkpoint: checkpoint missing. checkpoint_id=`{id}`"),
                ));
            }
            admin
                .delete_checkpoint(id)
                .await
                .map_err(|e| from_slate("delete checkpoint", e))
        })
    })
}

/// Copies checkpoint `checkpoint_id` of the database at `url` to a database
/// of its own at `dest_url` (empty, in the same bucket or file system): see
/// copy.rs. Returns `{"manifest_id":N,"objects":N,"bytes":N,"checkpoints_dropped":N}`.
/// On error, objects may be left under `dest_url`; the caller deletes them.
#[no_mangle]
pub extern "C" fn rl_checkpoint_copy(
    url: *const c_char,
    opts_json: *const c_char,
    checkpoint_id: *const c_char,
    wal_end: u64,
    dest_url: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut c_char,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let url = cstr(url, "url")?;
        let dest = cstr(dest_url, "destination url")?;
        let store::Target { opts, loc: src, .. } = store::Target::at(url, opts_json)?;
        let dst = store::resolve(dest, &opts)?;
        let raw = cstr(checkpoint_id, "checkpoint id")?;
        let id = Uuid::parse_str(raw)
            .map_err(|e| fail(RL_ERR_INVALID, format!("checkpoint id {raw:?}: {e}")))?;
        let c = block(
            timeout_ms,
            cancel,
            copy::checkpoint(&src, url, id, wal_end, &dst, dest),
        )?;
        out_string(
            format!(
                r#"{{"manifest_id":{},"objects":{},"bytes":{},"checkpoints_dropped":{}}}"#,
                c.manifest_id, c.objects, c.bytes, c.checkpoints_dropped
            ),
            out,
        )
    })
}

/// Profiles where the database's bytes lie in key order from its SSTs'
/// indexes (blocks.rs), as checkpoint `checkpoint_id` holds it (the latest
/// manifest when null or ""), in at most max(`max_blocks`, SSTs) blocks
/// (`max_blocks` 0: no bound). Writes nothing. The profile is a buffer in
/// blocks::encode's format, freed with rl_bytes_free.
#[no_mangle]
pub extern "C" fn rl_block_profile(
    url: *const c_char,
    opts_json: *const c_char,
    checkpoint_id: *const c_char,
    max_blocks: usize,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut u8,
    out_len: *mut usize,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let store::Target { url, loc, .. } = store::open(url, opts_json)?;
        let id = match checkpoint_id.is_null() {
            true => None,
            false => match cstr(checkpoint_id, "checkpoint id")? {
                "" => None,
                raw => Some(
                    Uuid::parse_str(raw)
                        .map_err(|e| fail(RL_ERR_INVALID, format!("checkpoint id {raw:?}: {e}")))?,
                ),
            },
        };
        let p = block(
            timeout_ms,
            cancel,
            blocks::profile(&loc, url, id, max_blocks),
        )?;
        out_bytes(blocks::encode(&p), out, out_len)
    })
}

// ---------------------------------------------------------------------------
// Changes between two views (changes.rs).

/// Opens the changes of the database at `url` between two views (a
/// checkpoint, and the end of the WAL SSTs laid over it: changes::View),
/// found from the sources the views do not share unless those
/// hold more than `max_fraction` of the later view's bytes (then by a merge
/// scan of both). Writes nothing. Returns the summary as JSON in
/// `*summary_out` (changes::Summary::json) and the handle in `*out`.
#[no_mangle]
pub extern "C" fn rl_changes_open(
    url: *const c_char,
    opts_json: *const c_char,
    from_checkpoint: *const c_char,
    from_wal_end: u64,
    to_checkpoint: *const c_char,
    to_wal_end: u64,
    max_fraction: f64,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut changes::Changes,
    summary_out: *mut *mut c_char,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let store::Target { url, opts, loc } = store::open(url, opts_json)?;
        let from = changes::parse_view(cstr(from_checkpoint, "from checkpoint")?, from_wal_end)?;
        let to = changes::parse_view(cstr(to_checkpoint, "to checkpoint")?, to_wal_end)?;
        let cache = match &opts.overlay_cache {
            Some(u) => Some(overlays::Cache::new(
                store::resolve(u, &opts)?,
                opts.keep_overlay,
            )),
            None => None,
        };
        let c = block(
            timeout_ms,
            cancel,
            changes::open(&loc, url, from, to, max_fraction, cache.as_ref()),
        )?;
        out_string(c.summary.json(), summary_out)?;
        out_handle(c, out)
    })
}

/// The end of the WAL SSTs of the database at `url` in `*out`: one past
/// the highest id there (0: none). Read right after a detached checkpoint,
/// it completes the checkpoint into a view of all its writer had written.
#[no_mangle]
pub extern "C" fn rl_wal_end(
    url: *const c_char,
    opts_json: *const c_char,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut u64,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let store::Target { url, loc, .. } = store::open(url, opts_json)?;
        let end = block(timeout_ms, cancel, changes::wal_end(&loc, url))?;
        if out.is_null() {
            return Err(fail(RL_ERR_INVALID, "wal end: null out pointer"));
        }
        // SAFETY: checked non-null; the caller passes a valid u64 slot.
        unsafe { *out = end };
        Ok(())
    })
}

/// Hands over the next changes (changes.rs push_change's format): up to
/// `max_entries`, and stops adding once the chunk holds `max_bytes`. An
/// empty chunk means the end.
#[no_mangle]
pub extern "C" fn rl_changes_next(
    c: *mut changes::Changes,
    max_entries: usize,
    max_bytes: usize,
    timeout_ms: u64,
    cancel: *const CancelToken,
    out: *mut *mut u8,
    out_len: *mut usize,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        // SAFETY: Go serialises calls on one handle and passes a live one.
        let c =
            unsafe { c.as_mut() }.ok_or_else(|| fail(RL_ERR_INVALID, "changes handle is null"))?;
        let chunk = block(timeout_ms, cancel, c.next_chunk(max_entries, max_bytes))?;
        out_bytes(chunk, out, out_len)
    })
}

/// Closes the changes' readers and frees the handle, whatever the outcome.
#[no_mangle]
pub extern "C" fn rl_changes_close(
    c: *mut changes::Changes,
    timeout_ms: u64,
    err_out: *mut *mut c_char,
) -> i32 {
    ffi(err_out, || {
        let Some(mut c) = take_handle(c) else {
            return Err(fail(RL_ERR_INVALID, "changes handle is null"));
        };
        let readers = std::mem::take(&mut c.readers);
        let res = block(timeout_ms, std::ptr::null(), async {
            for r in &readers {
                r.close().await.map_err(|e| from_slate("close reader", e))?;
            }
            Ok(())
        });
        drop_in_runtime((c, readers));
        res
    })
}

// ---------------------------------------------------------------------------
// Cancel tokens, memory and bookkeeping.

#[no_mangle]
pub extern "C" fn rl_cancel_new() -> *mut CancelToken {
    catch_unwind(|| {
        LIVE.fetch_add(1, Ordering::SeqCst);
        Box::into_raw(Box::new(CancelToken {
            notify: Notify::new(),
            fired: std::sync::atomic::AtomicBool::new(false),
        }))
    })
    .unwrap_or(std::ptr::null_mut())
}

#[no_mangle]
pub extern "C" fn rl_cancel_fire(c: *const CancelToken) {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: Go fires only tokens it has not freed.
        if let Some(c) = unsafe { c.as_ref() } {
            c.fired.store(true, Ordering::SeqCst);
            c.notify.notify_waiters();
        }
    }));
}

#[no_mangle]
pub extern "C" fn rl_cancel_free(c: *mut CancelToken) {
    let _ = catch_unwind(AssertUnwindSafe(|| drop(take_handle(c))));
}

#[no_mangle]
pub extern "C" fn rl_bytes_free(p: *mut u8, len: usize) {
    if p.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: p and len come from out_bytes, handed back once.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, len)) })
    }));
}

#[no_mangle]
pub extern "C" fn rl_string_free(p: *mut c_char) {
    if p.is_null() {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: p comes from CString::into_raw here, handed back once.
        drop(unsafe { CString::from_raw(p) })
    }));
}

/// The number of live handles (writers, readers, iterators, cancel tokens).
#[no_mangle]
pub extern "C" fn rl_live_handles() -> i64 {
    LIVE.load(Ordering::SeqCst)
}

/// The exact slatedb crate version linked in.
#[no_mangle]
pub extern "C" fn rl_slatedb_version() -> *const c_char {
    static V: LazyLock<CString> =
        LazyLock::new(|| CString::new(store::SLATEDB_VERSION).unwrap_or_default());
    V.as_ptr()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_decoding_rejects_garbage() {
        assert!(decode_batch(&[]).is_err());
        assert!(decode_batch(&[0, 1, 0, 0]).is_err());
        assert!(decode_batch(&[9, 1, 0, 0, 0, b'k']).is_err());
        let mut ok = vec![0u8];
        ok.extend_from_slice(&1u32.to_le_bytes());
        ok.push(b'k');
        ok.extend_from_slice(&1u32.to_le_bytes());
        ok.push(b'v');
        ok.push(1);
        ok.extend_from_slice(&1u32.to_le_bytes());
        ok.push(b'x');
        assert!(decode_batch(&ok).is_ok());
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}

#[cfg(test)]
mod describe_tests {
    use super::*;

    #[derive(Debug)]
    struct E(String, Option<Box<E>>);
    impl std::fmt::Display for E {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }
    impl std::error::Error for E {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1
                .as_deref()
                .map(|e| e as &(dyn std::error::Error + 'static))
        }
    }

    #[test]
    fn causes_kept_xml_reduced_length_bounded() {
        let xml = format!(
            "response body: <?xml version=\"1.0\"?><Error><Code>AccessDenied</Code><Message>no</Message><Pad>{}</Pad></Error>",
            "x".repeat(5000)
        );
        let e = E(
            "object store error".into(),
            Some(Box::new(E(
                "request failed".into(),
                Some(Box::new(E(xml, None))),
            ))),
        );
        let d = describe(&e);
        assert!(
            d.starts_with(
                "object store error: request failed: response body: S3 error AccessDenied: no"
            ),
            "{d}"
        );
        assert!(d.len() <= MAX_MSG + 40, "{} bytes", d.len());
        let long = E("é".repeat(3000), None);
        assert!(describe(&long).ends_with("more bytes)"));
    }
}
