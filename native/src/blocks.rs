//! Where a database's bytes lie in key order, from its SSTs' indexes alone:
//! the block profile Freeze cuts shards by (pkg/shard PlanByBlocks) instead
//! of scanning every key.
//!
//! Every compacted SST (L0 and sorted runs, default tree and segments) of a
//! manifest carries an index: each data block's first key and offset, so
//! the offsets' differences are the blocks' stored sizes. Reading the
//! indexes costs one small ranged read per SST (the handle in the manifest
//! says where the index lies), whatever the row count. A view that shows
//! only part of a shared SST (SsTableView's visible range) contributes only
//! the blocks that overlap that range. The WAL SSTs past the manifest are
//! not profiled (their keys are unsorted); their number and bytes are
//! reported so the caller can judge whether the profile is whole enough.
//!
//! Nothing is written: the manifest is read through guard::Overlay.

use std::ops::{Bound, RangeBounds};

use futures::{StreamExt, TryStreamExt};
use slatedb::bytes::Bytes;
use slatedb::manifest::{SsTableId, SsTableView};
use slatedb::SstReader;
use uuid::Uuid;

use crate::manifest::{self, Level};
use crate::store::{self, Location};
use crate::{from_slate, Res};

/// How many SST indexes are read at once.
const PARALLEL: usize = 16;

/// One data block (or, past the caller's bound, a run of adjacent blocks of
/// one SST).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Where the block starts: the SST's first key for its first block, else
    /// the index's separator (a key after the previous block's last and at
    /// most this block's first), raised to its view's visible range.
    pub key: Bytes,
    /// Stored bytes (compressed, as in the SST).
    pub bytes: u64,
    /// The SST's ULID, as its 128-bit value.
    pub sst: u128,
    pub level: Level,
}

/// What a profile found.
#[derive(Debug, Default)]
pub struct Profile {
    pub manifest_id: u64,
    /// Compacted SST views profiled.
    pub ssts: u64,
    /// WAL SSTs a reader of the checkpoint (or of the latest state)
    /// replays, and their bytes.
    pub wal_ssts: u64,
    pub wal_bytes: u64,
    /// How many adjacent blocks of an SST each output block stands for
    /// (1: none merged).
    pub merged: u32,
    /// In manifest order: L0 newest first, then each sorted run in key order.
    pub blocks: Vec<Block>,
}

/// Profiles the database at `loc`, as checkpoint `id` holds it (the latest
/// manifest when None), in at most max(`max_blocks`, SSTs) blocks.
pub async fn profile(
    loc: &Location,
    url: &str,
    id: Option<Uuid>,
    max_blocks: usize,
) -> Res<Profile> {
    store::require_manifest(loc, url).await?;
    let ro = loc.read_only_store();
    let admin = slatedb::admin::Admin::builder(loc.path.clone(), ro.clone()).build();
    let m = manifest::read(&admin, url, id).await?;
    manifest::require_self_contained(&m, url, "profile blocks of")?;
    let views = manifest::compacted_views(&m);
    let reader = SstReader::new(loc.path.clone(), ro, None, None);
    let per_sst: Vec<Vec<Block>> = futures::stream::iter(
        views
            .iter()
            .map(|(level, v)| view_blocks(&reader, *level, v)),
    )
    .buffered(PARALLEL)
    .try_collect()
    .await?;

    // A checkpoint's reader replays the WAL SSTs its manifest names; a
    // reader of the latest state every one past the manifest's.
    let wal = match id {
        Some(_) => manifest::wal_ids(&m),
        None => manifest::wal_ids(&m).start..u64::MAX,
    };
    let (mut wal_ssts, mut wal_bytes) = (0, 0);
    if !wal.is_empty() {
        for (stem, size) in manifest::list_ssts(loc, "wal").await? {
            if stem.parse::<u64>().is_ok_and(|n| wal.contains(&n)) {
                wal_ssts += 1;
                wal_bytes += size;
            }
        }
    }
    let (blocks, merged) = bound(per_sst, max_blocks);
    Ok(Profile {
        manifest_id: m.id(),
        ssts: views.len() as u64,
        wal_ssts,
        wal_bytes,
        merged,
        blocks,
    })
}

/// The blocks of one view: its SST's index, sized by the offsets, the last
/// block ending where the footer's filter begins (its offset is set, the
/// data's end, even when the SST has no filter).
async fn view_blocks(reader: &SstReader, level: Level, v: &SsTableView) -> Res<Vec<Block>> {
    let SsTableId::Compacted(ulid) = v.sst.id else {
        return Ok(Vec::new());
    };
    let sst = ulid.0;
    let file = reader
        .open_with_handle(v.sst.clone())
        .map_err(|e| from_slate("open an SST", e))?;
    let index = file
        .index()
        .await
        .map_err(|e| from_slate(&format!("read the index of SST {ulid}"), e))?;
    let end = v.sst.info.filter_offset;
    let mut sized = Vec::with_capacity(index.len());
    for (i, (off, key)) in index.iter().enumerate() {
        let next = index.get(i + 1).map_or(end, |(o, _)| *o);
        // The index holds separators, the first block's empty: the SST's
        // own first key stands for it.
        let key = match (i, &v.sst.info.first_entry) {
            (0, Some(first)) => first.clone(),
            _ => key.clone(),
        };
        sized.push((key, next.saturating_sub(*off)));
    }
    Ok(clip(sized, v.visible_range().as_ref())
        .into_iter()
        .map(|(key, bytes)| Block {
            key,
            bytes,
            sst,
            level,
        })
        .collect())
}

/// Keeps the blocks (first key, bytes; in key order) that overlap `range`,
/// the first one's key raised to the range's start. A block spans from its
/// first key to the next block's.
fn clip(blocks: Vec<(Bytes, u64)>, range: Option<&impl RangeBounds<Bytes>>) -> Vec<(Bytes, u64)> {
    let Some(r) = range else {
        return blocks;
    };
    let starts_after_end = |k: &Bytes| match r.end_bound() {
        Bound::Included(e) => k > e,
        Bound::Excluded(e) => k >= e,
        Bound::Unbounded => false,
    };
    let ends_before_start = |next: Option<&Bytes>| match (r.start_bound(), next) {
        (_, None) | (Bound::Unbounded, _) => false,
        // The block holds keys below `next`; the view starts at s.
        (Bound::Included(s), Some(n)) => n <= s,
        (Bound::Excluded(s), Some(n)) => n <= s,
    };
    let mut out: Vec<(Bytes, u64)> = Vec::new();
    for i in 0..blocks.len() {
        let (k, b) = &blocks[i];
        if starts_after_end(k) || ends_before_start(blocks.get(i + 1).map(|(n, _)| n)) {
            continue;
        }
        let key = match r.start_bound() {
            Bound::Included(s) | Bound::Excluded(s) if k < s => s.clone(),
            _ => k.clone(),
        };
        out.push((key, *b));
    }
    out
}

/// Merges adjacent blocks of each SST, `f` into one, with the smallest `f`
/// that brings the total to at most `max` (never fewer than one block per
/// SST). Returns the blocks, flattened in order, and `f`.
fn bound(per_sst: Vec<Vec<Block>>, max: usize) -> (Vec<Block>, u32) {
    let total: usize = per_sst.iter().map(Vec::len).sum();
    let count = |f: usize| per_sst.iter().map(|s| s.len().div_ceil(f)).sum::<usize>();
    let mut f = 1usize;
    if max > 0 && total > max {
        f = total.div_ceil(max);
        let widest = per_sst.iter().map(Vec::len).max().unwrap_or(1).max(1);
        while count(f) > max && f < widest {
            f += f.div_ceil(8);
        }
        f = f.min(widest);
    }
    let mut out = Vec::with_capacity(count(f));
    for sst in per_sst {
        for group in sst.chunks(f) {
            let mut b = group[0].clone();
            b.bytes = group.iter().map(|x| x.bytes).sum();
            out.push(b);
        }
    }
    (out, u32::try_from(f).unwrap_or(u32::MAX))
}

/// The profile as the ABI hands it over (all integers little-endian):
/// `manifest_id:u64 | ssts:u64 | wal_ssts:u64 | wal_bytes:u64 | merged:u32 |
/// n:u32`, then n times `klen:u32 | key | bytes:u64 | run:i64 (-1: L0) |
/// sst:16 bytes (the ULID's, big-endian)`.
pub fn encode(p: &Profile) -> Vec<u8> {
    let keys: usize = p.blocks.iter().map(|b| b.key.len()).sum();
    let mut out = Vec::with_capacity(40 + p.blocks.len() * 36 + keys);
    out.extend_from_slice(&p.manifest_id.to_le_bytes());
    out.extend_from_slice(&p.ssts.to_le_bytes());
    out.extend_from_slice(&p.wal_ssts.to_le_bytes());
    out.extend_from_slice(&p.wal_bytes.to_le_bytes());
    out.extend_from_slice(&p.merged.to_le_bytes());
    out.extend_from_slice(&(p.blocks.len() as u32).to_le_bytes());
    for b in &p.blocks {
        out.extend_from_slice(&(b.key.len() as u32).to_le_bytes());
        out.extend_from_slice(&b.key);
        out.extend_from_slice(&b.bytes.to_le_bytes());
        let run: i64 = match b.level {
            Level::L0 => -1,
            Level::Run(r) => i64::from(r),
        };
        out.extend_from_slice(&run.to_le_bytes());
        out.extend_from_slice(&b.sst.to_be_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use slatedb::config::{
        CheckpointOptions, FlushOptions, FlushType, PutOptions, SstBlockSize, WriteOptions,
    };

    fn b(k: &str) -> Bytes {
        Bytes::copy_from_slice(k.as_bytes())
    }

    #[test]
    fn clip_keeps_the_blocks_that_overlap_the_view() {
        let blocks = vec![(b("a"), 1), (b("c"), 2), (b("e"), 3), (b("g"), 4)];
        let none: Option<&std::ops::Range<Bytes>> = None;
        assert_eq!(clip(blocks.clone(), none), blocks);
        // [d, f): the block from c (holding d) raised to d, and the one at e.
        assert_eq!(
            clip(blocks.clone(), Some(&(b("d")..b("f")))),
            vec![(b("d"), 2), (b("e"), 3)]
        );
        // Starting at a block's first key takes nothing before it.
        assert_eq!(
            clip(blocks.clone(), Some(&(b("e")..))),
            vec![(b("e"), 3), (b("g"), 4)]
        );
        // Ending at a block's first key (excluded) leaves that block out.
        assert_eq!(
            clip(blocks, Some(&(..b("e")))),
            vec![(b("a"), 1), (b("c"), 2)]
        );
    }

    fn blk(key: &str, bytes: u64, sst: u128) -> Block {
        Block {
            key: b(key),
            bytes,
            sst,
            level: Level::Run(0),
        }
    }

    #[test]
    fn bound_merges_adjacent_blocks_of_one_sst() {
        let ssts = vec![
            (0..10)
                .map(|i| blk(&format!("a{i}"), 10, 1))
                .collect::<Vec<_>>(),
            (0..3).map(|i| blk(&format!("b{i}"), 5, 2)).collect(),
        ];
        let (all, f) = bound(ssts.clone(), 0);
        assert_eq!((all.len(), f), (13, 1));
        let (half, f) = bound(ssts.clone(), 7);
        assert!(half.len() <= 7, "{} blocks", half.len());
        assert!(f > 1);
        assert_eq!(
            half.iter().map(|x| x.bytes).sum::<u64>(),
            115,
            "no bytes lost"
        );
        assert!(half
            .windows(2)
            .all(|w| w[0].sst != w[1].sst || w[0].key < w[1].key));
        // Never fewer than one block per SST.
        let (one, _) = bound(ssts, 1);
        assert_eq!(one.len(), 2);
        assert_eq!((one[0].bytes, one[1].bytes), (100, 15));
    }

    /// A database on an in-memory store, some of it in L0 and a checkpoint
    /// taken before the rest: the profile covers exactly the SSTs' data, in
    /// their key order, and the profile writes nothing.
    #[test]
    fn profiles_a_real_database_without_writing() {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let url = "memory://blocks-test/db";
            let loc = store::resolve(url, &store::Options::default())
                .unwrap_or_else(|e| panic!("{}", e.msg));
            let db = slatedb::Db::builder(loc.path.clone(), loc.store.clone())
                .with_sst_block_size(SstBlockSize::Block1Kib)
                .build()
                .await
                .unwrap();
            let put = |i: u32| {
                let db = &db;
                async move {
                    let k = format!("key{i:06}");
                    db.put_with_options(
                        k.as_bytes(),
                        &[7u8; 100],
                        &PutOptions::default(),
                        &WriteOptions {
                            await_durable: false,
                            ..WriteOptions::default()
                        },
                    )
                    .await
                    .unwrap();
                }
            };
            let to_l0 = FlushOptions {
                flush_type: FlushType::MemTable,
            };
            for i in 0..2000 {
                put(i).await;
            }
            db.flush_with_options(to_l0.clone()).await.unwrap();
            let cp = db
                .create_checkpoint(
                    slatedb::config::CheckpointScope::All,
                    &CheckpointOptions::default(),
                )
                .await
                .unwrap();
            for i in 2000..3000 {
                put(i).await;
            }
            db.flush_with_options(to_l0).await.unwrap();

            let before: Vec<_> = loc
                .store
                .list(None)
                .map(|o| o.unwrap().location)
                .collect()
                .await;
            let at_cp = profile(&loc, url, Some(cp.id), 0)
                .await
                .unwrap_or_else(|e| panic!("{}", e.msg));
            let latest = profile(&loc, url, None, 0)
                .await
                .unwrap_or_else(|e| panic!("{}", e.msg));
            let after: Vec<_> = loc
                .store
                .list(None)
                .map(|o| o.unwrap().location)
                .collect()
                .await;
            assert_eq!(before, after, "profiling wrote to the store");

            let sum = |p: &Profile| p.blocks.iter().map(|b| b.bytes).sum::<u64>();
            assert!(
                at_cp.ssts >= 1 && latest.ssts > at_cp.ssts,
                "{} then {} SSTs",
                at_cp.ssts,
                latest.ssts
            );
            // 1 KiB blocks of ~120-byte entries: 2000 entries take well over 100.
            assert!(at_cp.blocks.len() > 100, "{} blocks", at_cp.blocks.len());
            assert!(sum(&at_cp) > 2000 * 100 && sum(&latest) > sum(&at_cp));
            assert!(at_cp.blocks.iter().all(|b| b.level == Level::L0));
            for w in at_cp.blocks.windows(2) {
                assert!(
                    w[0].sst != w[1].sst || w[0].key < w[1].key,
                    "blocks of one SST out of key order"
                );
            }
            assert_eq!(&at_cp.blocks[0].key[..], b"key000000");

            let bounded = profile(&loc, url, None, 40)
                .await
                .unwrap_or_else(|e| panic!("{}", e.msg));
            assert!(bounded.blocks.len() <= 40 && bounded.merged > 1);
            assert_eq!(sum(&bounded), sum(&latest));

            let missing = profile(&loc, url, Some(Uuid::new_v4()), 0)
                .await
                .unwrap_err();
            assert_eq!(
                missing.code,
                crate::RL_ERR_CHECKPOINT_MISSING,
                "{}",
                missing.msg
            );
            let none = store::resolve("memory://blocks-test/nothing", &store::Options::default())
                .unwrap_or_else(|e| panic!("{}", e.msg));
            let err = profile(&none, "memory://blocks-test/nothing", None, 0)
                .await
                .unwrap_err();
            assert_eq!(err.code, crate::RL_ERR_NO_DATABASE, "{}", err.msg);
            db.close().await.unwrap();
        });
    }
}
