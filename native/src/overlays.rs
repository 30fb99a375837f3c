//! The overlay cache of an online migration's rounds.
//!
//! A view's overlay is the newest entry per key of the WAL SSTs past its
//! checkpoint's manifest, ids `start..end` (changes.rs). A writer's WAL
//! backlog lies in every round's views, so each round would read it whole,
//! the last ones inside the write freeze; and SlateDB's garbage collection
//! may remove those WAL SSTs once the writer moved them to L0, which a view
//! cannot afford. WAL SSTs are never rewritten, so the overlay of
//! `start..end` is fixed: a round that keeps it writes it to the run's
//! staging as one object, `overlay-<start>-<end>.bin`, and a later view
//! with the same `start` reads that object and only the WAL SSTs from
//! `end` on. The object is a sequence of entries: key length (u32 BE), key,
//! a tag (0: a tombstone, 1: a value), and for a value its length (u32 BE)
//! and bytes.

use futures::TryStreamExt;
use slatedb::bytes::{Buf, BufMut, Bytes, BytesMut};
use slatedb::object_store::path::Path;
use slatedb::object_store::PutPayload;

use crate::store::{self, Location};
use crate::{fail, Res, RL_ERR_DATA};

/// The newest entry per key, in key order: None is a tombstone.
pub(crate) type Overlay = Vec<(Bytes, Option<Bytes>)>;

/// A run's overlay cache: a place in its staging.
pub(crate) struct Cache {
    loc: Location,
    /// Whether views' overlays are written to it, not only read.
    pub keep: bool,
}

impl Cache {
    pub fn new(loc: Location, keep: bool) -> Cache {
        Cache { loc, keep }
    }

    fn name(start: u64, end: u64) -> String {
        format!("overlay-{start:020}-{end:020}.bin")
    }

    /// The cached overlay with this `start` that reaches furthest without
    /// passing `end`: its end and entries. None when there is none.
    pub async fn best(&self, start: u64, end: u64) -> Res<Option<(u64, Overlay)>> {
        let listed: Vec<_> = self
            .loc
            .store
            .list(Some(&self.loc.path))
            .try_collect()
            .await
            .map_err(|e| store::store_error(&self.loc, e))?;
        let found = listed
            .iter()
            .filter_map(|o| {
                let name = o.location.filename()?;
                let rest = name.strip_prefix("overlay-")?.strip_suffix(".bin")?;
                let (s, e) = rest.split_once('-')?;
                Some((
                    s.parse::<u64>().ok()?,
                    e.parse::<u64>().ok()?,
                    o.location.clone(),
                ))
            })
            .filter(|&(s, e, _)| s == start && e > start && e <= end)
            .max_by_key(|&(_, e, _)| e);
        let Some((_, e, path)) = found else {
            return Ok(None);
        };
        let body = self
            .loc
            .store
            .get(&path)
            .await
            .map_err(|err| store::store_error(&self.loc, err))?
            .bytes()
            .await
            .map_err(|err| store::store_error(&self.loc, err))?;
        Ok(Some((e, decode(body, &path)?)))
    }

    /// Writes the overlay of `start..end`.
    pub async fn put(&self, start: u64, end: u64, overlay: &Overlay) -> Res<()> {
        let path: Path = self.loc.path.child(Cache::name(start, end));
        self.loc
            .store
            .put(&path, PutPayload::from(encode(overlay)))
            .await
            .map(|_| ())
            .map_err(|e| store::store_error(&self.loc, e))
    }
}

fn encode(overlay: &Overlay) -> Bytes {
    let size: usize = overlay
        .iter()
        .map(|(k, v)| 9 + k.len() + v.as_ref().map_or(0, |v| v.len()))
        .sum();
    let mut b = BytesMut::with_capacity(size);
    for (k, v) in overlay {
        b.put_u32(k.len() as u32);
        b.put_slice(k);
        match v {
            None => b.put_u8(0),
            Some(v) => {
                b.put_u8(1);
                b.put_u32(v.len() as u32);
                b.put_slice(v);
            }
        }
    }
    b.freeze()
}

fn decode(mut b: Bytes, path: &Path) -> Res<Overlay> {
    let bad = || {
        fail(
            RL_ERR_DATA,
            format!("overlay cache {path}: truncated or corrupt"),
        )
    };
    let mut out = Overlay::new();
    while b.has_remaining() {
        let field = |b: &mut Bytes| -> Res<Bytes> {
            if b.remaining() < 4 {
                return Err(bad());
            }
            let n = b.get_u32() as usize;
            if b.remaining() < n {
                return Err(bad());
            }
            Ok(b.split_to(n))
        };
        let k = field(&mut b)?;
        if !b.has_remaining() {
            return Err(bad());
        }
        let v = match b.get_u8() {
            0 => None,
            1 => Some(field(&mut b)?),
            _ => return Err(bad()),
        };
        if out.last().is_some_and(|(last, _): &(Bytes, _)| *last >= k) {
            return Err(bad());
        }
        out.push((k, v));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let o: Overlay = vec![
            (Bytes::from_static(b"a"), Some(Bytes::from_static(b"1"))),
            (Bytes::from_static(b"b"), None),
            (Bytes::from_static(b"c"), Some(Bytes::new())),
        ];
        let p = Path::from("x/overlay-1-2.bin");
        let enc = encode(&o);
        assert!(decode(enc.clone(), &p).is_ok_and(|d| d == o));
        assert!(decode(enc.slice(..enc.len() - 1), &p).is_err());
        let mut unordered = o.clone();
        unordered.swap(0, 1);
        assert!(decode(encode(&unordered), &p).is_err());
    }
}
