//! Three object-store wrappers that stand in for what SlateDB 0.13.1 lacks.
//!
//! - [`Bounded`] bounds SlateDB's retries. 0.13's `RetryingObjectStore` retries
//!   every error but NotFound, AlreadyExists, Precondition, NotImplemented and
//!   NotSupported forever (0.18 had `object_store_max_retries`). `Bounded` sits
//!   under it: it counts the consecutive failures of one operation on one path
//!   and, past `max_retries`, hands SlateDB the error as NotSupported, which it
//!   does not retry (and reports as Unavailable). SlateDB's own handling of a put
//!   that failed but landed (it compares a put id on AlreadyExists) is untouched.
//! - [`Overlay`] makes a 0.13 reader read-only. A 0.13 `DbReader` without a
//!   checkpoint of the caller's writes a checkpoint of its own into the manifest
//!   (a new manifest version when it opens, another when its state moves, one
//!   more to delete it on close); 0.18 had `DbReaderMode::FollowLatest`, which
//!   writes nothing. The overlay keeps every write in process memory, private to
//!   the reader, and reads through to the store: the reader sees its own
//!   manifest versions, and the store never sees them.
//! - [`Warm`] serves reads of objects fetched ahead from memory. A 0.13
//!   writer's open replays the WAL past the manifest 4 SSTs at a time, a
//!   request each; the online fence fetches that WAL ahead, many at a time,
//!   before it opens the writer that fences RockLake, so that the write freeze
//!   does not wait on a request per WAL SST. Only immutable objects are held
//!   (WAL SSTs are written once, put-if-absent, and never rewritten).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use futures::stream::{self, BoxStream, StreamExt};
use slatedb::bytes::Bytes;
use slatedb::object_store::memory::InMemory;
use slatedb::object_store::path::Path;
use slatedb::object_store::{
    Error, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, Result,
};

/// Whether SlateDB 0.13's retrying store would retry this error (its
/// `should_retry`).
fn engine_retries(e: &Error) -> bool {
    !matches!(
        e,
        Error::AlreadyExists { .. }
            | Error::Precondition { .. }
            | Error::NotFound { .. }
            | Error::NotImplemented
            | Error::NotSupported { .. }
    )
}

/// The error `Bounded` gives once an operation has failed too often.
#[derive(Debug)]
struct GaveUp {
    attempts: u32,
    last: Error,
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "object store failed {} times in a row, giving up: {}",
            self.attempts, self.last
        )
    }
}

impl std::error::Error for GaveUp {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.last)
    }
}

/// Bounds the engine's retries of one operation on one path (see the module
/// docs). Retries inside the S3 client are bounded by its own RetryConfig.
#[derive(Debug)]
pub struct Bounded {
    inner: Arc<dyn ObjectStore>,
    counts: Arc<Counts>,
}

/// Consecutive failures per operation and path.
#[derive(Debug)]
struct Counts {
    max_retries: u32,
    failures: Mutex<HashMap<String, u32>>,
}

impl Bounded {
    pub fn new(inner: Arc<dyn ObjectStore>, max_retries: u32) -> Bounded {
        Bounded {
            inner,
            counts: Arc::new(Counts {
                max_retries,
                failures: Mutex::new(HashMap::new()),
            }),
        }
    }

    fn settle<T>(&self, op: &str, path: &str, r: Result<T>) -> Result<T> {
        self.counts.settle(op, path, r)
    }
}

impl Counts {
    fn settle<T>(&self, op: &str, path: &str, r: Result<T>) -> Result<T> {
        let Ok(mut failures) = self.failures.lock() else {
            return r;
        };
        let key = || format!("{op} {path}");
        match r {
            Err(e) if engine_retries(&e) => {
                let k = key();
                let n = failures.entry(k.clone()).or_insert(0);
                *n += 1;
                if *n > self.max_retries {
                    let attempts = *n;
                    failures.remove(&k);
                    Err(Error::NotSupported {
                        source: Box::new(GaveUp { attempts, last: e }),
                    })
                } else {
                    Err(e)
                }
            }
            other => {
                if !failures.is_empty() {
                    failures.remove(&key());
                }
                other
            }
        }
    }
}

impl fmt::Display for Bounded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bounded({})", self.inner)
    }
}

#[async_trait]
impl ObjectStore for Bounded {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        let r = self.inner.put_opts(location, payload, opts).await;
        self.settle("put", location.as_ref(), r)
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let r = self.inner.put_multipart_opts(location, opts).await;
        self.settle("put_multipart", location.as_ref(), r)
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let r = self.inner.get_opts(location, options).await;
        self.settle("get", location.as_ref(), r)
    }

    async fn get_range(&self, location: &Path, range: Range<u64>) -> Result<Bytes> {
        let r = self.inner.get_range(location, range).await;
        self.settle("get_range", location.as_ref(), r)
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        let r = self.inner.get_ranges(location, ranges).await;
        self.settle("get_ranges", location.as_ref(), r)
    }

    async fn head(&self, location: &Path) -> Result<ObjectMeta> {
        let r = self.inner.head(location).await;
        self.settle("head", location.as_ref(), r)
    }

    async fn delete(&self, location: &Path) -> Result<()> {
        let r = self.inner.delete(location).await;
        self.settle("delete", location.as_ref(), r)
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        // A listing fails as a whole: collect it, and count its failure.
        let inner = self.inner.clone();
        let prefix = prefix.cloned();
        let counts = self.counts.clone();
        stream::once(async move {
            let r: Result<Vec<ObjectMeta>> = inner
                .list(prefix.as_ref())
                .collect::<Vec<_>>()
                .await
                .into_iter()
                .collect();
            let key = prefix
                .as_ref()
                .map(|p| p.as_ref().to_string())
                .unwrap_or_default();
            match counts.settle("list", &key, r) {
                Ok(v) => stream::iter(v.into_iter().map(Ok)).boxed(),
                Err(e) => stream::iter([Err(e)]).boxed(),
            }
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let r = self.inner.list_with_delimiter(prefix).await;
        let key = prefix.map(|p| p.as_ref().to_string()).unwrap_or_default();
        self.settle("list_with_delimiter", &key, r)
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        let r = self.inner.copy(from, to).await;
        self.settle("copy", to.as_ref(), r)
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> Result<()> {
        let r = self.inner.copy_if_not_exists(from, to).await;
        self.settle("copy_if_not_exists", to.as_ref(), r)
    }
}

/// A read-only view of a store for a reader: writes land in a private
/// in-memory layer, reads see the store first and that layer second. See the
/// module docs.
#[derive(Debug)]
pub struct Overlay {
    base: Arc<dyn ObjectStore>,
    mine: InMemory,
}

impl Overlay {
    pub fn new(base: Arc<dyn ObjectStore>) -> Overlay {
        Overlay {
            base,
            mine: InMemory::new(),
        }
    }

    /// Whether the store (not the private layer) holds `location`.
    async fn in_base(&self, location: &Path) -> Result<bool> {
        match self.base.head(location).await {
            Ok(_) => Ok(true),
            Err(Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl fmt::Display for Overlay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ReadOnlyOverlay({})", self.base)
    }
}

fn already_exists(location: &Path) -> Error {
    Error::AlreadyExists {
        path: location.to_string(),
        source: "the object exists in the store".into(),
    }
}

#[async_trait]
impl ObjectStore for Overlay {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        // A conditional create must fail as it would in the store: that is
        // how SlateDB learns the manifest moved on.
        if matches!(opts.mode, PutMode::Create) && self.in_base(location).await? {
            return Err(already_exists(location));
        }
        self.mine.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.mine.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        match self.base.get_opts(location, options.clone()).await {
            Err(Error::NotFound { .. }) => self.mine.get_opts(location, options).await,
            other => other,
        }
    }

    async fn get_range(&self, location: &Path, range: Range<u64>) -> Result<Bytes> {
        match self.base.get_range(location, range.clone()).await {
            Err(Error::NotFound { .. }) => self.mine.get_range(location, range).await,
            other => other,
        }
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        match self.base.get_ranges(location, ranges).await {
            Err(Error::NotFound { .. }) => self.mine.get_ranges(location, ranges).await,
            other => other,
        }
    }

    async fn head(&self, location: &Path) -> Result<ObjectMeta> {
        match self.base.head(location).await {
            Err(Error::NotFound { .. }) => self.mine.head(location).await,
            other => other,
        }
    }

    /// Deletes only what the reader wrote; the store is never touched.
    async fn delete(&self, location: &Path) -> Result<()> {
        match self.mine.delete(location).await {
            Err(Error::NotFound { .. }) => Ok(()),
            other => other,
        }
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        let base = self.base.list(prefix);
        let mine = self.mine.list(prefix);
        stream::once(async move {
            let mut all: BTreeMap<Path, ObjectMeta> = BTreeMap::new();
            let mine: Vec<Result<ObjectMeta>> = mine.collect().await;
            for m in mine.into_iter().flatten() {
                all.insert(m.location.clone(), m);
            }
            let base: Vec<Result<ObjectMeta>> = base.collect().await;
            for m in base {
                match m {
                    // The store's object wins over the reader's own.
                    Ok(m) => {
                        all.insert(m.location.clone(), m);
                    }
                    Err(e) => return stream::iter(vec![Err(e)]),
                }
            }
            stream::iter(all.into_values().map(Ok).collect::<Vec<_>>())
        })
        .flatten()
        .boxed()
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        let mut base = self.base.list_with_delimiter(prefix).await?;
        let mine = self.mine.list_with_delimiter(prefix).await?;
        let seen: HashSet<Path> = base.objects.iter().map(|o| o.location.clone()).collect();
        base.objects.extend(
            mine.objects
                .into_iter()
                .filter(|o| !seen.contains(&o.location)),
        );
        base.objects.sort_by(|a, b| a.location.cmp(&b.location));
        let prefixes: HashSet<Path> = base.common_prefixes.iter().cloned().collect();
        base.common_prefixes.extend(
            mine.common_prefixes
                .into_iter()
                .filter(|p| !prefixes.contains(p)),
        );
        base.common_prefixes.sort();
        Ok(base)
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        let bytes = self.get(from).await?.bytes().await?;
        self.mine.put(to, PutPayload::from(bytes)).await.map(|_| ())
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> Result<()> {
        if self.head(to).await.is_ok() {
            return Err(already_exists(to));
        }
        self.copy(from, to).await
    }
}

/// A store whose objects `held` are served from memory (see the module
/// docs); every other call, and every write, goes to the store.
#[derive(Debug)]
pub struct Warm {
    base: Arc<dyn ObjectStore>,
    ahead: InMemory,
    held: HashSet<Path>,
}

impl Warm {
    /// Fetches `paths` from `base`, `parallel` at a time. A path gone
    /// meanwhile (garbage-collected) is left to the store.
    pub async fn fetch(
        base: Arc<dyn ObjectStore>,
        paths: Vec<Path>,
        parallel: usize,
    ) -> Result<Warm> {
        let got: Vec<Option<(Path, Bytes)>> = stream::iter(paths.into_iter().map(|p| {
            let base = base.clone();
            async move {
                match base.get(&p).await {
                    Ok(r) => Ok(Some((p, r.bytes().await?))),
                    Err(Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(e),
                }
            }
        }))
        .buffer_unordered(parallel.max(1))
        .collect::<Vec<Result<_>>>()
        .await
        .into_iter()
        .collect::<Result<_>>()?;
        let ahead = InMemory::new();
        let mut held = HashSet::new();
        for (p, bytes) in got.into_iter().flatten() {
            ahead.put(&p, PutPayload::from(bytes)).await?;
            held.insert(p);
        }
        Ok(Warm { base, ahead, held })
    }

    /// How many objects it holds, and their bytes.
    pub async fn held(&self) -> (usize, u64) {
        let mut bytes = 0;
        for p in &self.held {
            if let Ok(m) = self.ahead.head(p).await {
                bytes += m.size;
            }
        }
        (self.held.len(), bytes)
    }

    /// Whether a read of `location` with `options` is served from memory: a
    /// held object, read without a condition on its version.
    fn serves(&self, location: &Path, options: &GetOptions) -> bool {
        self.held.contains(location)
            && options.if_match.is_none()
            && options.if_none_match.is_none()
            && options.if_modified_since.is_none()
            && options.if_unmodified_since.is_none()
            && options.version.is_none()
    }
}

impl fmt::Display for Warm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Warm({}, {} held)", self.base, self.held.len())
    }
}

#[async_trait]
impl ObjectStore for Warm {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.base.put_opts(location, payload, opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        self.base.put_multipart_opts(location, opts).await
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        if self.serves(location, &options) {
            return self.ahead.get_opts(location, options).await;
        }
        self.base.get_opts(location, options).await
    }

    async fn get_range(&self, location: &Path, range: Range<u64>) -> Result<Bytes> {
        if self.held.contains(location) {
            return self.ahead.get_range(location, range).await;
        }
        self.base.get_range(location, range).await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        if self.held.contains(location) {
            return self.ahead.get_ranges(location, ranges).await;
        }
        self.base.get_ranges(location, ranges).await
    }

    async fn head(&self, location: &Path) -> Result<ObjectMeta> {
        if self.held.contains(location) {
            return self.ahead.head(location).await;
        }
        self.base.head(location).await
    }

    async fn delete(&self, location: &Path) -> Result<()> {
        self.base.delete(location).await
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.base.list(prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.base.list_with_delimiter(prefix).await
    }

    async fn copy(&self, from: &Path, to: &Path) -> Result<()> {
        self.base.copy(from, to).await
    }

    async fn copy_if_not_exists(&self, from: &Path, to: &Path) -> Result<()> {
        self.base.copy_if_not_exists(from, to).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// A store that is down: every call fails as a network error would.
    #[derive(Debug, Default)]
    struct Down {
        calls: AtomicUsize,
    }

    impl Down {
        fn err(&self) -> Error {
            self.calls.fetch_add(1, Ordering::SeqCst);
            Error::Generic {
                store: "down",
                source: "connection refused".into(),
            }
        }
    }

    impl fmt::Display for Down {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "Down")
        }
    }

    #[async_trait]
    impl ObjectStore for Down {
        async fn put_opts(&self, _: &Path, _: PutPayload, _: PutOptions) -> Result<PutResult> {
            Err(self.err())
        }
        async fn put_multipart_opts(
            &self,
            _: &Path,
            _: PutMultipartOptions,
        ) -> Result<Box<dyn MultipartUpload>> {
            Err(self.err())
        }
        async fn get_opts(&self, _: &Path, _: GetOptions) -> Result<GetResult> {
            Err(self.err())
        }
        async fn delete(&self, _: &Path) -> Result<()> {
            Err(self.err())
        }
        fn list(&self, _: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
            stream::iter([Err(self.err())]).boxed()
        }
        async fn list_with_delimiter(&self, _: Option<&Path>) -> Result<ListResult> {
            Err(self.err())
        }
        async fn copy(&self, _: &Path, _: &Path) -> Result<()> {
            Err(self.err())
        }
        async fn copy_if_not_exists(&self, _: &Path, _: &Path) -> Result<()> {
            Err(self.err())
        }
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn bounded_gives_up_after_max_retries() {
        rt().block_on(async {
            let down = Arc::new(Down::default());
            let b = Bounded::new(down.clone(), 2);
            let p = Path::from("x");
            for _ in 0..2 {
                assert!(matches!(b.head(&p).await, Err(Error::Generic { .. })));
            }
            let e = b.head(&p).await.unwrap_err();
            assert!(matches!(e, Error::NotSupported { .. }), "{e}");
            assert!(e.to_string().contains("giving up"), "{e}");
            // The count starts again for the next operation.
            assert!(matches!(b.head(&p).await, Err(Error::Generic { .. })));
            assert_eq!(down.calls.load(Ordering::SeqCst), 4);
        });
    }

    /// SlateDB 0.13.1 retries a store that is down forever; behind Bounded,
    /// opening a database there fails in seconds.
    #[test]
    fn engine_gives_up_on_a_store_that_is_down() {
        rt().block_on(async {
            let store: Arc<dyn ObjectStore> = Arc::new(Bounded::new(Arc::new(Down::default()), 3));
            let open = slatedb::Db::builder("db", store).build();
            let r = tokio::time::timeout(Duration::from_secs(30), open).await;
            let Ok(r) = r else {
                panic!("opening a database on a store that is down did not fail within 30 s")
            };
            let Err(e) = r else {
                panic!("opened a database on a store that is down")
            };
            assert_eq!(e.kind(), slatedb::ErrorKind::Unavailable, "{e}");
        });
    }

    #[test]
    fn overlay_keeps_writes_to_itself() {
        rt().block_on(async {
            let base = Arc::new(InMemory::new());
            base.put(&Path::from("d/a"), PutPayload::from("base"))
                .await
                .unwrap();
            let o = Overlay::new(base.clone());
            o.put(&Path::from("d/b"), PutPayload::from("mine"))
                .await
                .unwrap();
            let create = PutOptions {
                mode: PutMode::Create,
                ..PutOptions::default()
            };
            let e = o
                .put_opts(&Path::from("d/a"), PutPayload::from("x"), create)
                .await;
            assert!(matches!(e, Err(Error::AlreadyExists { .. })), "{e:?}");
            assert!(
                base.head(&Path::from("d/b")).await.is_err(),
                "the write reached the store"
            );
            let got = o
                .get(&Path::from("d/b"))
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            assert_eq!(&got[..], b"mine");
            let listed: Vec<_> = o.list(Some(&Path::from("d"))).collect::<Vec<_>>().await;
            let names: Vec<String> = listed
                .into_iter()
                .map(|m| m.unwrap().location.to_string())
                .collect();
            assert_eq!(names, ["d/a", "d/b"]);
            let delimited = o.list_with_delimiter(Some(&Path::from("d"))).await.unwrap();
            assert_eq!(delimited.objects.len(), 2);
            o.delete(&Path::from("d/a")).await.unwrap();
            assert!(
                base.head(&Path::from("d/a")).await.is_ok(),
                "a delete reached the store"
            );
        });
    }

    /// A 0.13.1 reader following the latest state writes a checkpoint of its
    /// own into the manifest; through the overlay the store sees none of it,
    /// and the reader still sees what is only in the writer's WAL.
    #[test]
    fn a_reader_through_the_overlay_writes_nothing() {
        rt().block_on(async {
            let base: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let db = slatedb::Db::open("db", base.clone()).await.unwrap();
            db.put(b"k", b"v").await.unwrap();
            db.flush().await.unwrap(); // WAL only: no L0 SST, no new manifest
            let objects = || async {
                let mut v: Vec<String> = base
                    .list(None)
                    .map(|m| {
                        let m = m.unwrap();
                        format!("{} {}", m.location, m.size)
                    })
                    .collect()
                    .await;
                v.sort();
                v
            };
            let before = objects().await;
            let options = slatedb::config::DbReaderOptions {
                manifest_poll_interval: Duration::from_millis(50),
                checkpoint_lifetime: Duration::from_secs(3600),
                ..Default::default()
            };
            let reader = slatedb::DbReader::builder("db", Arc::new(Overlay::new(base.clone())))
                .with_options(options)
                .build()
                .await
                .unwrap();
            assert_eq!(reader.get(b"k").await.unwrap().as_deref(), Some(&b"v"[..]));
            tokio::time::sleep(Duration::from_millis(300)).await; // a few polls
            reader.close().await.unwrap();
            assert_eq!(
                objects().await,
                before,
                "opening a reader changed the database"
            );
            db.close().await.unwrap();
        });
    }

    /// Held objects are read from memory (even once gone from the store),
    /// ranges included; others, and every write, go to the store.
    #[test]
    fn warm_serves_what_it_fetched() {
        rt().block_on(async {
            let base: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
            let held = Path::from("db/wal/00000000000000000001.sst");
            let other = Path::from("db/wal/00000000000000000002.sst");
            base.put(&held, PutPayload::from_static(b"0123456789"))
                .await
                .unwrap();
            let gone = Path::from("db/wal/00000000000000000003.sst");
            let warm = Warm::fetch(base.clone(), vec![held.clone(), gone.clone()], 4)
                .await
                .unwrap();
            assert_eq!(warm.held().await, (1, 10), "a path gone is not held");
            base.delete(&held).await.unwrap();
            let bytes = warm.get(&held).await.unwrap().bytes().await.unwrap();
            assert_eq!(&bytes[..], b"0123456789");
            assert_eq!(&warm.get_range(&held, 2..5).await.unwrap()[..], b"234");
            assert_eq!(warm.head(&held).await.unwrap().size, 10);
            warm.put(&other, PutPayload::from_static(b"new"))
                .await
                .unwrap();
            assert_eq!(
                &base.get(&other).await.unwrap().bytes().await.unwrap()[..],
                b"new"
            );
            assert!(matches!(warm.get(&gone).await, Err(Error::NotFound { .. })));
        });
    }
}
