//! Reading a database's manifest, shared by the checkpoint copy (copy.rs)
//! and the block profile (blocks.rs): the manifest of a checkpoint or the
//! latest one, the compacted SST views it names (default tree and every
//! segment), the WAL SSTs it replays, and object sizes from a listing.

use std::ops::Range;

use futures::TryStreamExt;
use slatedb::admin::Admin;
use slatedb::manifest::{SortedRun, SsTableView};
use slatedb::VersionedManifest;
use uuid::Uuid;

use crate::store::{self, Location};
use crate::{fail, from_slate, Res, RL_ERR_CHECKPOINT_MISSING, RL_ERR_DATA, RL_ERR_INVALID};

/// The manifest of checkpoint `id` of the database `admin` reads, or the
/// latest manifest when `id` is None. A missing checkpoint is
/// RL_ERR_CHECKPOINT_MISSING.
pub async fn read(admin: &Admin, url: &str, id: Option<Uuid>) -> Res<VersionedManifest> {
    let manifest_id = match id {
        None => None,
        Some(id) => {
            let cps = admin
                .list_checkpoints(None)
                .await
                .map_err(|e| from_slate("list checkpoints", e))?;
            let cp = cps.iter().find(|c| c.id == id).ok_or_else(|| {
                fail(
                    RL_ERR_CHECKPOINT_MISSING,
                    format!("{url}: checkpoint missing. checkpoint_id=`{id}`"),
                )
            })?;
            Some(cp.manifest_id)
        }
    };
    admin
        .read_manifest(manifest_id)
        .await
        .map_err(|e| from_slate("read the manifest", e))?
        .ok_or_else(|| match manifest_id {
            Some(n) => fail(RL_ERR_DATA, format!("{url}: manifest {n} is gone")),
            None => fail(
                crate::RL_ERR_NO_DATABASE,
                format!("{url}: no SlateDB database there (no manifest)"),
            ),
        })
}

/// Refuses a database whose objects are not all under its own root (a WAL
/// in another store, a SlateDB clone living on another database's SSTs):
/// `what` it is that cannot be done by itself.
pub fn require_self_contained(m: &VersionedManifest, url: &str, what: &str) -> Res<()> {
    if let Some(wal) = m.wal_object_store_uri() {
        return Err(fail(
            RL_ERR_INVALID,
            format!("{what} {url}: the database keeps its WAL in another store ({wal})"),
        ));
    }
    if !m.external_dbs().is_empty() {
        return Err(fail(
            RL_ERR_INVALID,
            format!("{what} {url}: the database is a SlateDB clone (it lives on another database's SSTs)"),
        ));
    }
    Ok(())
}

/// Where a compacted SST view sits: L0, or the sorted run with this id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    L0,
    Run(u32),
}

/// Every compacted SST view the manifest names, with its level: the L0
/// views and sorted runs of the default tree and of every segment.
pub fn compacted_views(m: &VersionedManifest) -> Vec<(Level, &SsTableView)> {
    fn push<'m>(
        out: &mut Vec<(Level, &'m SsTableView)>,
        l0: impl Iterator<Item = &'m SsTableView>,
        runs: &'m [SortedRun],
    ) {
        out.extend(l0.map(|v| (Level::L0, v)));
        for r in runs {
            out.extend(r.sst_views.iter().map(|v| (Level::Run(r.id), v)));
        }
    }
    let mut out = Vec::new();
    push(&mut out, m.l0().iter(), m.compacted());
    for s in m.segments() {
        push(&mut out, s.l0().iter(), s.compacted());
    }
    out
}

/// The WAL SST ids a reader of the manifest replays.
pub fn wal_ids(m: &VersionedManifest) -> Range<u64> {
    (m.replay_after_wal_id() + 1)..m.next_wal_sst_id()
}

/// The `.sst` objects directly under `dir` ("compacted", "wal") of the
/// database: their stems (a ULID, a WAL id) and sizes.
pub async fn list_ssts(loc: &Location, dir: &str) -> Res<Vec<(String, u64)>> {
    let prefix = loc.path.child(dir);
    let list: Vec<_> = loc
        .store
        .list(Some(&prefix))
        .try_collect()
        .await
        .map_err(|e| store::store_error(loc, e))?;
    Ok(list
        .into_iter()
        .filter_map(|o| {
            let stem = o.location.filename()?.strip_suffix(".sst")?.to_string();
            Some((stem, o.size))
        })
        .collect())
}
