//! Multipart uploads: create, parts, complete (validate + commit in one
//! entry), abort.
//!
//! Complete follows S3's checks
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html):
//! part numbers strictly ascending (`InvalidPartOrder`), every listed part
//! uploaded with that ETag (`InvalidPart`), every part but the last at
//! least the minimum part size (`EntityTooSmall`).

use md5::{Digest, Md5};

use godwit_common::replication::ReplicationStatus;
use godwit_common::types::*;
use godwit_common::MetaError;

use super::dedup::{parts_fingerprint, CompletedUpload, COMPLETED_UPLOADS};
use super::objects::{
    check_key, check_precondition, commit_version, restamp_version, version_id_for,
};
use super::{add_refs, drop_refs, load_bucket};
use super::{outbox, streaming};
use crate::command::Reply;
use crate::store::overlay::Overlay;
use crate::store::*;

/// S3's part number range.
const MAX_PART_NUMBER: u32 = 10_000;

fn load_upload(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<UploadInfo, MetaError> {
    load_bucket(tx, bucket)?;
    match tx.get(CF_UPLOADS, &upload_key(bucket, key, upload_id))? {
        Some(b) => decode(&b),
        None => Err(MetaError::NoSuchUpload),
    }
}

pub(super) fn create_upload(
    tx: &mut Overlay,
    u: NewUpload,
    upload_id: String,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    check_key(&u.key)?;
    let bucket = load_bucket(tx, &u.bucket)?;
    super::objects::lock_for_new_version(&bucket, u.lock, now_ms)?;
    let k = upload_key(&u.bucket, &u.key, &upload_id);
    if tx.get(CF_UPLOADS, &k)?.is_some() {
        return Err(MetaError::Internal("upload id collision".into()));
    }
    let info = UploadInfo {
        bucket: u.bucket,
        key: u.key,
        upload_id,
        initiated_ms: now_ms,
        headers: u.headers,
        user_meta: u.user_meta,
        checksum_algorithm: u.checksum_algorithm,
        checksum_type: u.checksum_type,
        tags: u.tags,
        owner: u.owner,
        acl: u.acl,
        replica_of: u.replica_of,
        lock: u.lock,
        sse: u.sse,
    };
    tx.put(CF_UPLOADS, k, tx.encode(&info));
    Ok(Reply::Upload(Box::new(info)))
}

pub(super) fn put_part(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    upload_id: &str,
    part: PartRecord,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    let upload = load_upload(tx, bucket, key, upload_id)?;
    if part.number == 0 || part.number > MAX_PART_NUMBER {
        return Err(MetaError::InvalidArgument(format!(
            "part number must be between 1 and {MAX_PART_NUMBER}"
        )));
    }
    let k = part_key(upload_id, part.number);
    // A re-uploaded part number replaces the earlier part.
    if let Some(old) = tx.get(CF_PARTS, &k)? {
        let old: PartRecord = decode(&old)?;
        drop_refs(tx, &old.data)?;
    }
    add_refs(tx, &part.data)?;
    tx.put(CF_PARTS, k, tx.encode(&part));
    // A replica upload's parts came from another region: never sent back.
    if upload.replica_of.is_none() {
        streaming::on_part(tx, &upload, &part, now_ms)?;
    }
    Ok(Reply::Done)
}

/// Removes the upload and all its parts; their blocks lose a reference.
fn remove_upload(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<Vec<PartRecord>, MetaError> {
    let mut parts = Vec::new();
    for (k, v) in tx.scan_prefix(CF_PARTS, &parts_prefix(upload_id))? {
        let part: PartRecord = decode(&v)?;
        drop_refs(tx, &part.data)?;
        tx.delete(CF_PARTS, k);
        parts.push(part);
    }
    tx.delete(CF_UPLOADS, upload_key(bucket, key, upload_id));
    Ok(parts)
}

pub(super) fn abort_upload(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    upload_id: &str,
    now_ms: i64,
) -> Result<Reply, MetaError> {
    load_upload(tx, bucket, key, upload_id)?;
    if let Some(rec) = streaming::load(tx, bucket, key, upload_id)? {
        streaming::on_abort(tx, rec, now_ms)?;
    }
    remove_upload(tx, bucket, key, upload_id)?;
    Ok(Reply::Done)
}

fn normalize_etag(e: &str) -> String {
    e.trim().trim_matches('"').to_ascii_lowercase()
}

pub(super) fn complete_upload(
    tx: &mut Overlay,
    c: CompleteUpload,
    fresh_version_id: String,
    now_ms: i64,
    min_part_size: u64,
    seq: u64,
) -> Result<Reply, MetaError> {
    let upload = match load_upload(tx, &c.bucket, &c.key, &c.upload_id) {
        Err(MetaError::NoSuchUpload) => return repeated_complete(tx, &c),
        r => r?,
    };
    let bucket = load_bucket(tx, &c.bucket)?;
    if c.parts.is_empty() {
        return Err(MetaError::InvalidPart("the upload lists no parts".into()));
    }

    // Validate the list against the stored parts, in the client's order.
    let mut chosen: Vec<PartRecord> = Vec::with_capacity(c.parts.len());
    for (i, (number, etag)) in c.parts.iter().enumerate() {
        if i > 0 && *number <= c.parts[i - 1].0 {
            return Err(MetaError::InvalidPartOrder);
        }
        let stored = match tx.get(CF_PARTS, &part_key(&c.upload_id, *number))? {
            Some(b) => decode::<PartRecord>(&b)?,
            None => {
                return Err(MetaError::InvalidPart(format!(
                    "part {number} was not uploaded"
                )));
            }
        };
        if normalize_etag(etag) != normalize_etag(&stored.etag) {
            return Err(MetaError::InvalidPart(format!(
                "part {number}: ETag {etag} does not match the uploaded part"
            )));
        }
        chosen.push(stored);
    }
    let last = chosen.len() - 1;
    if let Some(small) = chosen[..last].iter().find(|p| p.size < min_part_size) {
        return Err(MetaError::EntityTooSmall {
            part: small.number,
            size: small.size,
        });
    }
    // Against the key as it is now, after the checks a Complete without
    // the precondition would fail (RFC 7232 section 5: a precondition
    // matters only to a request that would otherwise succeed). A repeat of
    // a completed upload never gets here: it answers its first result.
    if let Some(p) = &c.precondition {
        check_precondition(tx, &c.bucket, &c.key, p)?;
    }

    // ETag of a multipart object: md5 of the parts' binary md5s, "-N".
    let mut md5 = Md5::new();
    for p in &chosen {
        let raw = hex::decode(normalize_etag(&p.etag)).map_err(|_| {
            MetaError::InvalidPart(format!("part {} has a malformed ETag", p.number))
        })?;
        md5.update(&raw);
    }
    let etag = format!("{}-{}", hex::encode(md5.finalize()), chosen.len());
    // An encrypted upload's parts are each sealed under their own base
    // nonce, which the object keeps to open them.
    if upload.sse.is_some() {
        if let Some(p) = chosen
            .iter()
            .find(|p| p.sse_nonce.len() != godwit_common::sse::NONCE_LEN)
        {
            return Err(MetaError::InvalidPart(format!(
                "part {} is not encrypted with the upload's key",
                p.number
            )));
        }
    }
    let data = concat_data(&chosen)?;
    let lock = super::objects::lock_for_new_version(&bucket, upload.lock, now_ms)?;

    let mut version = ObjectVersion {
        version_id: version_id_for(&bucket, fresh_version_id),
        bucket: c.bucket.clone(),
        key: c.key.clone(),
        is_delete_marker: false,
        is_latest: true,
        last_modified_ms: now_ms,
        size: chosen.iter().map(|p| p.size).sum(),
        etag,
        headers: upload.headers,
        user_meta: upload.user_meta,
        checksums: c.checksums,
        data,
        parts: chosen
            .iter()
            .map(|p| PartSummary {
                number: p.number,
                size: p.size,
                etag: normalize_etag(&p.etag),
                checksums: p.checksums.clone(),
                sse_nonce: p.sse_nonce.clone(),
            })
            .collect(),
        tags: upload.tags,
        owner: upload.owner,
        acl: upload.acl,
        replication_status: None,
        replica_of: c.replica_of.clone().or(upload.replica_of),
        oss_type: None,
        lock,
        sse: upload.sse,
    };
    if version.replica_of.is_some() {
        version.replication_status = Some(ReplicationStatus::Replica);
    }
    // The object takes its references before the parts drop theirs, so a
    // block shared by both never touches zero in between (it would not
    // matter inside one batch, but the order reads right).
    // Commit first: committing a "null" version clears the replaced one's
    // replication records, which must not take the new tasks with them.
    commit_version(tx, &version, seq)?;
    let streamed = streaming::load(tx, &c.bucket, &c.key, &c.upload_id)?;
    let retain = streamed
        .as_ref()
        .is_some_and(|r| !r.destinations.is_empty());
    let tasks = match streamed {
        Some(rec) => {
            let listed = chosen
                .iter()
                .map(|p| (p.number, normalize_etag(&p.etag)))
                .collect();
            streaming::on_complete(tx, rec, &version, listed, now_ms)?
        }
        None if version.replica_of.is_some() => 0,
        None => outbox::on_new_version(tx, &version, now_ms)?,
    };
    if tasks > 0 {
        version.replication_status = Some(ReplicationStatus::Pending);
        restamp_version(tx, &version, seq);
    }
    let record = CompletedUpload {
        parts: parts_fingerprint(&c.parts),
        seq,
        version_id: version.version_id.clone(),
        etag: version.etag.clone(),
        size: version.size,
    };
    let record = tx.encode(&record);
    COMPLETED_UPLOADS.insert(
        tx,
        &upload_key(&c.bucket, &c.key, &c.upload_id),
        now_ms,
        &record,
    )?;
    if retain {
        // Destinations still read the listed parts: they stay, with their
        // references, until the final tasks are done (streaming.rs). The
        // unlisted ones go now.
        let listed: Vec<u32> = chosen.iter().map(|p| p.number).collect();
        for (k, v) in tx.scan_prefix(CF_PARTS, &parts_prefix(&c.upload_id))? {
            let part: PartRecord = decode(&v)?;
            if !listed.contains(&part.number) {
                drop_refs(tx, &part.data)?;
                tx.delete(CF_PARTS, k);
            }
        }
        tx.delete(CF_UPLOADS, upload_key(&c.bucket, &c.key, &c.upload_id));
    } else {
        remove_upload(tx, &c.bucket, &c.key, &c.upload_id)?;
    }
    Ok(Reply::Version(Box::new(version)))
}

/// A Complete of an upload that is no longer live: S3 answers a repeated
/// Complete of a completed upload with 200 and the same result (a client
/// SDK retries the whole request when it lost the first answer). The
/// version the upload made is answered when the upload completed within
/// `COMPLETED_UPLOAD_WINDOW_MS`, with the same part list, and the version
/// is still there; anything else is `NoSuchUpload`, as before.
fn repeated_complete(tx: &Overlay, c: &CompleteUpload) -> Result<Reply, MetaError> {
    let Some(raw) = COMPLETED_UPLOADS.get(tx, &upload_key(&c.bucket, &c.key, &c.upload_id))? else {
        return Err(MetaError::NoSuchUpload);
    };
    let rec: CompletedUpload = decode(&raw)?;
    if rec.parts != parts_fingerprint(&c.parts) {
        return Err(MetaError::NoSuchUpload);
    }
    let Some(raw) = tx.get(CF_OBJECTS, &object_key(&c.bucket, &c.key, rec.seq))? else {
        return Err(MetaError::NoSuchUpload);
    };
    let mut version: ObjectVersion = decode(&raw)?;
    if version.version_id != rec.version_id || version.etag != rec.etag {
        return Err(MetaError::NoSuchUpload);
    }
    let newest = tx
        .first_with_prefix(CF_OBJECTS, &key_prefix(&c.bucket, &c.key))?
        .map(|(k, _)| seq_of_object_key(&k));
    version.is_latest = newest == Some(rec.seq);
    Ok(Reply::Version(Box::new(version)))
}

/// The object's data: the parts' blocks in order. The gateway stores every
/// part as blocks; an all-inline upload (tiny parts with a tiny minimum
/// part size, as in tests) is concatenated inline. A mix cannot be
/// represented by `ObjectData` and is refused.
fn concat_data(parts: &[PartRecord]) -> Result<ObjectData, MetaError> {
    let has_inline = parts
        .iter()
        .any(|p| matches!(&p.data, ObjectData::Inline(b) if !b.is_empty()));
    let has_blocks = parts
        .iter()
        .any(|p| matches!(&p.data, ObjectData::Blocks(b) if !b.is_empty()));
    match (has_inline, has_blocks) {
        (true, true) => Err(MetaError::Internal(
            "multipart upload mixes inline and block parts; the gateway must store parts as blocks"
                .into(),
        )),
        (true, false) => {
            let mut bytes = Vec::new();
            for p in parts {
                if let ObjectData::Inline(b) = &p.data {
                    bytes.extend_from_slice(b);
                }
            }
            Ok(ObjectData::Inline(bytes))
        }
        (false, _) => {
            let mut blocks = Vec::new();
            for p in parts {
                if let ObjectData::Blocks(b) = &p.data {
                    blocks.extend(b.iter().cloned());
                }
            }
            Ok(ObjectData::Blocks(blocks))
        }
    }
}
