//! OSS AppendObject (https://www.alibabacloud.com/help/en/oss/developer-reference/appendobject).
//!
//! The position check and the append are one command, evaluated against
//! the key's newest row at this point of the log, so of two appends at
//! the same position exactly one commits and the other is refused with
//! the length it must append at:
//!
//! - no object, or a delete marker on top: `position` must be 0; the
//!   append creates an appendable version (a fresh version id in an
//!   Enabled bucket, "null" otherwise) through `objects::put_object`;
//! - an appendable object: `position` must equal its size; the version is
//!   rewritten in place (same version id and sequence: OSS keeps no
//!   previous version of an append) with the bytes added, a later
//!   last-modified, the CRC-64 combined and the next ETag;
//! - anything else (Normal, Multipart, Symlink): `ObjectNotAppendable`.
//!
//! Earlier data is never rewritten: an inline object's bytes are
//! concatenated in its record, a block object's block list grows by the
//! appended blocks (their intents were claimed by the command). The one
//! exception is an inline object that the append grows past the inline
//! threshold: the gateway wrote its bytes as the first block
//! (`NewAppend::rewrites`), and the command checks that the version it
//! read them from is still the current one.

use godwit_common::types::*;
use godwit_common::MetaError;

use super::{add_refs, drop_refs, load_bucket, objects, outbox};
use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

pub(super) fn append_object(
    tx: &mut Overlay,
    a: NewAppend,
    fresh_version_id: String,
    now_ms: i64,
    seq: u64,
) -> Result<Reply, MetaError> {
    objects::check_key(&a.key)?;
    load_bucket(tx, &a.bucket)?;
    let current = match tx.first_with_prefix(CF_OBJECTS, &key_prefix(&a.bucket, &a.key))? {
        Some((k, raw)) => Some((k, decode::<ObjectVersion>(&raw)?)),
        None => None,
    };
    match current {
        Some((k, v)) if !v.is_delete_marker => append_to(tx, a, k, v, now_ms),
        _ => create(tx, a, fresh_version_id, now_ms, seq),
    }
}

/// The append that creates the object.
fn create(
    tx: &mut Overlay,
    a: NewAppend,
    fresh_version_id: String,
    now_ms: i64,
    seq: u64,
) -> Result<Reply, MetaError> {
    if a.position != 0 || a.rewrites.is_some() {
        return Err(MetaError::PositionNotEqualToLength { length: 0 });
    }
    if data_len(&a.data) != a.size {
        return Err(MetaError::InvalidArgument(
            "appended data does not add up".into(),
        ));
    }
    let etag = a.next_etag(None);
    let obj = NewObject {
        bucket: a.bucket,
        key: a.key,
        size: a.size,
        etag,
        headers: a.headers,
        user_meta: a.user_meta,
        checksums: Checksums {
            crc64ecma: a.crc64,
            ..Default::default()
        },
        data: a.data,
        parts: vec![],
        tags: a.tags,
        owner: a.owner,
        acl: a.acl,
        replica_of: None,
        copy_source: None,
        precondition: None,
        oss_type: Some(OssObjectType::Appendable),
        lock: Default::default(),
        sse: None,
    };
    objects::put_object(tx, obj, fresh_version_id, now_ms, seq)
}

/// An append to the key's current version `v`, stored under `row`.
fn append_to(
    tx: &mut Overlay,
    a: NewAppend,
    row: Vec<u8>,
    v: ObjectVersion,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    // An append changes the version in place: a version under Object
    // Lock (retention or legal hold) may not change.
    if !v.is_appendable() || !v.lock.is_empty() {
        return Err(MetaError::ObjectNotAppendable);
    }
    if a.position != v.size {
        return Err(MetaError::PositionNotEqualToLength { length: v.size });
    }
    let data = appended_data(&v, &a)?;
    let size = v
        .size
        .checked_add(a.size)
        .filter(|size| data_len(&data) == *size)
        .ok_or_else(|| MetaError::InvalidArgument("appended data does not add up".into()))?;
    let crc64 = match (v.checksums.crc64ecma, a.crc64) {
        (Some(whole), Some(piece)) => Some(crc_fast::checksum_combine(
            crc_fast::CrcAlgorithm::Crc64Xz,
            whole,
            piece,
            a.size,
        )),
        _ => None,
    };
    let mut next = ObjectVersion {
        size,
        etag: a.next_etag(Some(&v.etag)),
        // Only the CRC-64 can be carried across appends.
        checksums: Checksums {
            crc64ecma: crc64,
            ..Default::default()
        },
        data,
        // Strictly later than the version it replaces, as for any write
        // of the key (the lifecycle worker's guard compares it).
        last_modified_ms: now_ms.max(v.last_modified_ms + 1),
        is_latest: true,
        replication_status: None,
        ..v.clone()
    };
    // The new data's references first, so blocks it keeps never reach
    // zero on the way.
    add_refs(tx, &next.data)?;
    drop_refs(tx, &v.data)?;
    tx.put(CF_OBJECTS, row.clone(), tx.encode(&next));
    if outbox::on_new_version(tx, &next, now_ms)? > 0 {
        next.replication_status = Some(godwit_common::replication::ReplicationStatus::Pending);
        tx.put(CF_OBJECTS, row, tx.encode(&next));
    }
    Ok(Reply::Version(Box::new(next)))
}

/// `v`'s data with the appended bytes after it. A layout the gateway did
/// not expect (the object was replaced by one of the same length but
/// stored otherwise since it looked) is refused as a position conflict:
/// the client reads the length again and retries.
fn appended_data(v: &ObjectVersion, a: &NewAppend) -> Result<ObjectData, MetaError> {
    let conflict = || MetaError::PositionNotEqualToLength { length: v.size };
    if let Some((version_id, mtime)) = &a.rewrites {
        if *version_id != v.version_id || *mtime != v.last_modified_ms {
            return Err(conflict());
        }
        return match (&v.data, &a.data) {
            (ObjectData::Inline(_), ObjectData::Blocks(_)) => Ok(a.data.clone()),
            _ => Err(conflict()),
        };
    }
    if a.size == 0 {
        // Nothing appended: the data stays as it is.
        return Ok(v.data.clone());
    }
    Ok(match (&v.data, &a.data) {
        (ObjectData::Inline(head), ObjectData::Inline(tail)) => {
            let mut bytes = Vec::with_capacity(head.len() + tail.len());
            bytes.extend_from_slice(head);
            bytes.extend_from_slice(tail);
            ObjectData::Inline(bytes)
        }
        (ObjectData::Blocks(head), ObjectData::Blocks(tail)) => {
            ObjectData::Blocks(head.iter().chain(tail).cloned().collect())
        }
        (ObjectData::Inline(head), ObjectData::Blocks(_)) if head.is_empty() => a.data.clone(),
        _ => return Err(conflict()),
    })
}

/// How many bytes `data` holds.
fn data_len(data: &ObjectData) -> u64 {
    match data {
        ObjectData::Inline(b) => b.len() as u64,
        ObjectData::Blocks(blocks) => blocks.iter().map(|b| b.size).sum(),
    }
}
