//! Versions and delete markers: put, delete, and the "null" version rules.
//!
//! S3 rules (https://docs.aws.amazon.com/AmazonS3/latest/userguide/Versioning.html):
//! - Unversioned and Suspended buckets write version id "null", replacing
//!   whatever "null" version the key had.
//! - Enabled buckets add a version with a fresh id; nothing is replaced.
//! - DELETE without a version id adds a delete marker (Enabled), replaces
//!   the "null" version with a "null" delete marker (Suspended), or removes
//!   the "null" version (Unversioned). With a version id it removes exactly
//!   that version, and succeeds when there is none.

use godwit_common::object_lock::{LockChange, VersionLock};
use godwit_common::replication::{MetadataChange, ReplicaOrigin, ReplicationStatus};
use godwit_common::types::*;
use godwit_common::MetaError;

use super::outbox;
use super::{add_refs, drop_refs, load_bucket};
use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

/// Keys are stored between `\0` separators, so they may not hold one.
pub(crate) fn check_key(key: &str) -> Result<(), MetaError> {
    if key.is_empty() {
        return Err(MetaError::InvalidArgument(
            "object key must not be empty".into(),
        ));
    }
    if key.as_bytes().contains(&0) {
        return Err(MetaError::InvalidArgument(
            "object key must not contain NUL".into(),
        ));
    }
    Ok(())
}

/// The version id a write gets in this bucket: the proposer's fresh id
/// when versioning is Enabled, "null" otherwise.
pub(crate) fn version_id_for(bucket: &BucketInfo, fresh: String) -> String {
    match bucket.versioning {
        VersioningState::Enabled => fresh,
        VersioningState::Unversioned | VersioningState::Suspended => NULL_VERSION_ID.to_string(),
    }
}

/// The lock a new version written at `now_ms` gets: the one its write
/// asked for, else the bucket's default retention. A write asking for a
/// lock in a bucket without Object Lock is refused, as S3 refuses it.
pub(crate) fn lock_for_new_version(
    bucket: &BucketInfo,
    asked: VersionLock,
    now_ms: i64,
) -> Result<VersionLock, MetaError> {
    let Some(config) = &bucket.config.object_lock else {
        if !asked.is_empty() {
            return Err(MetaError::InvalidRequest(
                "Bucket is missing Object Lock Configuration".into(),
            ));
        }
        return Ok(asked);
    };
    let mut lock = asked;
    if lock.retention.is_none() {
        lock.retention = config.default_retention.map(|d| d.retention_from(now_ms));
    }
    Ok(lock)
}

pub(super) fn put_object(
    tx: &mut Overlay,
    obj: NewObject,
    fresh_version_id: String,
    now_ms: i64,
    seq: u64,
) -> Result<Reply, MetaError> {
    check_key(&obj.key)?;
    let bucket = load_bucket(tx, &obj.bucket)?;
    if let Some(p) = &obj.precondition {
        check_precondition(tx, &obj.bucket, &obj.key, p)?;
    }
    let lock = lock_for_new_version(&bucket, obj.lock, now_ms)?;
    let mut version = ObjectVersion {
        version_id: version_id_for(&bucket, fresh_version_id),
        bucket: obj.bucket,
        key: obj.key,
        is_delete_marker: false,
        is_latest: true,
        last_modified_ms: now_ms,
        size: obj.size,
        etag: obj.etag,
        headers: obj.headers,
        user_meta: obj.user_meta,
        checksums: obj.checksums,
        data: obj.data,
        parts: obj.parts,
        tags: obj.tags,
        owner: obj.owner,
        acl: obj.acl,
        replication_status: None,
        replica_of: obj.replica_of,
        oss_type: obj.oss_type,
        lock,
        sse: obj.sse,
    };
    // The key's latest version this one replaces as the latest (None for
    // a replica, which makes no task).
    let mut replaced: Option<ObjectVersion> = None;
    // A replica is never replicated again: two-way rules do not loop.
    if let Some(origin) = &version.replica_of {
        version.replication_status = Some(ReplicationStatus::Replica);
        // A replica keeps its source's time, as S3 replicas keep their
        // creation time: Last-Modified, listings, conditionals and
        // lifecycle ages read the same in every region (and a sync tool
        // comparing times sees no difference).
        version.last_modified_ms = origin.original_mtime_ms;
    } else {
        // Versions of one key get strictly increasing last-modified times,
        // even when several land in one Raft entry (which shares one
        // clock reading): other regions order replicas by this time, so
        // equal times would let arrival order pick the latest.
        if let Some((_, newest)) = tx
            .scan_prefix_limit(CF_OBJECTS, &key_prefix(&version.bucket, &version.key), 1)?
            .first()
        {
            let newest: ObjectVersion = decode(newest)?;
            version.last_modified_ms = version.last_modified_ms.max(origin_mtime(&newest) + 1);
            replaced = Some(newest);
        }
    }
    // Last writer wins across regions: a replica older than what the key
    // already holds goes below it, so every region ends with the same
    // latest version whatever order the replicas arrive in.
    let seq = match &version.replica_of {
        Some(origin) => match replica_position(tx, &version, origin, &bucket.region, seq)? {
            Some(seq) => seq,
            // An older replica of a "null" version: the newer one stays.
            None => return Ok(Reply::Version(Box::new(version))),
        },
        None => seq,
    };
    // Commit first: committing a "null" version clears the replaced one's
    // replication records, which must not take the new tasks with them.
    commit_version(tx, &version, seq)?;
    if version.replica_of.is_none() && replicate_new_version(tx, &version, replaced, now_ms)? > 0 {
        version.replication_status = Some(ReplicationStatus::Pending);
        restamp_version(tx, &version, seq);
    }
    Ok(Reply::Version(Box::new(version)))
}

/// The tasks a new local version owes: a `MetadataChanged` task when it
/// holds the very bytes of the version it replaced as the latest (a copy
/// in place with new metadata: the destination has them already), else a
/// `NewVersion` task. How many were created.
fn replicate_new_version(
    tx: &mut Overlay,
    version: &ObjectVersion,
    replaced: Option<ObjectVersion>,
    now_ms: i64,
) -> Result<usize, MetaError> {
    match replaced {
        Some(r) if outbox::same_data(&r, version) => {
            outbox::on_metadata_changed(tx, version, MetadataChange::SameDataNewVersion, now_ms)
        }
        _ => outbox::on_new_version(tx, version, now_ms),
    }
}

/// A conditional write's precondition against the key's current version
/// as of this point of the log (the newest row of the key, which a write
/// earlier in the same entry already made): this is what makes
/// `If-None-Match: *` and `If-Match` atomic. A delete marker on top counts
/// as no object. `PreconditionFailed`, or `NoSuchKey` for If-Match on a
/// key without an object.
pub(crate) fn check_precondition(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    p: &WritePrecondition,
) -> Result<(), MetaError> {
    let current = match tx.first_with_prefix(CF_OBJECTS, &key_prefix(bucket, key))? {
        Some((_, raw)) => Some(decode::<ObjectVersion>(&raw)?),
        None => None,
    };
    let etag = current
        .as_ref()
        .filter(|v| !v.is_delete_marker)
        .map(|v| v.etag.as_str());
    p.evaluate(etag)
}

/// The time a version was written at its origin: what last-writer-wins
/// compares across regions.
fn origin_mtime(v: &ObjectVersion) -> i64 {
    v.replica_of
        .as_ref()
        .map_or(v.last_modified_ms, |o| o.original_mtime_ms)
}

/// Last-writer-wins order across regions: the original write time, then
/// the origin region's name for writes in the same millisecond (every
/// region compares the same pair, so all agree). Local versions come from
/// the bucket's own region.
fn origin_order<'a>(v: &'a ObjectVersion, local_region: &'a str) -> (i64, &'a str) {
    match &v.replica_of {
        Some(o) => (o.original_mtime_ms, o.region.as_str()),
        None => (v.last_modified_ms, local_region),
    }
}

/// Where a replica written at its origin goes among the key's versions:
/// `Some(seq)` for the sequence to commit it at (`seq` itself when it is the
/// newest), `None` when it is an older "null" version that must not replace
/// the newer one. Versions sort by sequence (newest first), so an older
/// replica takes the middle of the gap between the oldest version newer
/// than it and the next one down (`command::version_seq` leaves 4096 free
/// sequences below every version). A gap used up by many late replicas
/// puts the next one on top, as arrival order would.
fn replica_position(
    tx: &Overlay,
    v: &ObjectVersion,
    origin: &ReplicaOrigin,
    local_region: &str,
    seq: u64,
) -> Result<Option<u64>, MetaError> {
    let rows = tx.scan_prefix(CF_OBJECTS, &key_prefix(&v.bucket, &v.key))?;
    let mut newer: Option<u64> = None;
    let mut below = 0u64;
    let ours = (origin.original_mtime_ms, origin.region.as_str());
    for (k, val) in &rows {
        let existing: ObjectVersion = decode(val)?;
        if origin_order(&existing, local_region) > ours {
            if v.version_id == NULL_VERSION_ID && existing.version_id == NULL_VERSION_ID {
                return Ok(None);
            }
            newer = Some(seq_of_object_key(k));
        } else {
            below = seq_of_object_key(k);
            break;
        }
    }
    Ok(Some(match newer {
        Some(newer) if newer - below >= 2 => below + (newer - below) / 2,
        _ => seq,
    }))
}

/// A DeleteObject as applied.
pub(super) struct Delete<'a> {
    pub bucket: &'a str,
    pub key: &'a str,
    pub version_id: Option<String>,
    pub fresh_version_id: String,
    pub now_ms: i64,
    /// Set when a replication worker deletes (see `put_object`).
    pub replica_of: Option<ReplicaOrigin>,
    /// Set when the lifecycle worker deletes: nothing is replicated.
    pub lifecycle: bool,
    /// Delete only while the newest version is this one (id, mtime).
    pub expect_current: Option<(String, i64)>,
    /// `x-amz-bypass-governance-retention: true` from a caller holding
    /// `s3:BypassGovernanceRetention`: GOVERNANCE retention does not stop
    /// the removal.
    pub bypass_governance: bool,
}

pub(super) fn delete_object(tx: &mut Overlay, d: Delete, seq: u64) -> Result<Reply, MetaError> {
    let Delete {
        bucket,
        key,
        version_id,
        fresh_version_id,
        now_ms,
        replica_of,
        lifecycle,
        expect_current,
        bypass_governance,
    } = d;
    // Lifecycle deletes stay local, as a worker's do.
    let replicate = replica_of.is_none() && !lifecycle;
    check_key(key)?;
    let info = load_bucket(tx, bucket)?;
    if let Some((vid, mtime)) = &expect_current {
        let newest = match tx.first_with_prefix(CF_OBJECTS, &key_prefix(bucket, key))? {
            Some((_, raw)) => Some(decode::<ObjectVersion>(&raw)?),
            None => None,
        };
        if !newest.is_some_and(|v| &v.version_id == vid && v.last_modified_ms == *mtime) {
            // Overwritten or gone since the worker looked: nothing to do.
            return Err(MetaError::PreconditionFailed);
        }
    }
    let outcome = match (version_id, info.versioning) {
        // Permanent removal of one version; absent versions delete fine.
        (Some(vid), _) => {
            // Object Lock: a retained or held version stays, judged by
            // the proposer's clock carried by this command.
            if let Some(v) = load_version(tx, bucket, key, &vid)? {
                v.lock.check_delete(now_ms, bypass_governance)?;
            }
            let removed = remove_version(tx, bucket, key, &vid)?;
            if let Some(v) = &removed {
                // Removing a replica (or removing as a worker) stays local.
                if v.replica_of.is_none() && replicate {
                    outbox::on_version_delete(tx, v, now_ms)?;
                }
            }
            DeleteOutcome {
                version_id: Some(vid),
                delete_marker: removed.is_some_and(|v| v.is_delete_marker),
            }
        }
        // Never versioned: the only version is "null" and it just goes.
        (None, VersioningState::Unversioned) => {
            let current = match tx.first_with_prefix(CF_OBJECTS, &key_prefix(bucket, key))? {
                Some((_, raw)) => Some(decode::<ObjectVersion>(&raw)?),
                None => None,
            };
            // Last writer wins for a replicated delete too: a key written
            // after the delete at its origin (and replicated here first)
            // stays.
            let newer_kept = match (&replica_of, &current) {
                (Some(origin), Some(v)) => {
                    origin_order(v, &info.region)
                        > (origin.original_mtime_ms, origin.region.as_str())
                }
                _ => false,
            };
            if !newer_kept {
                if let Some(v) = load_version(tx, bucket, key, NULL_VERSION_ID)? {
                    v.lock.check_delete(now_ms, bypass_governance)?;
                }
                let removed = remove_version(tx, bucket, key, NULL_VERSION_ID)?;
                if let Some(v) = &removed {
                    // Removing a replica (or removing as a worker) stays local.
                    if v.replica_of.is_none() && replicate {
                        outbox::on_key_deleted(tx, v, now_ms)?;
                    }
                }
            }
            DeleteOutcome {
                version_id: None,
                delete_marker: false,
            }
        }
        // Enabled: a marker with a fresh id; Suspended: a "null" marker that
        // replaces the "null" version (commit_version does the replacing).
        (None, VersioningState::Enabled | VersioningState::Suspended) => {
            // The version the marker hides decides tag-filtered routing.
            let hidden = match tx.first_with_prefix(CF_OBJECTS, &key_prefix(bucket, key))? {
                Some((_, raw)) => Some(decode::<ObjectVersion>(&raw)?),
                None => None,
            };
            let mut marker = ObjectVersion {
                bucket: bucket.to_string(),
                key: key.to_string(),
                version_id: version_id_for(&info, fresh_version_id),
                is_delete_marker: true,
                is_latest: true,
                last_modified_ms: now_ms,
                size: 0,
                etag: String::new(),
                headers: ContentHeaders::default(),
                user_meta: Default::default(),
                checksums: Checksums::default(),
                data: ObjectData::Inline(Vec::new()),
                parts: Vec::new(),
                tags: Default::default(),
                owner: String::new(),
                acl: None,
                replication_status: None,
                replica_of,
                oss_type: None,
                lock: Default::default(),
                sse: None,
            };
            if marker.replica_of.is_some() {
                marker.replication_status = Some(ReplicationStatus::Replica);
            }
            commit_version(tx, &marker, seq)?;
            if replicate {
                let hidden_tags = hidden
                    .as_ref()
                    .filter(|h| !h.is_delete_marker)
                    .map(|h| &h.tags);
                if outbox::on_delete_marker(tx, &marker, hidden_tags, now_ms)? > 0 {
                    marker.replication_status = Some(ReplicationStatus::Pending);
                    restamp_version(tx, &marker, seq);
                }
            }
            DeleteOutcome {
                version_id: Some(marker.version_id),
                delete_marker: true,
            }
        }
    };
    Ok(Reply::Deleted(outcome))
}

/// PutObjectRetention / PutObjectLegalHold: changes the lock of one
/// version (the latest when `version_id` is None) at the proposer's
/// `now_ms`, under `VersionLock::change`'s rules; answers the version as
/// changed.
pub(super) fn set_object_lock(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: Option<String>,
    change: LockChange,
    bypass_governance: bool,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    let info = load_bucket(tx, bucket)?;
    if info.config.object_lock.is_none() {
        return Err(MetaError::InvalidRequest(
            "Bucket is missing Object Lock Configuration".into(),
        ));
    }
    let (raw_key, mut v) =
        super::replication::locate_version(tx, bucket, key, version_id, "Object Lock settings")?;
    v.lock.change(change, now_ms, bypass_governance)?;
    // AWS replicates retention and legal-hold changes; a replica's were
    // set by its source's worker and never travel back.
    if v.replica_of.is_none()
        && outbox::on_metadata_changed(tx, &v, MetadataChange::ObjectLock, now_ms)? > 0
    {
        v.replication_status = outbox::counted_status(tx, bucket, key, &v.version_id)?;
    }
    tx.put(CF_OBJECTS, raw_key, tx.encode(&v));
    Ok(Reply::Version(Box::new(v)))
}

/// Makes `v` the newest version of its key. A "null" version first
/// replaces the existing "null" version, whose blocks lose a reference.
pub(crate) fn commit_version(
    tx: &mut Overlay,
    v: &ObjectVersion,
    seq: u64,
) -> Result<(), MetaError> {
    if v.version_id == NULL_VERSION_ID {
        remove_version(tx, &v.bucket, &v.key, NULL_VERSION_ID)?;
    }
    add_refs(tx, &v.data)?;
    tx.put(CF_OBJECTS, object_key(&v.bucket, &v.key, seq), tx.encode(v));
    tx.put(
        CF_VERSION_INDEX,
        version_index_key(&v.bucket, &v.key, &v.version_id),
        seq.to_be_bytes().to_vec(),
    );
    age_index::on_commit(tx, v, seq)
}

/// Rewrites the record of a version just committed at `seq` (its
/// replication status was decided after the commit).
pub(crate) fn restamp_version(tx: &mut Overlay, v: &ObjectVersion, seq: u64) {
    tx.put(CF_OBJECTS, object_key(&v.bucket, &v.key, seq), tx.encode(v));
}

/// One version of a key, by id, seen through the pending writes.
pub(crate) fn load_version(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    version_id: &str,
) -> Result<Option<ObjectVersion>, MetaError> {
    let Some(seq) = tx.get(
        CF_VERSION_INDEX,
        &version_index_key(bucket, key, version_id),
    )?
    else {
        return Ok(None);
    };
    let seq = u64::from_be_bytes(
        seq.as_slice()
            .try_into()
            .map_err(|_| MetaError::Internal("corrupt version index".into()))?,
    );
    tx.get(CF_OBJECTS, &object_key(bucket, key, seq))?
        .map(|b| decode(&b))
        .transpose()
}

/// Removes one version (and its index row); returns it if it existed.
fn remove_version(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: &str,
) -> Result<Option<ObjectVersion>, MetaError> {
    let index_key = version_index_key(bucket, key, version_id);
    let Some(seq) = tx.get(CF_VERSION_INDEX, &index_key)? else {
        return Ok(None);
    };
    let seq = u64::from_be_bytes(
        seq.as_slice()
            .try_into()
            .map_err(|_| MetaError::Internal("corrupt version index".into()))?,
    );
    let object_key = object_key(bucket, key, seq);
    let stored = tx.get(CF_OBJECTS, &object_key)?.ok_or_else(|| {
        MetaError::Internal(format!(
            "version index names a missing version of {bucket}/{key}"
        ))
    })?;
    let v: ObjectVersion = decode(&stored)?;
    drop_refs(tx, &v.data)?;
    age_index::on_remove(tx, &v, seq)?;
    tx.delete(CF_OBJECTS, object_key);
    tx.delete(CF_VERSION_INDEX, index_key);
    age_index::after_remove(tx, bucket, key)?;
    outbox::forget_version(tx, bucket, key, version_id);
    Ok(Some(v))
}
