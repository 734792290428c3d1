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

use godwit_common::types::*;
use godwit_common::MetaError;

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

pub(super) fn put_object(
    tx: &mut Overlay,
    obj: NewObject,
    fresh_version_id: String,
    now_ms: i64,
    seq: u64,
) -> Result<Reply, MetaError> {
    check_key(&obj.key)?;
    let bucket = load_bucket(tx, &obj.bucket)?;
    let version = ObjectVersion {
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
        replication_status: None,
        replica_of: None,
    };
    commit_version(tx, &version, seq)?;
    Ok(Reply::Version(Box::new(version)))
}

pub(super) fn delete_object(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    version_id: Option<String>,
    fresh_version_id: String,
    now_ms: i64,
    seq: u64,
) -> Result<Reply, MetaError> {
    check_key(key)?;
    let info = load_bucket(tx, bucket)?;
    let outcome = match (version_id, info.versioning) {
        // Permanent removal of one version; absent versions delete fine.
        (Some(vid), _) => {
            let removed = remove_version(tx, bucket, key, &vid)?;
            DeleteOutcome {
                version_id: Some(vid),
                delete_marker: removed.is_some_and(|v| v.is_delete_marker),
            }
        }
        // Never versioned: the only version is "null" and it just goes.
        (None, VersioningState::Unversioned) => {
            remove_version(tx, bucket, key, NULL_VERSION_ID)?;
            DeleteOutcome {
                version_id: None,
                delete_marker: false,
            }
        }
        // Enabled: a marker with a fresh id; Suspended: a "null" marker that
        // replaces the "null" version (commit_version does the replacing).
        (None, VersioningState::Enabled | VersioningState::Suspended) => {
            let marker = ObjectVersion {
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
                replication_status: None,
                replica_of: None,
            };
            commit_version(tx, &marker, seq)?;
            DeleteOutcome {
                version_id: Some(marker.version_id),
                delete_marker: true,
            }
        }
    };
    Ok(Reply::Deleted(outcome))
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
    tx.put(CF_OBJECTS, object_key(&v.bucket, &v.key, seq), encode(v));
    tx.put(
        CF_VERSION_INDEX,
        version_index_key(&v.bucket, &v.key, &v.version_id),
        seq.to_be_bytes().to_vec(),
    );
    Ok(())
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
    tx.delete(CF_OBJECTS, object_key);
    tx.delete(CF_VERSION_INDEX, index_key);
    Ok(Some(v))
}
