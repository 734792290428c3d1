//! The lifecycle age index (`lifecycle_age` column family): every version
//! of every object by the time its age counts from, so the lifecycle
//! worker (`crate::lifecycle`) reads only what is old enough to be due
//! instead of walking every version under a rule's prefix.
//!
//! A version's *since* is when its lifecycle clock started: its own
//! last-modified time while it is the newest version of its key (what
//! `Expiration/Days` counts from), else the last-modified time of the
//! version just above it, the moment it became noncurrent (what
//! `NoncurrentVersionExpiration/NoncurrentDays` counts from). Rows:
//!
//! | key | value |
//! |---|---|
//! | `t` bucket `\0` since (i64, sign bit flipped) BE, key `\0` version id | empty: the index, oldest first per bucket |
//! | `i` bucket `\0` key `\0` version id | since, the same 8 bytes: where the `t` row is |
//! | `m` bucket `\0` key | empty: the key's only version is a delete marker (`ExpiredObjectDeleteMarker`'s work list) |
//!
//! The rows are written by `on_commit` and `on_remove`, called by
//! `apply::objects` where a version is added or removed, through the same
//! overlay (so in the same `WriteBatch` as the version). Only neighbours
//! change: a new version on top restarts the clock of the one below it;
//! removing a version hands its `since` to the one below (or, when the
//! newest goes, the one below becomes newest and counts from its own time).
//!
//! The index is derived from `objects` alone, so `ensure` can (re)build it
//! where it is missing: a data dir from a build before it, or a snapshot
//! sent by such a build (which clears the family and brings no marker).

use godwit_common::types::ObjectVersion;
use godwit_common::MetaError;
use rocksdb::{IteratorMode, WriteBatch, DB};

use super::overlay::Overlay;
use super::{cf, decode, key_prefix, object_key, CF_OBJECTS, CF_SM_META};

pub const CF_AGE_INDEX: &str = "lifecycle_age";

/// `sm_meta` row present once the index covers every version.
pub const KEY_AGE_INDEX: &[u8] = b"lifecycle_age_index";

fn time_bytes(ms: i64) -> [u8; 8] {
    ((ms as u64) ^ (1 << 63)).to_be_bytes()
}

fn time_of(b: &[u8]) -> Option<i64> {
    let b: [u8; 8] = b.try_into().ok()?;
    Some((u64::from_be_bytes(b) ^ (1 << 63)) as i64)
}

/// `t` bucket `\0`: the prefix of one bucket's index rows.
pub fn time_prefix(bucket: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(bucket.len() + 2);
    k.push(b't');
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k
}

fn time_key(bucket: &str, since: i64, key: &str, version_id: &str) -> Vec<u8> {
    let mut k = time_prefix(bucket);
    k.extend_from_slice(&time_bytes(since));
    k.extend_from_slice(key.as_bytes());
    k.push(0);
    k.extend_from_slice(version_id.as_bytes());
    k
}

/// The upper bound (exclusive) of a bucket's rows with a since at or
/// before `at`.
pub fn time_bound(bucket: &str, at: i64) -> Vec<u8> {
    let mut k = time_prefix(bucket);
    k.extend_from_slice(&time_bytes(at.saturating_add(1)));
    k
}

/// One index row of a bucket: (since, key, version id).
pub fn parse_time_key(bucket: &str, k: &[u8]) -> Option<(i64, String, String)> {
    let rest = k.get(bucket.len() + 2..)?;
    let since = time_of(rest.get(..8)?)?;
    let rest = &rest[8..];
    // Keys never hold `\0`; version ids neither.
    let split = rest.iter().rposition(|b| *b == 0)?;
    let key = String::from_utf8(rest[..split].to_vec()).ok()?;
    let vid = String::from_utf8(rest[split + 1..].to_vec()).ok()?;
    Some((since, key, vid))
}

fn id_key(bucket: &str, key: &str, version_id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(bucket.len() + key.len() + version_id.len() + 3);
    k.push(b'i');
    k.extend_from_slice(&key_prefix(bucket, key));
    k.extend_from_slice(version_id.as_bytes());
    k
}

/// `m` bucket `\0`: the prefix of one bucket's lone delete markers.
pub fn marker_prefix(bucket: &str) -> Vec<u8> {
    let mut k = vec![b'm'];
    k.extend_from_slice(bucket.as_bytes());
    k.push(0);
    k
}

fn marker_key(bucket: &str, key: &str) -> Vec<u8> {
    let mut k = marker_prefix(bucket);
    k.extend_from_slice(key.as_bytes());
    k
}

/// Sets where `v`'s clock starts, moving its row if it had one.
fn set_since(tx: &mut Overlay, v: &ObjectVersion, since: i64) -> Result<(), MetaError> {
    let id = id_key(&v.bucket, &v.key, &v.version_id);
    if let Some(old) = tx.get(CF_AGE_INDEX, &id)?.as_deref().and_then(time_of) {
        if old == since {
            return Ok(());
        }
        tx.delete(
            CF_AGE_INDEX,
            time_key(&v.bucket, old, &v.key, &v.version_id),
        );
    }
    tx.put(
        CF_AGE_INDEX,
        time_key(&v.bucket, since, &v.key, &v.version_id),
        Vec::new(),
    );
    tx.put(CF_AGE_INDEX, id, time_bytes(since).to_vec());
    Ok(())
}

/// The since recorded for a version, if any.
fn since_of(tx: &Overlay, v: &ObjectVersion) -> Result<Option<i64>, MetaError> {
    Ok(tx
        .get(CF_AGE_INDEX, &id_key(&v.bucket, &v.key, &v.version_id))?
        .as_deref()
        .and_then(time_of))
}

/// Keeps the key's `m` row true: present exactly while its only version is
/// a delete marker.
fn update_marker(tx: &mut Overlay, bucket: &str, key: &str) -> Result<(), MetaError> {
    let top = tx.scan_prefix_limit(CF_OBJECTS, &key_prefix(bucket, key), 2)?;
    let lone = top.len() == 1 && decode::<ObjectVersion>(&top[0].1)?.is_delete_marker;
    let row = marker_key(bucket, key);
    if lone {
        tx.put(CF_AGE_INDEX, row, Vec::new());
    } else if tx.get(CF_AGE_INDEX, &row)?.is_some() {
        tx.delete(CF_AGE_INDEX, row);
    }
    Ok(())
}

/// `v` was just written at `seq` (its row is in the overlay).
pub fn on_commit(tx: &mut Overlay, v: &ObjectVersion, seq: u64) -> Result<(), MetaError> {
    let prefix = key_prefix(&v.bucket, &v.key);
    let own = object_key(&v.bucket, &v.key, seq);
    // `v` and the version below it.
    let here = tx.scan_from(CF_OBJECTS, &prefix, &own, 2)?;
    let below = match here.get(1) {
        Some((_, raw)) => Some(decode::<ObjectVersion>(raw)?),
        None => None,
    };
    let newest = tx
        .first_with_prefix(CF_OBJECTS, &prefix)?
        .is_some_and(|(k, _)| k == own);
    let since = if newest {
        v.last_modified_ms
    } else {
        // Placed under a newer version (a replica arriving late): its
        // clock starts when the version above it was written. Rare, so
        // the key's versions are read to find that one.
        let rows = tx.scan_prefix(CF_OBJECTS, &prefix)?;
        let pos = rows.iter().position(|(k, _)| *k == own).unwrap_or(0);
        match pos.checked_sub(1).and_then(|p| rows.get(p)) {
            Some((_, raw)) => decode::<ObjectVersion>(raw)?.last_modified_ms,
            None => v.last_modified_ms,
        }
    };
    set_since(tx, v, since)?;
    if let Some(below) = below {
        set_since(tx, &below, v.last_modified_ms)?;
    }
    update_marker(tx, &v.bucket, &v.key)
}

/// `v`, stored at `seq`, is about to be removed (its row is still there).
pub fn on_remove(tx: &mut Overlay, v: &ObjectVersion, seq: u64) -> Result<(), MetaError> {
    let prefix = key_prefix(&v.bucket, &v.key);
    let own = object_key(&v.bucket, &v.key, seq);
    let here = tx.scan_from(CF_OBJECTS, &prefix, &own, 2)?;
    if let Some((_, raw)) = here.get(1) {
        let below: ObjectVersion = decode(raw)?;
        let newest = tx
            .first_with_prefix(CF_OBJECTS, &prefix)?
            .is_some_and(|(k, _)| k == own);
        // The one below inherits `v`'s place: newest (its own time), or
        // under what was above `v` (whose time `v`'s since is).
        let since = match (newest, since_of(tx, v)?) {
            (false, Some(s)) => s,
            _ => below.last_modified_ms,
        };
        set_since(tx, &below, since)?;
    }
    let id = id_key(&v.bucket, &v.key, &v.version_id);
    if let Some(old) = tx.get(CF_AGE_INDEX, &id)?.as_deref().and_then(time_of) {
        tx.delete(
            CF_AGE_INDEX,
            time_key(&v.bucket, old, &v.key, &v.version_id),
        );
        tx.delete(CF_AGE_INDEX, id);
    }
    Ok(())
}

/// After a removal: the key's marker row (see `update_marker`).
pub fn after_remove(tx: &mut Overlay, bucket: &str, key: &str) -> Result<(), MetaError> {
    update_marker(tx, bucket, key)
}

/// Builds the index from `objects` unless `sm_meta` says it is there:
/// a data dir or snapshot from a build without it. Returns whether it
/// built. One forward pass; the versions of a key are adjacent, newest
/// first.
pub fn ensure(db: &DB) -> anyhow::Result<bool> {
    if db.get_cf(cf(db, CF_SM_META), KEY_AGE_INDEX)?.is_some() {
        return Ok(false);
    }
    let family = cf(db, CF_AGE_INDEX);
    // Whatever a partial build left.
    let mut clear = WriteBatch::default();
    for item in db.iterator_cf(family, IteratorMode::Start) {
        let (k, _) = item?;
        clear.delete_cf(family, k);
    }
    db.write(clear)?;

    let mut batch = WriteBatch::default();
    let mut above: Option<ObjectVersion> = None;
    let mut rows = 0usize;
    let finish_key = |batch: &mut WriteBatch, last: &ObjectVersion, count: usize| {
        if count == 1 && last.is_delete_marker {
            batch.put_cf(family, marker_key(&last.bucket, &last.key), []);
        }
    };
    let mut count = 0usize;
    for item in db.iterator_cf(cf(db, CF_OBJECTS), IteratorMode::Start) {
        let (_, raw) = item?;
        let v: ObjectVersion = decode(&raw).map_err(|e| anyhow::anyhow!("{e}"))?;
        let since = match &above {
            Some(a) if a.bucket == v.bucket && a.key == v.key => a.last_modified_ms,
            Some(a) => {
                finish_key(&mut batch, a, count);
                count = 0;
                v.last_modified_ms
            }
            None => v.last_modified_ms,
        };
        count += 1;
        batch.put_cf(
            family,
            time_key(&v.bucket, since, &v.key, &v.version_id),
            [],
        );
        batch.put_cf(
            family,
            id_key(&v.bucket, &v.key, &v.version_id),
            time_bytes(since),
        );
        rows += 1;
        if rows.is_multiple_of(10_000) {
            db.write(std::mem::take(&mut batch))?;
        }
        above = Some(v);
    }
    if let Some(a) = &above {
        finish_key(&mut batch, a, count);
    }
    batch.put_cf(cf(db, CF_SM_META), KEY_AGE_INDEX, b"1");
    db.write(batch)?;
    tracing::info!(versions = rows, "lifecycle age index built");
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_rows_sort_by_time_and_parse_back() {
        let a = time_key("b", -5, "k", "v1");
        let b = time_key("b", 10, "a", "v2");
        let c = time_key("b", 10, "b\u{1}x", "null");
        assert!(a < b && b < c);
        assert!(c < time_bound("b", 10) || c[..] < time_bound("b", 10)[..]);
        assert!(time_key("b", 11, "", "") >= time_bound("b", 10));
        assert_eq!(
            parse_time_key("b", &c),
            Some((10, "b\u{1}x".into(), "null".into()))
        );
        assert_eq!(parse_time_key("b", &a), Some((-5, "k".into(), "v1".into())));
    }
}
