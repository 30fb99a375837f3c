//! A checkpoint copied to a database of its own: the instant way back of an
//! in-place migration (pkg/inplace).
//!
//! SlateDB 0.13.1's clone (`Admin::create_clone_builder`) makes a database
//! that lives on its parent's SSTs, which its `DbReader` and RockLake's
//! `file://` stores cannot resolve. This copies instead: every object the
//! checkpoint's manifest needs (its compacted SSTs, the WAL SSTs it replays,
//! the manifest itself, last) to an empty place in the same store, with the
//! store's own copy (S3 CopyObject, server side). The copy is a plain
//! database, the catalog exactly as the checkpoint holds it; the checkpoints
//! its manifest lists (the source's, whose manifests were not copied) are
//! removed from it.

use std::collections::{BTreeMap, HashSet};

use futures::{StreamExt, TryStreamExt};
use slatedb::manifest::SsTableId;
use slatedb::object_store::path::Path;
use uuid::Uuid;

use crate::manifest;
use crate::store::{self, Location};
use crate::{fail, from_slate, Res, RL_ERR_DATA, RL_ERR_INVALID};

/// How many objects are copied at once.
const PARALLEL: usize = 8;

/// What a copy made.
pub struct Copied {
    pub manifest_id: u64,
    pub objects: usize,
    pub bytes: u64,
    /// The source's checkpoints removed from the copy's manifest.
    pub checkpoints_dropped: usize,
}

/// Copies checkpoint `id` of the database at `src` to `dst`, which must be
/// empty and in the same store. On error the caller deletes what is under
/// `dst` (before the manifest lands, nothing there is a database).
///
/// `wal_end`, if past the manifest's own WAL end, is a view's (pkg/slatedb
/// View): the WAL SSTs up to it, written after the checkpoint's manifest
/// by a live writer, are copied too, and SlateDB replays them when the
/// copy is opened (it replays every WAL SST it lists past the manifest's
/// replay point), so the copy holds every commit the view does.
pub async fn checkpoint(
    src: &Location,
    src_url: &str,
    id: Uuid,
    wal_end: u64,
    dst: &Location,
    dst_url: &str,
) -> Res<Copied> {
    if !src.same_store(dst) {
        return Err(fail(
            RL_ERR_INVALID,
            format!("copy {src_url} to {dst_url}: not in the same bucket or file system"),
        ));
    }
    if dst.path.prefix_matches(&src.path) || src.path.prefix_matches(&dst.path) {
        return Err(fail(
            RL_ERR_INVALID,
            format!("copy {src_url} to {dst_url}: one lies inside the other"),
        ));
    }
    store::require_manifest(src, src_url).await?;
    if let Some(o) = src.store.list(Some(&dst.path)).next().await {
        let o = o.map_err(|e| store::store_error(dst, e))?;
        return Err(fail(
            RL_ERR_INVALID,
            format!(
                "copy {src_url} to {dst_url}: the destination is not empty ({} exists)",
                o.location
            ),
        ));
    }
    let m = manifest::read(&src.admin(), src_url, Some(id)).await?;
    manifest::require_self_contained(&m, src_url, "copy")?;
    let ssts: HashSet<String> = manifest::compacted_views(&m)
        .into_iter()
        .filter_map(|(_, v)| match v.sst.id {
            SsTableId::Compacted(u) => Some(u.to_string()),
            SsTableId::Wal(_) => None,
        })
        .collect();
    let own = manifest::wal_ids(&m);
    let wal = own.start..own.end.max(wal_end);

    // What exists, with sizes; everything the manifest names must.
    let mut todo: BTreeMap<String, u64> = BTreeMap::new();
    for dir in ["compacted", "wal"] {
        for (stem, size) in manifest::list_ssts(src, dir).await? {
            let wanted = match dir {
                "compacted" => ssts.contains(&stem),
                _ => stem.parse::<u64>().is_ok_and(|n| wal.contains(&n)),
            };
            if wanted {
                todo.insert(format!("{dir}/{stem}.sst"), size);
            }
        }
    }
    if let Some(gap) = (own.end..wal.end).find(|n| !todo.contains_key(&format!("wal/{n:020}.sst")))
    {
        return Err(fail(
            RL_ERR_DATA,
            format!("copy {src_url}: WAL SST {gap} of the view of checkpoint {id} (through {}) is not in the store", wal.end),
        ));
    }
    let missing: Vec<&String> = ssts
        .iter()
        .filter(|u| !todo.contains_key(&format!("compacted/{u}.sst")))
        .collect();
    if !missing.is_empty() {
        return Err(fail(
            RL_ERR_DATA,
            format!("copy {src_url}: checkpoint {id} names {} SSTs that are not in the store (first: {})", missing.len(), missing[0]),
        ));
    }
    let manifest = format!("manifest/{:020}.manifest", m.id());
    let bytes = todo.values().sum::<u64>();
    let objects = todo.len() + 1;

    let rel = |p: &str| -> (Path, Path) {
        (
            Path::from(format!("{}/{p}", src.path)),
            Path::from(format!("{}/{p}", dst.path)),
        )
    };
    futures::stream::iter(todo.keys().map(|k| {
        let (from, to) = rel(k);
        let store = src.store.clone();
        async move { store.copy(&from, &to).await.map_err(|e| (from, e)) }
    }))
    .buffer_unordered(PARALLEL)
    .try_collect::<Vec<_>>()
    .await
    .map_err(|(from, e)| copy_error(src, &from, e))?;
    // The manifest last: before it, nothing under dst is a database.
    let (from, to) = rel(&manifest);
    src.store
        .copy(&from, &to)
        .await
        .map_err(|e| copy_error(src, &from, e))?;

    // The source's checkpoints name manifests the copy does not have.
    let dadmin = dst.admin();
    let dropped = dadmin
        .list_checkpoints(None)
        .await
        .map_err(|e| from_slate("list the copy's checkpoints", e))?;
    for c in &dropped {
        dadmin
            .delete_checkpoint(c.id)
            .await
            .map_err(|e| from_slate("drop a checkpoint from the copy", e))?;
    }
    Ok(Copied {
        manifest_id: m.id(),
        objects,
        bytes,
        checkpoints_dropped: dropped.len(),
    })
}

fn copy_error(loc: &Location, from: &Path, e: slatedb::object_store::Error) -> crate::Fail {
    let f = store::store_error(loc, e);
    fail(f.code, format!("copy {from}: {}", f.msg))
}
