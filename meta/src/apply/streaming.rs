//! Multipart part streaming (docs/architecture.md, Replication): each committed part
//! is a `PartCommitted` task of its own, so a destination has the parts
//! long before the source completes; the source's complete (or abort) then
//! becomes one `MultipartCompleted` (or `MultipartAborted`) task per
//! destination that received parts.
//!
//! The `repl_uploads` record remembers, per upload, which destinations got
//! parts and the upload id each destination opened. After the source
//! completes, the completed parts stay (with their block references) and so
//! does the record, until every final task is acknowledged: the worker may
//! still need to upload a part it has not sent yet, or to retry one.

use std::collections::BTreeMap;

use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::MetaError;
use serde::{Deserialize, Serialize};

use super::drop_refs;
use super::outbox::{self, Destination, TaskSubject};
use crate::store::overlay::Overlay;
use crate::store::*;

#[derive(Serialize, Deserialize, Clone, Debug)]
pub(crate) struct StreamedUpload {
    pub upload: UploadInfo,
    /// Destination label -> where its parts went.
    pub destinations: BTreeMap<String, Destination>,
    /// Destination label -> the upload id the destination opened.
    pub remote_upload_ids: BTreeMap<String, String>,
    /// The new version and the part list the client sent (number,
    /// unquoted etag), once the source completed.
    pub completed: Option<(String, Vec<(u32, String)>)>,
    /// Completed or aborted at the source.
    pub finished: bool,
    /// `MultipartCompleted` / `MultipartAborted` tasks not yet done.
    pub final_pending: u32,
}

pub(crate) fn load(
    tx: &Overlay,
    bucket: &str,
    key: &str,
    upload_id: &str,
) -> Result<Option<StreamedUpload>, MetaError> {
    tx.get(CF_REPL_UPLOADS, &upload_key(bucket, key, upload_id))?
        .map(|b| decode(&b))
        .transpose()
}

fn save(tx: &mut Overlay, rec: &StreamedUpload) {
    let u = &rec.upload;
    tx.put(
        CF_REPL_UPLOADS,
        upload_key(&u.bucket, &u.key, &u.upload_id),
        tx.encode(rec),
    );
}

/// A part was committed: a `PartCommitted` task for every destination that
/// already has parts of this upload, and for every destination a rule
/// routes the upload to now.
pub(super) fn on_part(
    tx: &mut Overlay,
    upload: &UploadInfo,
    part: &PartRecord,
    now_ms: i64,
) -> Result<(), MetaError> {
    let rules = outbox::route_bucket(tx, &upload.bucket, &upload.key, Some(&upload.tags))?;
    let existing = load(tx, &upload.bucket, &upload.key, &upload.upload_id)?;
    if rules.is_empty() && existing.is_none() {
        return Ok(());
    }
    let mut rec = existing.unwrap_or_else(|| StreamedUpload {
        upload: upload.clone(),
        destinations: BTreeMap::new(),
        remote_upload_ids: BTreeMap::new(),
        completed: None,
        finished: false,
        final_pending: 0,
    });
    for rule in &rules {
        rec.destinations
            .entry(rule.destination_label())
            .or_insert_with(|| Destination::of_rule(rule));
    }
    let subject = TaskSubject {
        bucket: &upload.bucket,
        key: &upload.key,
        version_id: None,
        size: part.size,
        now_ms,
    };
    for dest in rec.destinations.values() {
        let kind = TaskKind::PartCommitted {
            upload_id: upload.upload_id.clone(),
            part_number: part.number,
        };
        outbox::enqueue(tx, dest, &subject, kind)?;
    }
    save(tx, &rec);
    Ok(())
}

/// The source completed a streamed upload into `version`: the
/// destinations with parts get `MultipartCompleted`, destinations routed
/// to only now get a plain `NewVersion`. Returns how many tasks were made.
pub(super) fn on_complete(
    tx: &mut Overlay,
    mut rec: StreamedUpload,
    version: &ObjectVersion,
    listed: Vec<(u32, String)>,
    now_ms: i64,
) -> Result<usize, MetaError> {
    let upload_id = rec.upload.upload_id.clone();
    let subject = TaskSubject {
        bucket: &version.bucket,
        key: &version.key,
        version_id: Some(&version.version_id),
        size: 0,
        now_ms,
    };
    for dest in rec.destinations.values() {
        let kind = TaskKind::MultipartCompleted {
            upload_id: upload_id.clone(),
        };
        outbox::enqueue(tx, dest, &subject, kind)?;
    }
    let mut n = rec.destinations.len();
    let whole = TaskSubject {
        size: version.size,
        ..subject
    };
    for rule in outbox::route_bucket(tx, &version.bucket, &version.key, Some(&version.tags))? {
        if !rec.destinations.contains_key(&rule.destination_label()) {
            outbox::enqueue(
                tx,
                &Destination::of_rule(&rule),
                &whole,
                TaskKind::NewVersion,
            )?;
            n += 1;
        }
    }
    rec.final_pending += rec.destinations.len() as u32;
    rec.finished = true;
    rec.completed = Some((version.version_id.clone(), listed));
    save(tx, &rec);
    Ok(n)
}

/// The source aborted a streamed upload: each destination aborts its own.
pub(super) fn on_abort(
    tx: &mut Overlay,
    mut rec: StreamedUpload,
    now_ms: i64,
) -> Result<(), MetaError> {
    let subject = TaskSubject {
        bucket: &rec.upload.bucket,
        key: &rec.upload.key,
        version_id: None,
        size: 0,
        now_ms,
    };
    for dest in rec.destinations.values() {
        let kind = TaskKind::MultipartAborted {
            upload_id: rec.upload.upload_id.clone(),
        };
        outbox::enqueue(tx, dest, &subject, kind)?;
    }
    rec.final_pending += rec.destinations.len() as u32;
    rec.finished = true;
    save(tx, &rec);
    Ok(())
}

/// A task was acknowledged Done: the last final task of a finished upload
/// releases its retained parts and its record.
pub(super) fn on_task_done(tx: &mut Overlay, task: &ReplicationTask) -> Result<(), MetaError> {
    let upload_id = match &task.kind {
        TaskKind::MultipartCompleted { upload_id } | TaskKind::MultipartAborted { upload_id } => {
            upload_id
        }
        _ => return Ok(()),
    };
    let Some(mut rec) = load(tx, &task.bucket, &task.key, upload_id)? else {
        return Ok(());
    };
    rec.final_pending = rec.final_pending.saturating_sub(1);
    if rec.final_pending > 0 || !rec.finished {
        save(tx, &rec);
        return Ok(());
    }
    for (k, v) in tx.scan_prefix(CF_PARTS, &parts_prefix(upload_id))? {
        let part: PartRecord = decode(&v)?;
        drop_refs(tx, &part.data)?;
        tx.delete(CF_PARTS, k);
    }
    tx.delete(
        CF_REPL_UPLOADS,
        upload_key(&task.bucket, &task.key, upload_id),
    );
    Ok(())
}

pub(super) fn set_remote_upload_id(
    tx: &mut Overlay,
    bucket: &str,
    key: &str,
    upload_id: &str,
    destination: &str,
    remote_upload_id: &str,
) -> Result<crate::command::Reply, MetaError> {
    let mut rec = load(tx, bucket, key, upload_id)?.ok_or(MetaError::NoSuchUpload)?;
    let recorded = rec
        .remote_upload_ids
        .entry(destination.to_string())
        .or_insert_with(|| remote_upload_id.to_string())
        .clone();
    save(tx, &rec);
    Ok(crate::command::Reply::Text(recorded))
}
