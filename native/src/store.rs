//! Object stores by URL: `file:///abs/path`, `memory://name/prefix` and
//! `s3://bucket/prefix`. The path (or prefix) is the SlateDB database's own root,
//! so a database written by any other SlateDB client opens as it is. S3
//! stores take their region, endpoint and credentials from aws.rs (Go's).

use std::collections::HashMap;
use std::ffi::c_char;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;

use serde::Deserialize;
use slatedb::admin::Admin;
use slatedb::config::Settings;
use slatedb::object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use slatedb::object_store::local::LocalFileSystem;
use slatedb::object_store::memory::InMemory;
use slatedb::object_store::path::Path;
use slatedb::object_store::{BackoffConfig, ClientConfigKey, ObjectStore, RetryConfig};

use crate::guard::{Bounded, Overlay};
use crate::{
    aws, cstr, fail, http, Res, RL_ERR_INVALID, RL_ERR_NO_BUCKET, RL_ERR_NO_CREDENTIALS,
    RL_ERR_NO_DATABASE, RL_ERR_UNAVAILABLE,
};

/// The slatedb crate version pinned in Cargo.toml (a test keeps them in step).
pub const SLATEDB_VERSION: &str = "0.13.1";

/// Tuning passed from Go as JSON. Every field is optional. The defaults bound
/// how long an unreachable or failing store can hold a call: SlateDB's own
/// default is to retry forever.
#[derive(Deserialize, Debug, Clone)]
#[serde(default, deny_unknown_fields)]
pub struct Options {
    /// Retries of one operation by SlateDB's object-store wrapper (0.13.1
    /// retries forever; guard::Bounded stops it after this many).
    pub max_retries: u32,
    /// Retries inside the S3 client per request, and their overall limit
    /// (default: the handed limits' attempts less one, and that many first
    /// byte timeouts).
    pub s3_max_retries: Option<usize>,
    pub s3_retry_timeout_ms: Option<u64>,
    /// One S3 request's total time, its upload or download included.
    pub s3_request_timeout_ms: u64,
    /// Default: the handed limits' connect timeout.
    pub s3_connect_timeout_ms: Option<u64>,
    /// Writer WAL flush interval (SlateDB default 100 ms).
    pub flush_interval_ms: Option<u64>,
    /// Reader manifest poll interval (SlateDB default 10 s).
    pub poll_interval_ms: Option<u64>,
    /// Writer: unflushed bytes (memtables awaiting L0) before writes wait
    /// (SlateDB default 1 GiB). Bulk loads set it low to keep memory flat.
    pub max_unflushed_bytes: Option<usize>,
    /// Writer: tuned for one client writing a whole database (see `bulk_load`).
    pub bulk_load: bool,
    /// Writer: no compactor and no garbage collector (see `passive`).
    pub passive: bool,
    /// Writer: fetch the WAL its open replays ahead, many SSTs at a time,
    /// and replay it from memory (guard::Warm): the online fence.
    pub warm_wal: bool,
    /// Changes: where a run keeps views' overlays (overlays.rs), a URL
    /// prefix in its staging; keep_overlay writes them there too.
    pub overlay_cache: Option<String>,
    pub keep_overlay: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_retries: 3,
            s3_max_retries: None,
            s3_retry_timeout_ms: None,
            s3_request_timeout_ms: 30_000,
            s3_connect_timeout_ms: None,
            flush_interval_ms: None,
            poll_interval_ms: None,
            max_unflushed_bytes: None,
            bulk_load: false,
            passive: false,
            warm_wal: false,
            overlay_cache: None,
            keep_overlay: false,
        }
    }
}

impl Options {
    pub fn parse(p: *const c_char) -> Res<Options> {
        if p.is_null() {
            return Ok(Options::default());
        }
        let s = cstr(p, "options")?;
        if s.trim().is_empty() {
            return Ok(Options::default());
        }
        serde_json::from_str(s).map_err(|e| fail(RL_ERR_INVALID, format!("options {s:?}: {e}")))
    }
}

/// Applies the writer profiles that `opts` asks for.
pub fn profiles(s: Settings, opts: &Options) -> Settings {
    let s = if opts.bulk_load { bulk_load(s) } else { s };
    if opts.passive {
        passive(s)
    } else {
        s
    }
}

/// Settings for a writer that loads a whole database: one L0 upload and one
/// compaction at a time, one fetch task per compaction source, and output SSTs
/// of at most 64 MiB. SlateDB's defaults (4 concurrent compactions, 4 fetch
/// tasks per source, SSTs up to 256 MiB whose index and filter are built in
/// memory) made the importer's memory grow with the database; these bound it,
/// and compaction still keeps up with one writer.
///
/// SlateDB 0.13.1 has no subcompactions to turn off and no read-ahead setting
/// for compactions: each fetch task reads 256 blocks (1 MiB of 4 KiB blocks)
/// ahead, so one task per source is the 1 MiB read-ahead 0.18 was given.
///
/// A bulk load fills L0 faster than the engine's timers look at it: a full L0
/// stalls the writer until the compactor notices (it polls every 5 s) and
/// then until the writer sees the compaction in the manifest (every 1 s).
/// Both poll every `BULK_POLL` instead, which turned multi-second stalls into
/// short waits; the cost is a manifest read per poll, 10 a second.
///
/// Compactions take 16 sources instead of 4 to 8: a size-tiered LSM rewrites
/// every byte once per tier, and tiers grow by the fan-in, so a load through
/// the defaults rewrote its bytes more often the larger the catalog (import's
/// CPU per row rose 60 % from 1 to 10 million rows; with 16, 10 million rows
/// took 77 s instead of 127). 32 sources were 8 % faster again but held 15 MiB
/// more of read-ahead. The L0 limits rise with the fan-in, the per-key one
/// too: the progress record, flushed after every shard, is one key in many L0
/// SSTs, and a per-key limit under the compaction's minimum left the writer
/// waiting for a compaction that never starts. What is left at the end (up to
/// 15 runs of a size, up to 39 L0 SSTs) RockLake's own compactor, on the
/// engine's defaults, merges after the cut-over.
///
/// A bulk load writes no WAL: every byte went to object storage twice, once
/// in the WAL and once in L0, and the WAL kept its entries in memory until
/// their memtable was in L0. Writes are durable once their memtable is in L0
/// (a durable write or a flush moves it there, lib.rs), and memtables enter
/// the manifest oldest first, so what survives a crash is always a prefix of
/// the writes: what import's resume relies on. Fencing goes through the
/// manifest's writer epoch: a newer writer makes this one's next flush fail.
pub fn bulk_load(mut s: Settings) -> Settings {
    s.l0_flush_parallelism = 1;
    s.manifest_poll_interval = BULK_POLL;
    s.l0_max_ssts = BULK_L0_MAX_SSTS;
    s.l0_max_ssts_per_key = BULK_L0_MAX_SSTS;
    if let Some(c) = s.compactor_options.as_mut() {
        c.max_concurrent_compactions = 1;
        c.max_fetch_tasks = 1;
        c.max_sst_size = 64 << 20;
        c.poll_interval = BULK_POLL;
        c.scheduler_options = HashMap::from([
            (
                "min_compaction_sources".to_string(),
                BULK_MIN_SOURCES.to_string(),
            ),
            (
                "max_compaction_sources".to_string(),
                BULK_MAX_SOURCES.to_string(),
            ),
        ]);
    }
    s.wal_enabled = false;
    s
}

/// How often a bulk-load writer's compactor and manifest poller wake.
pub const BULK_POLL: Duration = Duration::from_millis(100);

/// A bulk load's compaction fan-in and L0 limit (see `bulk_load`); the limit
/// stays above the fan-in's minimum, so that L0 never fills before a
/// compaction can start.
const BULK_MIN_SOURCES: usize = 16;
const BULK_MAX_SOURCES: usize = 16;
const BULK_L0_MAX_SSTS: usize = 40;

/// Settings for a short-lived writer that must not reorganise the database:
/// no compactor and no garbage collector. Freeze fences the source catalog and
/// checkpoints it, and must change nothing else there; Finalize writes one
/// batch, and its close would otherwise wait for a compaction the import left
/// behind (seconds, for nothing). The database's regular writer compacts.
/// With no compactor, nothing would ever make room in a full L0, so the L0
/// limits are lifted: a flush must never wait for a compaction that will not
/// come.
pub fn passive(mut s: Settings) -> Settings {
    s.compactor_options = None;
    s.garbage_collector_options = None;
    s.l0_max_ssts = PASSIVE_L0_MAX_SSTS;
    s.l0_max_ssts_per_key = PASSIVE_L0_MAX_SSTS;
    s
}

const PASSIVE_L0_MAX_SSTS: usize = 1 << 16;

/// A database's place: the store it lives in and its root path there.
pub struct Location {
    pub store: Arc<dyn ObjectStore>,
    pub path: Path,
    /// Set for S3: existence of the bucket is checked before SlateDB runs,
    /// so a missing bucket gets a clear error instead of a retry loop.
    bucket: Option<String>,
    /// Which store: "file", "memory://<name>" or "s3://<bucket>".
    store_id: String,
}

impl Location {
    pub fn admin(&self) -> Admin {
        Admin::builder(self.path.clone(), self.store.clone()).build()
    }

    /// The store as a reader sees it: what the reader writes (SlateDB 0.13.1
    /// readers write checkpoints of their own into the manifest) stays in
    /// process memory. See guard::Overlay.
    /// Whether two locations are in one store (one bucket, the file system,
    /// one memory store), so that the store's own copy goes from one to the other.
    pub fn same_store(&self, other: &Location) -> bool {
        self.store_id == other.store_id
    }

    pub fn read_only_store(&self) -> Arc<dyn ObjectStore> {
        Arc::new(Overlay::new(self.store.clone()))
    }
}

/// A database as an entry point is given it: its URL, the options it came
/// with, and its location. `open` is the one place that reads and resolves
/// them, so every entry point refuses bad ones alike.
pub struct Target<'a> {
    pub url: &'a str,
    pub opts: Options,
    pub loc: Location,
}

/// Reads an entry point's `url` and `opts` (url first) and resolves the URL.
/// It does not look for a database there: that reads the store, which is
/// left to the caller's bounded call, after its other arguments are checked.
pub fn open<'a>(url: *const c_char, opts: *const c_char) -> Res<Target<'a>> {
    Target::at(cstr(url, "url")?, opts)
}

impl<'a> Target<'a> {
    /// As `open`, for a URL already read (rl_checkpoint_copy reads its
    /// destination's before the options).
    pub fn at(url: &'a str, opts: *const c_char) -> Res<Target<'a>> {
        let opts = Options::parse(opts)?;
        let loc = resolve(url, &opts)?;
        Ok(Target { url, opts, loc })
    }

    /// The admin of the database there: RL_ERR_NO_DATABASE where there is
    /// none (no manifest).
    pub async fn checked_admin(&self) -> Res<Admin> {
        require_manifest(&self.loc, self.url).await?;
        Ok(self.loc.admin())
    }
}

/// In-process stores, shared by name so that a writer and a reader of one
/// `memory://name` see the same objects.
static MEMORY: LazyLock<Mutex<HashMap<String, Arc<InMemory>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

pub fn resolve(raw: &str, opts: &Options) -> Res<Location> {
    let bad = |why: &str| fail(RL_ERR_INVALID, format!("catalog URL {raw:?}: {why}"));
    let u = url::Url::parse(raw).map_err(|e| bad(&e.to_string()))?;
    if u.query().is_some() || u.fragment().is_some() {
        return Err(bad("query and fragment are not supported"));
    }
    let path = u.path().trim_matches('/');
    let db_path = Path::parse(path).map_err(|e| bad(&e.to_string()))?;
    match u.scheme() {
        "file" => {
            if u.host_str().is_some_and(|h| !h.is_empty()) {
                return Err(bad("file URLs take no host: use file:///absolute/path"));
            }
            if path.is_empty() {
                return Err(bad("file URL needs a directory path"));
            }
            Ok(Location {
                store: Arc::new(Bounded::new(
                    Arc::new(LocalFileSystem::new()),
                    opts.max_retries,
                )),
                path: db_path,
                bucket: None,
                store_id: "file".into(),
            })
        }
        "memory" => {
            let name = u.host_str().unwrap_or("").to_string();
            let store_id = format!("memory://{name}");
            let mut stores = MEMORY
                .lock()
                .map_err(|_| fail(crate::RL_ERR_INTERNAL, "memory store registry poisoned"))?;
            let store = stores
                .entry(name)
                .or_insert_with(|| Arc::new(InMemory::new()))
                .clone();
            Ok(Location {
                store: Arc::new(Bounded::new(store, opts.max_retries)),
                path: db_path,
                bucket: None,
                store_id,
            })
        }
        "s3" => {
            let bucket = u.host_str().unwrap_or("");
            if bucket.is_empty() {
                return Err(bad("s3 URL needs a bucket: s3://bucket/prefix"));
            }
            // Region, endpoint, limits and credentials come from Go
            // (aws.rs), never from AWS_* variables: one chain for the whole
            // process.
            let aws = aws::current().ok_or_else(|| {
                fail(
                    RL_ERR_NO_CREDENTIALS,
                    format!(
                        "{raw}: {}: none were handed to the engine",
                        aws::NO_CREDENTIALS
                    ),
                )
            })?;
            let limits = aws.limits;
            // A store that does not answer costs at most `attempts` first
            // byte timeouts (and the backoff between) per request.
            let silent_attempts = u32::try_from(limits.attempts).unwrap_or(u32::MAX);
            let retry = RetryConfig {
                backoff: BackoffConfig::default(),
                max_retries: opts.s3_max_retries.unwrap_or(limits.attempts - 1),
                retry_timeout: opts
                    .s3_retry_timeout_ms
                    .map(Duration::from_millis)
                    .unwrap_or(limits.first_byte.saturating_mul(silent_attempts)),
            };
            let connect = opts
                .s3_connect_timeout_ms
                .map(Duration::from_millis)
                .unwrap_or(limits.connect);
            let mut builder = AmazonS3Builder::new()
                .with_bucket_name(bucket)
                .with_region(aws.region.as_str())
                .with_credentials(Arc::new(aws::SlotCredentials::new()))
                .with_virtual_hosted_style_request(!aws.path_style)
                .with_retry(retry)
                .with_config(
                    AmazonS3ConfigKey::Client(ClientConfigKey::Timeout),
                    format!("{}ms", opts.s3_request_timeout_ms),
                )
                .with_config(
                    AmazonS3ConfigKey::Client(ClientConfigKey::ConnectTimeout),
                    format!("{}ms", connect.as_millis()),
                )
                .with_http_connector(http::Guard {
                    first_byte: limits.first_byte,
                    stall: limits.stall,
                });
            if !aws.endpoint.is_empty() {
                // An http:// endpoint was configured on purpose (a local
                // S3-compatible server): allow what it says.
                builder = builder
                    .with_endpoint(aws.endpoint.as_str())
                    .with_allow_http(aws.endpoint.starts_with("http://"));
            }
            let store = builder.build().map_err(|e| bad(&e.to_string()))?;
            Ok(Location {
                store: Arc::new(Bounded::new(Arc::new(store), opts.max_retries)),
                path: db_path,
                bucket: Some(bucket.to_string()),
                store_id: format!("s3://{bucket}"),
            })
        }
        other => Err(bad(&format!(
            "scheme {other:?} is not supported (file, s3, memory)"
        ))),
    }
}

/// Whether a SlateDB database exists at the location (it has a manifest).
/// For S3 this also proves the bucket exists and the endpoint answers.
pub async fn has_manifest(loc: &Location) -> Res<bool> {
    let prefix = loc.path.child("manifest");
    match loc.store.list_with_delimiter(Some(&prefix)).await {
        Ok(list) => Ok(!list.objects.is_empty()),
        Err(slatedb::object_store::Error::NotFound { .. }) if loc.bucket.is_none() => Ok(false),
        Err(e) => Err(store_error(loc, e)),
    }
}

/// Checks the bucket (for S3) before a writer opens: an empty location is fine.
pub async fn probe(loc: &Location) -> Res<()> {
    has_manifest(loc).await.map(|_| ())
}

pub async fn require_manifest(loc: &Location, url: &str) -> Res<()> {
    if has_manifest(loc).await? {
        Ok(())
    } else {
        Err(fail(
            RL_ERR_NO_DATABASE,
            format!("{url}: no SlateDB database there (no manifest)"),
        ))
    }
}

pub(crate) fn store_error(loc: &Location, e: slatedb::object_store::Error) -> crate::Fail {
    let text = crate::describe(&e);
    if text.contains(aws::NO_CREDENTIALS) {
        return fail(RL_ERR_NO_CREDENTIALS, format!("object store: {text}"));
    }
    match &loc.bucket {
        Some(b)
            if text.contains("NoSuchBucket")
                || matches!(e, slatedb::object_store::Error::NotFound { .. }) =>
        {
            fail(
                RL_ERR_NO_BUCKET,
                format!("bucket {b:?} does not exist: {text}"),
            )
        }
        _ => fail(RL_ERR_UNAVAILABLE, format!("object store: {text}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use slatedb::config::SizeTieredCompactionSchedulerOptions;

    #[test]
    fn pinned_version_matches_cargo_toml() {
        let manifest = include_str!("../Cargo.toml");
        assert!(manifest.contains(&format!("version = \"={SLATEDB_VERSION}\"")));
    }

    /// Opens a database on an in-memory store with `settings`, writes and
    /// reads back through it and closes it: SlateDB 0.13.1 has no
    /// Settings::validate, so the engine itself is the check.
    fn engine_accepts(settings: Settings) {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let db = slatedb::Db::builder("db", store)
                .with_settings(settings)
                .build()
                .await
                .expect("the engine must take these settings");
            // Not awaiting durability: without a WAL (bulk_load) a put is
            // durable only once flush moves its memtable to L0.
            let async_write = slatedb::config::WriteOptions {
                await_durable: false,
                ..Default::default()
            };
            let put = slatedb::config::PutOptions::default();
            db.put_with_options(b"k", b"v", &put, &async_write)
                .await
                .unwrap();
            db.flush().await.unwrap();
            assert_eq!(db.get(b"k").await.unwrap().as_deref(), Some(&b"v"[..]));
            db.close().await.unwrap();
        });
    }

    #[test]
    fn bulk_load_settings_are_taken_and_bounded() {
        let s = bulk_load(Settings::default());
        assert_eq!(s.l0_flush_parallelism, 1);
        let c = s.compactor_options.clone().expect("compactor stays on");
        assert_eq!((c.max_concurrent_compactions, c.max_fetch_tasks), (1, 1));
        assert!(c.max_sst_size <= 64 << 20);
        // A full L0 must not wait for the engine's default timers (5 s, 1 s).
        assert_eq!(
            (c.poll_interval, s.manifest_poll_interval),
            (BULK_POLL, BULK_POLL)
        );
        assert!(!s.wal_enabled, "a bulk load writes its data once: no WAL");
        // The scheduler reads its options from strings: they must parse to
        // the fan-in asked for, and a full L0 (or one key in that many L0
        // SSTs, as the progress record is) must leave room for a compaction
        // to start, or the writer waits for ever.
        let st = SizeTieredCompactionSchedulerOptions::from(&c.scheduler_options);
        assert_eq!(
            (st.min_compaction_sources, st.max_compaction_sources),
            (BULK_MIN_SOURCES, BULK_MAX_SOURCES)
        );
        assert!(st.min_compaction_sources <= st.max_compaction_sources);
        assert!(
            s.l0_max_ssts > st.max_compaction_sources
                && s.l0_max_ssts_per_key > st.max_compaction_sources
        );
        engine_accepts(s);
    }

    #[test]
    fn passive_settings_run_no_background_work() {
        let s = passive(Settings::default());
        assert!(s.compactor_options.is_none() && s.garbage_collector_options.is_none());
        assert!(
            s.l0_max_ssts >= 1 << 16,
            "a full L0 must not stall a writer that never compacts"
        );
        engine_accepts(s);
    }

    #[test]
    fn options_parse_strictly() {
        let json =
            std::ffi::CString::new(r#"{"bulk_load":true,"max_unflushed_bytes":1024}"#).unwrap();
        let o = Options::parse(json.as_ptr()).unwrap_or_else(|e| panic!("{}", e.msg));
        assert!(o.bulk_load);
        assert_eq!(o.max_unflushed_bytes, Some(1024));
        let bad = std::ffi::CString::new(r#"{"bulk_lode":true}"#).unwrap();
        assert!(
            Options::parse(bad.as_ptr()).is_err(),
            "an unknown option must be refused"
        );
        assert!(
            !Options::parse(std::ptr::null())
                .unwrap_or_else(|e| panic!("{}", e.msg))
                .bulk_load
        );
    }

    #[test]
    fn open_reads_url_then_options_then_resolves() {
        let msg = |r: Res<Target>| r.err().map(|e| (e.code, e.msg));
        let bad_opts = std::ffi::CString::new("{").unwrap();
        let bad_url = std::ffi::CString::new("ftp://x/y").unwrap();
        let url = std::ffi::CString::new("memory://open-test/db").unwrap();
        assert_eq!(
            msg(open(std::ptr::null(), bad_opts.as_ptr())),
            Some((RL_ERR_INVALID, "url is null".to_string()))
        );
        let e = msg(open(bad_url.as_ptr(), bad_opts.as_ptr())).expect("refused");
        assert!(e.1.starts_with("options "), "{e:?}");
        let e = msg(open(bad_url.as_ptr(), std::ptr::null())).expect("refused");
        assert!(e.1.starts_with("catalog URL "), "{e:?}");
        let t = open(url.as_ptr(), std::ptr::null()).unwrap_or_else(|e| panic!("{}", e.msg));
        assert_eq!(
            (t.url, t.loc.path.as_ref()),
            ("memory://open-test/db", "db")
        );
    }

    #[test]
    fn urls_are_checked() {
        let o = Options::default();
        for bad in [
            "",
            "nope",
            "ftp://x/y",
            "file://host/x",
            "file:///",
            "s3:///x",
            "s3://b/x?y=1",
        ] {
            assert!(resolve(bad, &o).is_err(), "{bad} should be refused");
        }
        assert!(resolve("file:///tmp/x", &o).is_ok());
        assert!(resolve("memory://a/b", &o).is_ok());
    }
}
