//! What changed between two views of a database, at a cost in proportion to
//! the change: the online migration's catch-up rounds (pkg/changes).
//!
//! SlateDB never rewrites an SST or a WAL file, so every write made after an
//! earlier view lies in a source (compacted SST, WAL SST) that the later
//! view names and the earlier one does not, or in one compaction wrote from
//! it. A key whose old entry and tombstone a compaction dropped together
//! lies in no new source, but in a source only the earlier view names. So
//! the keys of the symmetric difference of the two views' sources are a
//! superset of the changed keys; each is then read in both views (two
//! pinned readers, seeking forward through the sorted keys), and only the
//! keys whose value or presence differs are handed over.
//!
//! When the sources that differ hold more than a fraction of the later
//! view's bytes (a compaction rewrote most of the database), reading their
//! keys one block per request costs more than one streaming scan, so both
//! views are scanned side by side instead (the merge scan), and the summary
//! says so.
//!
//! A view is a checkpoint plus, optionally, the WAL SSTs after the ones its
//! manifest names, up to an id (View): a detached checkpoint of a live
//! database holds only what its writer's manifest records, and a writer's
//! latest commits sit in WAL SSTs the manifest does not name yet. Those
//! WAL SSTs' entries are laid over the checkpoint's reader (Overlay), in
//! the point reads and in the merge scan alike, so that a round's later
//! view is exactly the next round's earlier one (docs/online.md).
//!
//! Nothing is written: manifests and readers go through guard::Overlay.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt};
use slatedb::bytes::Bytes;
use slatedb::config::ScanOptions;
use slatedb::db_cache::{CachedEntry, CachedKey, DbCache};
use slatedb::manifest::{SsTableHandle, SsTableId};
use slatedb::object_store::path::Path;
use slatedb::object_store::ObjectStore;
use slatedb::{
    DbIterator, DbReader, KeyValue, SstReader, ValueDeletable, VersionedManifest, WalReader,
};
use uuid::Uuid;

use crate::guard::Warm;
use crate::manifest;
use crate::store::{self, Location};
use crate::{fail, from_slate, Res, RL_ERR_INVALID, RL_ERR_NOT_FOUND};

/// A view of a database: checkpoint `checkpoint`, plus the WAL SSTs from
/// the first its manifest does not name up to `wal_end` (exclusive; at or
/// below that first one: none).
#[derive(Clone, Copy, Debug)]
pub struct View {
    pub checkpoint: Uuid,
    pub wal_end: u64,
}

/// The entries of a view's WAL SSTs past its checkpoint's manifest, newest
/// per key, in key order: None is a tombstone.
use crate::overlays::{Cache, Overlay};

/// Reads `key` in a view: its overlay first, then its checkpoint's reader.
async fn view_get(r: &DbReader, overlay: &Overlay, key: &Bytes) -> Res<Option<Bytes>> {
    if let Ok(i) = overlay.binary_search_by(|(k, _)| k.cmp(key)) {
        return Ok(overlay[i].1.clone());
    }
    r.get(key).await.map_err(|e| from_slate("get", e))
}

/// How many SST blocks or WAL SSTs are read at once.
const PARALLEL: usize = 16;

/// How many WAL SSTs a view's overlay reads at once: small objects, up to
/// the 4096 a writer's backlog can hold (one per WAL flush), each a request.
const WAL_PARALLEL: usize = 64;

/// How the changes were found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    SstDiff,
    MergeScan,
}

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::SstDiff => "sst-diff",
            Method::MergeScan => "merge-scan",
        }
    }
}

/// What the comparison of the two views' sources found.
#[derive(Debug)]
pub struct Summary {
    pub method: Method,
    /// Why the merge scan was chosen ("" for the SST diff).
    pub reason: String,
    pub from_manifest: u64,
    pub to_manifest: u64,
    /// The end of the WAL SSTs each view replays.
    pub from_wal_end: u64,
    pub to_wal_end: u64,
    /// Compacted SSTs only the later view names, and only the earlier.
    pub ssts_added: u64,
    pub ssts_removed: u64,
    /// WAL SSTs only the later view replays, and only the earlier.
    pub wals_added: u64,
    pub wals_removed: u64,
    /// Stored bytes of the sources that differ, and of all the later view's.
    pub changed_bytes: u64,
    pub total_bytes: u64,
    /// Distinct keys read from the sources that differ (0: merge scan).
    pub candidates: u64,
}

impl Summary {
    pub fn json(&self) -> String {
        format!(
            r#"{{"method":"{}","reason":{},"from_manifest":{},"to_manifest":{},"from_wal_end":{},"to_wal_end":{},"ssts_added":{},"ssts_removed":{},"wals_added":{},"wals_removed":{},"changed_bytes":{},"total_bytes":{},"candidates":{}}}"#,
            self.method.name(),
            crate::json_string(&self.reason),
            self.from_manifest,
            self.to_manifest,
            self.from_wal_end,
            self.to_wal_end,
            self.ssts_added,
            self.ssts_removed,
            self.wals_added,
            self.wals_removed,
            self.changed_bytes,
            self.total_bytes,
            self.candidates
        )
    }
}

/// The changes between two views, handed over in chunks.
pub struct Changes {
    pub summary: Summary,
    /// The two views' readers, kept open as long as their cursors.
    pub readers: Vec<DbReader>,
    /// The two views' overlays, for the SST diff's point reads.
    overlays: [Overlay; 2],
    walk: Walk,
}

/// How the changes are walked.
enum Walk {
    /// Both views side by side.
    Merge { from: Box<Cursor>, to: Box<Cursor> },
    /// The SST diff's candidate keys, in order, and the next to compare: a
    /// window of LANES × LANE_KEYS at a time, the lanes' slices looked up
    /// at once (a lookup waits on object-store requests, which would
    /// otherwise wait in turn).
    Keys {
        keys: Vec<Bytes>,
        next: usize,
        pending: VecDeque<Found>,
    },
}

/// A changed key, its old and its new value.
type Found = (Bytes, Option<Bytes>, Option<Bytes>);

/// How many lanes look candidate keys up at once, and how many keys of a
/// window each takes.
const LANES: usize = 8;
const LANE_KEYS: usize = 64;

/// Looks one lane's keys up in both views: point reads, which skip every
/// SST whose filter rules the key out (the readers keep the filters and
/// indexes they read, KeptCache), where a cursor's seek read a block of
/// every source.
async fn lookup(readers: &[DbReader], overlays: &[Overlay; 2], keys: &[Bytes]) -> Res<Vec<Found>> {
    let [from, to] = readers else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for k in keys {
        let old = view_get(from, &overlays[0], k).await?;
        let new = view_get(to, &overlays[1], k).await?;
        if old != new {
            out.push((k.clone(), old, new));
        }
    }
    Ok(out)
}

/// A forward cursor over one view, for the merge scan: its checkpoint's
/// scan with its overlay laid over it.
struct Cursor {
    it: DbIterator,
    /// The scan's next entry, not yet merged.
    scanned: Option<KeyValue>,
    done: bool,
    overlay: Overlay,
    /// The overlay's next entry.
    next_overlay: usize,
    /// The view's next entry.
    peeked: Option<(Bytes, Bytes)>,
}

impl Cursor {
    async fn peek(&mut self) -> Res<Option<&(Bytes, Bytes)>> {
        while self.peeked.is_none() {
            if self.scanned.is_none() && !self.done {
                self.scanned = self
                    .it
                    .next()
                    .await
                    .map_err(|e| from_slate("scan next", e))?;
                self.done = self.scanned.is_none();
            }
            let laid = self.overlay.get(self.next_overlay);
            match (self.scanned.take(), laid) {
                (None, None) => return Ok(None),
                (Some(kv), None) => self.peeked = Some((kv.key, kv.value)),
                (scanned, Some((k, v))) => {
                    let key = k.clone();
                    let value = v.clone();
                    match scanned {
                        Some(kv) if kv.key < key => {
                            self.peeked = Some((kv.key, kv.value));
                            continue;
                        }
                        // The overlay shadows the scan's entry of its key.
                        Some(kv) if kv.key == key => {}
                        other => self.scanned = other,
                    }
                    self.next_overlay += 1;
                    if let Some(value) = value {
                        self.peeked = Some((key, value));
                    }
                }
            }
        }
        Ok(self.peeked.as_ref())
    }

    fn advance(&mut self) {
        self.peeked = None;
    }
}

/// One entry of a chunk: `klen:u32 | key | old | new`, each of old and new
/// `0` (absent) or `1 | vlen:u32 | value` (all integers little-endian).
fn push_change(out: &mut Vec<u8>, key: &[u8], old: Option<&Bytes>, new: Option<&Bytes>) {
    out.extend_from_slice(&(key.len() as u32).to_le_bytes());
    out.extend_from_slice(key);
    for v in [old, new] {
        match v {
            None => out.push(0),
            Some(v) => {
                out.push(1);
                out.extend_from_slice(&(v.len() as u32).to_le_bytes());
                out.extend_from_slice(v);
            }
        }
    }
}

impl Changes {
    /// Appends the next changes to a chunk: up to `max_entries`, and stops
    /// once the chunk holds `max_bytes`. An empty chunk means the end.
    pub(crate) async fn next_chunk(
        &mut self,
        max_entries: usize,
        max_bytes: usize,
    ) -> Res<Vec<u8>> {
        let mut out = Vec::with_capacity(max_bytes.min(8 << 20));
        let mut n = 0usize;
        let Changes {
            readers,
            overlays,
            walk,
            ..
        } = self;
        while n < max_entries.max(1) && out.len() < max_bytes.max(1) {
            match walk {
                Walk::Keys {
                    keys,
                    next,
                    pending,
                } => {
                    if let Some((k, old, new)) = pending.pop_front() {
                        push_change(&mut out, &k, old.as_ref(), new.as_ref());
                        n += 1;
                        continue;
                    }
                    if *next >= keys.len() {
                        break;
                    }
                    let end = (*next + LANES * LANE_KEYS).min(keys.len());
                    let window = &keys[*next..end];
                    *next = end;
                    let found = futures::future::try_join_all(
                        window
                            .chunks(LANE_KEYS)
                            .map(|ks| lookup(readers, overlays, ks)),
                    )
                    .await?;
                    pending.extend(found.into_iter().flatten());
                }
                Walk::Merge { from, to } => match merge_step(from, to, &mut out).await? {
                    None => break,
                    Some(true) => n += 1,
                    Some(false) => {}
                },
            }
        }
        Ok(out)
    }
}

/// One step of the merge scan: the smaller key of the two cursors (both when
/// equal). Some(true) when it changed, None at the end of both views.
async fn merge_step(from: &mut Cursor, to: &mut Cursor, out: &mut Vec<u8>) -> Res<Option<bool>> {
    let a = from.peek().await?.cloned();
    let b = to.peek().await?.cloned();
    Ok(match (a, b) {
        (None, None) => None,
        (Some(a), None) => {
            push_change(out, &a.0, Some(&a.1), None);
            from.advance();
            Some(true)
        }
        (None, Some(b)) => {
            push_change(out, &b.0, None, Some(&b.1));
            to.advance();
            Some(true)
        }
        (Some(a), Some(b)) if a.0 < b.0 => {
            push_change(out, &a.0, Some(&a.1), None);
            from.advance();
            Some(true)
        }
        (Some(a), Some(b)) if a.0 > b.0 => {
            push_change(out, &b.0, None, Some(&b.1));
            to.advance();
            Some(true)
        }
        (Some(a), Some(b)) => {
            from.advance();
            to.advance();
            if a.1 != b.1 {
                push_change(out, &a.0, Some(&a.1), Some(&b.1));
                Some(true)
            } else {
                Some(false)
            }
        }
    })
}

/// The sources of one view: compacted SSTs by id (with their handles) and
/// WAL SST ids.
struct Sources {
    ssts: HashMap<SsTableId, SsTableHandle>,
    wals: Range<u64>,
}

fn sources(m: &VersionedManifest, wals: Range<u64>) -> Sources {
    let ssts = manifest::compacted_views(m)
        .into_iter()
        .map(|(_, v)| (v.sst.id, v.sst.clone()))
        .collect();
    Sources { ssts, wals }
}

/// An SST's stored size, from where its last section ends.
fn sst_bytes(h: &SsTableHandle) -> u64 {
    let i = &h.info;
    (i.index_offset + i.index_len)
        .max(i.filter_offset + i.filter_len)
        .max(i.stats_offset + i.stats_len)
}

/// Opens the changes between views `from` and `to` of the database at
/// `loc`. Sources that differ holding more than `max_fraction` of the later
/// view's bytes take the merge scan (0 or less: always; a fraction of 2 or
/// more never falls back, as the differing sources hold at most both
/// views' bytes). With a `cache` (overlays.rs), each view's overlay starts
/// from the cached one that reaches furthest, and only the WAL SSTs past it
/// are read; a cache that keeps gets both views' overlays.
pub(crate) async fn open(
    loc: &Location,
    url: &str,
    from: View,
    to: View,
    max_fraction: f64,
    cache: Option<&Cache>,
) -> Res<Changes> {
    store::require_manifest(loc, url).await?;
    let ro = loc.read_only_store();
    let admin = slatedb::admin::Admin::builder(loc.path.clone(), ro.clone()).build();
    // Each a few requests in turn: both views' at once.
    let (me, ml) = futures::try_join!(
        manifest::read(&admin, url, Some(from.checkpoint)),
        manifest::read(&admin, url, Some(to.checkpoint))
    )?;
    manifest::require_self_contained(&me, url, "find the changes of")?;
    manifest::require_self_contained(&ml, url, "find the changes of")?;
    let open = |v: View| {
        crate::open_reader(
            loc,
            url,
            Some(v.checkpoint),
            Some(u64::MAX),
            Some(KeptCache::new(None, READER_CACHE_BYTES)),
        )
    };
    let (from_reader, to_reader, wal) =
        futures::try_join!(open(from), open(to), manifest::list_ssts(loc, "wal"))?;
    let wal_sizes: HashMap<u64, u64> = wal
        .into_iter()
        .filter_map(|(stem, size)| stem.parse::<u64>().ok().map(|n| (n, size)))
        .collect();
    let e = sources(&me, view_wals(&me, from));
    let l = sources(&ml, view_wals(&ml, to));
    let present = |r: &Range<u64>, other: &Range<u64>| -> Vec<u64> {
        r.clone()
            .filter(|n| !other.contains(n) && wal_sizes.contains_key(n))
            .collect()
    };
    let wals_added = present(&l.wals, &e.wals);
    let wals_removed = present(&e.wals, &l.wals);
    // Each view's overlay: the WAL SSTs past its manifest, the cached part
    // of them (a base) not read again.
    let ranges = [(&me, from), (&ml, to)].map(|(m, v)| manifest::wal_ids(m).end..v.wal_end);
    let base = |r: Range<u64>| async move {
        match cache {
            Some(c) if r.start < r.end => Ok(c
                .best(r.start, r.end)
                .await?
                .unwrap_or((r.start, Vec::new()))),
            _ => Ok::<_, crate::Fail>((r.start, Vec::new())),
        }
    };
    let (b0, b1) = futures::try_join!(base(ranges[0].clone()), base(ranges[1].clone()))?;
    let bases: [(u64, Overlay); 2] = [b0, b1];
    let needed = [0, 1].map(|i| bases[i].0..ranges[i].end);
    // Every WAL SST read below (both views' overlays, the ones only one
    // view names), fetched once each, WAL_PARALLEL at a time: the WAL
    // reader asks several requests of each, which on S3 made a round over a
    // writer's WAL backlog cost ~5 requests per WAL SST.
    let wanted: BTreeSet<u64> = needed
        .iter()
        .flat_map(|r| r.clone())
        .chain(wals_added.iter().chain(&wals_removed).copied())
        .filter(|n| wal_sizes.contains_key(n))
        .collect();
    let dir = loc.path.child("wal");
    let warm = Warm::fetch(
        ro,
        wanted
            .iter()
            .map(|n| dir.child(format!("{n:020}.sst")))
            .collect(),
        WAL_PARALLEL,
    )
    .await
    .map_err(|e| store::store_error(loc, e))?;
    let wal_reader = WalReader::new(loc.path.clone(), Arc::new(warm));
    let cached_to = [bases[0].0, bases[1].0];
    let overlays = overlays(&wal_reader, &wal_sizes, bases, needed, [from, to], url).await?;
    if let Some(c) = cache.filter(|c| c.keep) {
        for (i, r) in ranges.iter().enumerate() {
            if r.start < r.end && cached_to[i] != r.end {
                c.put(r.start, r.end, &overlays[i]).await?;
            }
        }
    }

    let added: Vec<&SsTableHandle> = l
        .ssts
        .iter()
        .filter(|(id, _)| !e.ssts.contains_key(id))
        .map(|(_, h)| h)
        .collect();
    let removed: Vec<&SsTableHandle> = e
        .ssts
        .iter()
        .filter(|(id, _)| !l.ssts.contains_key(id))
        .map(|(_, h)| h)
        .collect();
    let wal_bytes = |ids: &[u64]| ids.iter().map(|n| wal_sizes[n]).sum::<u64>();
    let changed_bytes = added
        .iter()
        .chain(&removed)
        .map(|h| sst_bytes(h))
        .sum::<u64>()
        + wal_bytes(&wals_added)
        + wal_bytes(&wals_removed);
    let total_bytes =
        l.ssts.values().map(sst_bytes).sum::<u64>() + wal_bytes(&present(&l.wals, &(0..0)));

    let mut summary = Summary {
        method: Method::SstDiff,
        reason: String::new(),
        from_manifest: me.id(),
        to_manifest: ml.id(),
        from_wal_end: e.wals.end,
        to_wal_end: l.wals.end,
        ssts_added: added.len() as u64,
        ssts_removed: removed.len() as u64,
        wals_added: wals_added.len() as u64,
        wals_removed: wals_removed.len() as u64,
        changed_bytes,
        total_bytes,
        candidates: 0,
    };
    let limit = max_fraction * total_bytes as f64;
    if max_fraction <= 0.0 || changed_bytes as f64 > limit {
        summary.method = Method::MergeScan;
        summary.reason = if max_fraction <= 0.0 {
            "the merge scan was asked for".into()
        } else {
            format!(
                "the sources that differ hold {changed_bytes} of {total_bytes} bytes, more than {max_fraction} of them: scanning both views costs less than reading their keys (a compaction rewrote much of the database, or it is small)"
            )
        };
        let scan = ScanOptions {
            read_ahead_bytes: 1 << 20,
            max_fetch_tasks: 2,
            cache_blocks: false,
            ..ScanOptions::default()
        };
        let [from_overlay, to_overlay] = overlays;
        return Ok(Changes {
            summary,
            walk: Walk::Merge {
                from: Box::new(cursor(&from_reader, from_overlay, &scan).await?),
                to: Box::new(cursor(&to_reader, to_overlay, &scan).await?),
            },
            readers: vec![from_reader, to_reader],
            overlays: [Vec::new(), Vec::new()],
        });
    }

    let mut keys = BTreeSet::new();
    let handles: Vec<SsTableHandle> = added.into_iter().chain(removed).cloned().collect();
    for k in sst_keys(loc, &handles).await? {
        keys.insert(k);
    }
    let per_wal: Vec<Vec<Bytes>> =
        futures::stream::iter(wals_added.iter().chain(&wals_removed).map(|&id| {
            let r = &wal_reader;
            async move {
                let entries = wal_entries(r, id).await?;
                Ok::<_, crate::Fail>(entries.into_iter().map(|(k, _, _)| k).collect())
            }
        }))
        .buffer_unordered(PARALLEL)
        .try_collect()
        .await?;
    keys.extend(per_wal.into_iter().flatten());
    // The overlays' differences too: a WAL SST a cached overlay holds may
    // be gone from the store, its keys unread above.
    keys.extend(overlay_diff(&overlays[0], &overlays[1]));
    summary.candidates = keys.len() as u64;
    let keys: Vec<Bytes> = keys.into_iter().collect();
    Ok(Changes {
        summary,
        readers: vec![from_reader, to_reader],
        overlays,
        walk: Walk::Keys {
            keys,
            next: 0,
            pending: VecDeque::new(),
        },
    })
}

/// The WAL SSTs a view replays: its checkpoint's, then those up to its
/// `wal_end`.
fn view_wals(m: &VersionedManifest, v: View) -> Range<u64> {
    let own = manifest::wal_ids(m);
    own.start..own.end.max(v.wal_end)
}

/// Reads the WAL SSTs of each view past its checkpoint's manifest into its
/// overlay, each WAL SST once though both views lay it (a round's two views
/// share the writer's WAL backlog): for each view, its base (a cached
/// overlay, older than any WAL SST read) under the WAL SSTs of `needed`.
/// Each of those must still be there: a checkpoint does not protect them
/// from SlateDB's garbage collection once the writer moved them into an L0
/// SST (after 5 minutes, its default), and a view missing one would quietly
/// drop commits.
async fn overlays(
    r: &WalReader,
    listed: &HashMap<u64, u64>,
    bases: [(u64, Overlay); 2],
    needed: [Range<u64>; 2],
    views: [View; 2],
    url: &str,
) -> Res<[Overlay; 2]> {
    for (v, ids) in views.iter().zip(&needed) {
        if let Some(gone) = ids.clone().find(|n| !listed.contains_key(n)) {
            return Err(fail(
                RL_ERR_NOT_FOUND,
                format!(
                    "find the changes of {url}: WAL SST {gone} of the view at checkpoint {} (WAL up to {}) is gone: its garbage collection removed it",
                    v.checkpoint, v.wal_end
                ),
            ));
        }
    }
    let ids: BTreeSet<u64> = needed.iter().flat_map(|r| r.clone()).collect();
    let read: Vec<(u64, Vec<WalEntry>)> = futures::stream::iter(
        ids.into_iter()
            .map(|id| async move { Ok::<_, crate::Fail>((id, wal_entries(r, id).await?)) }),
    )
    .buffered(WAL_PARALLEL)
    .try_collect()
    .await?;
    let read: HashMap<u64, Vec<WalEntry>> = read.into_iter().collect();
    let mut bases = bases.into_iter();
    Ok(needed.map(|ids| {
        // None: the base's entry, older than every entry read.
        let mut newest: BTreeMap<Bytes, (Option<u64>, Option<Bytes>)> = BTreeMap::new();
        if let Some((_, base)) = bases.next() {
            newest.extend(base.into_iter().map(|(k, v)| (k, (None, v))));
        }
        for id in ids {
            for (key, seq, value) in read.get(&id).into_iter().flatten() {
                match newest.get(key) {
                    Some((Some(s), _)) if *s >= *seq => {}
                    _ => {
                        newest.insert(key.clone(), (Some(*seq), value.clone()));
                    }
                }
            }
        }
        newest.into_iter().map(|(k, (_, v))| (k, v)).collect()
    }))
}

/// The keys whose entries differ between two overlays (one present and the
/// other not, or other values): every key the overlays change, whether or
/// not the WAL SSTs that changed it are still there to read.
fn overlay_diff(a: &Overlay, b: &Overlay) -> Vec<Bytes> {
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some((ka, va)), Some((kb, vb))) if ka == kb => {
                if va != vb {
                    out.push(ka.clone());
                }
                i += 1;
                j += 1;
            }
            (Some((ka, _)), Some((kb, _))) if ka < kb => {
                out.push(ka.clone());
                i += 1;
            }
            (Some(_), Some((kb, _))) => {
                out.push(kb.clone());
                j += 1;
            }
            (Some((ka, _)), None) => {
                out.push(ka.clone());
                i += 1;
            }
            (None, Some((kb, _))) => {
                out.push(kb.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    out
}

/// A WAL SST's entry: key, sequence number, value (None: a tombstone).
type WalEntry = (Bytes, u64, Option<Bytes>);

/// Every entry of a WAL SST: key, sequence number, value (None: a
/// tombstone). Merge operands are refused: RockLake writes none, and their
/// value depends on entries this view does not read.
async fn wal_entries(r: &WalReader, id: u64) -> Res<Vec<WalEntry>> {
    let what = format!("read WAL SST {id}");
    let mut it = r
        .get(id)
        .iterator()
        .await
        .map_err(|e| from_slate(&what, e))?;
    let mut out = Vec::new();
    while let Some(row) = it.next().await.map_err(|e| from_slate(&what, e))? {
        let value = match row.value {
            ValueDeletable::Value(v) => Some(v),
            ValueDeletable::Tombstone => None,
            ValueDeletable::Merge(_) => {
                return Err(fail(
                    RL_ERR_INVALID,
                    format!("{what}: a merge operand, which this tool does not read"),
                ))
            }
        };
        out.push((row.key, row.seq, value));
    }
    Ok(out)
}

/// What a writer's open fetched ahead of its WAL replay.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Warmed {
    pub ssts: u64,
    pub bytes: u64,
    pub ms: u64,
}

/// The store a fencing writer opens through: the WAL SSTs past the latest
/// manifest (what the open replays) fetched ahead, WAL_PARALLEL at a time,
/// and served from memory (guard::Warm). A WAL kept in another store is left
/// to the open.
pub(crate) async fn warm_wal(loc: &Location, url: &str) -> Res<(Arc<dyn ObjectStore>, Warmed)> {
    let start = std::time::Instant::now();
    let m = manifest::read(&loc.admin(), url, None).await?;
    if m.wal_object_store_uri().is_some() {
        return Ok((loc.store.clone(), Warmed::default()));
    }
    let from = m.replay_after_wal_id() + 1;
    let dir = loc.path.child("wal");
    let paths: Vec<Path> = manifest::list_ssts(loc, "wal")
        .await?
        .into_iter()
        .filter(|(stem, _)| stem.parse::<u64>().is_ok_and(|id| id >= from))
        .map(|(stem, _)| dir.child(format!("{stem}.sst")))
        .collect();
    let warm = Warm::fetch(loc.store.clone(), paths, WAL_PARALLEL)
        .await
        .map_err(|e| store::store_error(loc, e))?;
    let (ssts, bytes) = warm.held().await;
    let warmed = Warmed {
        ssts: ssts as u64,
        bytes,
        ms: start.elapsed().as_millis() as u64,
    };
    Ok((Arc::new(warm), warmed))
}

/// The end of the WAL SSTs of the database at `loc` (one past the highest
/// id listed; 0 when there is none): with a checkpoint taken just before,
/// the view of everything its writer had written by then.
pub(crate) async fn wal_end(loc: &Location, url: &str) -> Res<u64> {
    store::require_manifest(loc, url).await?;
    Ok(manifest::list_ssts(loc, "wal")
        .await?
        .into_iter()
        .filter_map(|(stem, _)| stem.parse::<u64>().ok())
        .max()
        .map_or(0, |n| n + 1))
}

async fn cursor(r: &DbReader, overlay: Overlay, scan: &ScanOptions) -> Res<Cursor> {
    let it = r
        .scan_with_options(Bytes::new().., scan)
        .await
        .map_err(|e| from_slate("scan", e))?;
    Ok(Cursor {
        it,
        scanned: None,
        done: false,
        overlay,
        next_overlay: 0,
        peeked: None,
    })
}

/// Every key of the compacted SSTs, tombstones included: each SST's index
/// once (kept by IndexCache), then its blocks, PARALLEL at a time.
async fn sst_keys(loc: &Location, handles: &[SsTableHandle]) -> Res<Vec<Bytes>> {
    if handles.is_empty() {
        return Ok(Vec::new());
    }
    let cache = KeptCache::new(
        Some(
            handles
                .iter()
                .map(|h| CachedKey::from((h.id, h.info.index_offset)))
                .collect(),
        ),
        usize::MAX,
    );
    let reader = SstReader::new(loc.path.clone(), loc.read_only_store(), Some(cache), None);
    let mut jobs = Vec::new();
    for h in handles {
        let SsTableId::Compacted(ulid) = h.id else {
            continue;
        };
        let file = Arc::new(
            reader
                .open_with_handle(h.clone())
                .map_err(|e| from_slate("open an SST", e))?,
        );
        let blocks = file
            .index()
            .await
            .map_err(|e| from_slate(&format!("read the index of SST {ulid}"), e))?
            .len();
        jobs.extend((0..blocks).map(|b| (file.clone(), b, ulid)));
    }
    let per_block: Vec<Vec<Bytes>> =
        futures::stream::iter(jobs.into_iter().map(|(file, b, ulid)| async move {
            let rows = file
                .read_block(b)
                .await
                .map_err(|e| from_slate(&format!("read block {b} of SST {ulid}"), e))?;
            Ok::<_, crate::Fail>(rows.into_iter().map(|r| r.key).collect())
        }))
        .buffer_unordered(PARALLEL)
        .try_collect()
        .await?;
    Ok(per_block.into_iter().flatten().collect())
}

/// Keeps what SlateDB reads of SSTs in memory, up to a bound: for the SST
/// reader, only the indexes of the SSTs it reads (`allowed`; read_block
/// reads its SST's index again on every call without a cache, and an index
/// can be most of a megabyte); for the readers, the filters, indexes and
/// blocks their point reads fetch, so that each filter and index is read
/// once. The crate's own caches are features this build leaves out.
struct KeptCache {
    allowed: Option<HashSet<CachedKey>>,
    limit: usize,
    kept: std::sync::Mutex<(HashMap<CachedKey, CachedEntry>, usize)>,
}

/// What a reader's KeptCache holds at most: a bound on memory (a Lambda
/// runs both readers), not a working set. A full cache takes nothing more;
/// the filters and indexes, read by the first lookups, are in by then
/// (about 3 MiB of them at 1 000 000 rows).
const READER_CACHE_BYTES: usize = 64 << 20;

impl KeptCache {
    fn new(allowed: Option<HashSet<CachedKey>>, limit: usize) -> Arc<Self> {
        Arc::new(Self {
            allowed,
            limit,
            kept: std::sync::Mutex::new((HashMap::new(), 0)),
        })
    }

    fn get(&self, key: &CachedKey) -> Option<CachedEntry> {
        self.kept.lock().ok()?.0.get(key).cloned()
    }
}

#[async_trait]
impl DbCache for KeptCache {
    async fn get_block(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn get_index(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn get_filter(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn get_stats(&self, key: &CachedKey) -> Result<Option<CachedEntry>, slatedb::Error> {
        Ok(self.get(key))
    }
    async fn insert(&self, key: CachedKey, value: CachedEntry) {
        if self.allowed.as_ref().is_some_and(|a| !a.contains(&key)) {
            return;
        }
        if let Ok(mut kept) = self.kept.lock() {
            let size = value.size();
            if kept.1 + size <= self.limit {
                if let Some(old) = kept.0.insert(key, value) {
                    kept.1 -= old.size();
                }
                kept.1 += size;
            }
        }
    }
    async fn remove(&self, key: &CachedKey) {
        if let Ok(mut kept) = self.kept.lock() {
            if let Some(old) = kept.0.remove(key) {
                kept.1 -= old.size();
            }
        }
    }
    fn entry_count(&self) -> u64 {
        self.kept.lock().map_or(0, |k| k.0.len() as u64)
    }
}

/// A view from its checkpoint's id and its WAL end: only a checkpoint keeps
/// the sources the comparison reads.
pub(crate) fn parse_view(raw: &str, wal_end: u64) -> Res<View> {
    if raw.is_empty() {
        return Err(fail(
            RL_ERR_INVALID,
            "find changes: a view must be a checkpoint",
        ));
    }
    let checkpoint = Uuid::parse_str(raw)
        .map_err(|e| fail(RL_ERR_INVALID, format!("checkpoint id {raw:?}: {e}")))?;
    Ok(View {
        checkpoint,
        wal_end,
    })
}
