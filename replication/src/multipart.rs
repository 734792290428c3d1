//! Multipart part streaming: each part committed at the source is uploaded
//! to the destination's own multipart upload at once, so a large object is
//! replicated seconds after the source completes, whatever its size.
//!
//! - The first part task of a (source upload, destination) opens the
//!   destination upload and records its id in meta (set-if-absent: a worker
//!   that lost the race aborts its own); in this process a keyed mutex
//!   serializes the opening, so concurrent parts open one upload.
//! - The completion task waits until every listed part is at the
//!   destination (ListParts there), uploads what is still missing itself
//!   after a few waits, then completes with the same part numbers and ETags:
//!   same boundaries, same bytes, so the same multipart ETag.
//! - The abort task aborts the destination upload.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use godwit_common::net::s3_remote::{
    content_md5_from_etag, tagging_header, CompletePart, PartChecksum,
};
use godwit_common::replication::{ReplUpload, ReplicationTask};
use godwit_common::types::PartRecord;

use crate::remotes::Remote;
use crate::task::{
    destination_label, object_headers, replica_header, CarriedChecksum, Sealed, Step, TaskError,
    TaskResult,
};
use crate::Replicator;

/// A completion waits for part tasks this many times before it uploads the
/// missing parts itself (each wait is one retry of the task), unless part
/// uploads of its upload are running here: then it waits for them.
const COMPLETE_WAITS: u32 = 4;
/// The longest wait of a completion for its parts.
const COMPLETE_WAIT_MAX_MS: u64 = 2_000;
/// A completion whose parts are being uploaded here looks again when one
/// of them ends, or after this long (a ListParts at the destination per
/// look).
const PARTS_RUNNING_POLL_MS: u64 = 1_000;
/// A completion whose source has not recorded the completion yet asks
/// again after this long.
const NOT_COMPLETED_WAIT_MS: u64 = 500;
/// Remembered aborted uploads (a bound, not a tuning knob).
const ABORTED_REMEMBERED: usize = 10_000;

/// One part committed at the source: upload it to the destination upload.
pub(crate) async fn part(
    rep: &Arc<Replicator>,
    task: &ReplicationTask,
    remote: &Remote,
    upload_id: &str,
    part_number: u32,
) -> TaskResult {
    let up = rep
        .queue
        .replication_upload(&task.bucket, &task.key, upload_id)
        .await?;
    let Some(part) = up.parts.iter().find(|p| p.number == part_number) else {
        return Ok(Step::Done); // replaced or dropped since: nothing to send
    };
    if let Some((_, listed)) = &up.completed {
        if !listed.iter().any(|(n, _)| *n == part_number) {
            return Ok(Step::Done); // not part of the completed object
        }
    }
    // An encrypted upload's parts go over in the clear, to be encrypted
    // at the destination (an SSE-C upload fails here for good).
    let sealed = rep.data_key(up.upload.sse.as_ref())?.map(|dek| Sealed {
        dek,
        segments: vec![],
    });
    let Some(remote_upload) = ensure_remote_upload(rep, task, remote, &up, upload_id).await? else {
        return Ok(Step::Done); // aborted here meanwhile
    };
    let _running = rep
        .parts_in_flight
        .start((upload_id.to_string(), destination_label(task)));
    match upload_one(
        rep,
        task,
        remote,
        &up,
        part,
        &remote_upload,
        sealed.as_ref(),
    )
    .await
    {
        Ok(()) => Ok(Step::Done),
        Err(e) if e.code() == Some("NoSuchUpload") => {
            // The destination upload is gone: fine if the source completed
            // (the completion uploads what it needs itself) or was aborted.
            match rep
                .queue
                .replication_upload(&task.bucket, &task.key, upload_id)
                .await
            {
                Ok(now) if now.completed.is_none() => Err(TaskError::permanent(
                    "destination-upload-vanished",
                    format!("the destination upload vanished: {e}"),
                )),
                Ok(_) => Ok(Step::Done),
                Err(meta_err) => Err(meta_err.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// The source completed: complete the destination with the same parts.
pub(crate) async fn complete(
    rep: &Arc<Replicator>,
    task: &ReplicationTask,
    remote: &Remote,
    upload_id: &str,
) -> TaskResult {
    let up = rep
        .queue
        .replication_upload(&task.bucket, &task.key, upload_id)
        .await?;
    let sealed = rep.data_key(up.upload.sse.as_ref())?.map(|dek| Sealed {
        dek,
        segments: vec![],
    });
    let Some((version_id, listed)) = up.completed.clone() else {
        return Ok(Step::Wait {
            reason: "the source has not recorded its completion yet".into(),
            delay_ms: NOT_COMPLETED_WAIT_MS,
        });
    };
    let version = rep
        .meta
        .get_object(&task.bucket, &task.key, Some(&version_id))
        .await?
        .version;
    let dest = &task.destination_bucket;
    let Some(remote_upload) = ensure_remote_upload(rep, task, remote, &up, upload_id).await? else {
        return Ok(Step::Done);
    };
    // Under a bandwidth limit a part upload can take longer than all of
    // the waits below: sending its bytes a second time from here would
    // only halve what each copy gets. So while part uploads of this upload
    // run in this process, the completion waits for them here, holding
    // its slot (a wait through the queue would count as an attempt).
    let running_key = (upload_id.to_string(), destination_label(task));
    let missing = loop {
        let have = match remote
            .client
            .list_parts(dest, &task.key, &remote_upload)
            .await
        {
            Ok(have) => have,
            Err(e) if e.code() == Some("NoSuchUpload") => {
                return already_completed(remote, task, &version.etag, e.to_string()).await
            }
            Err(e) => return Err(e.into()),
        };
        let have: HashMap<u32, &str> = have.iter().map(|p| (p.number, p.etag.as_str())).collect();
        let mut missing = Vec::new();
        for (n, etag) in &listed {
            if have.get(n) == Some(&etag.as_str()) {
                continue;
            }
            let Some(part) = up.parts.iter().find(|p| p.number == *n && p.etag == *etag) else {
                return Err(TaskError::permanent(
                    "source-part-missing",
                    format!("part {n} of the completed source upload is not recorded"),
                ));
            };
            missing.push(part);
        }
        let running = rep.parts_in_flight.count(&running_key);
        if missing.is_empty() || running == 0 {
            break missing;
        }
        tracing::debug!(
            missing = missing.len(),
            running,
            "completion waits for the part uploads running here"
        );
        rep.parts_in_flight
            .changed(Duration::from_millis(PARTS_RUNNING_POLL_MS))
            .await;
    };
    if !missing.is_empty() {
        if task.attempts < COMPLETE_WAITS {
            let delay_ms = rep
                .cfg
                .backoff_base_ms
                .saturating_mul(1 << task.attempts)
                .min(COMPLETE_WAIT_MAX_MS);
            return Ok(Step::Wait {
                reason: format!("{} part(s) not yet at the destination", missing.len()),
                delay_ms,
            });
        }
        // Their part tasks are late or failed: send them from here.
        for part in missing {
            upload_one(
                rep,
                task,
                remote,
                &up,
                part,
                &remote_upload,
                sealed.as_ref(),
            )
            .await?;
        }
    }
    // Each part with its checksum, and the object's, when the source
    // upload had an algorithm.
    let carried = CarriedChecksum::of_upload(&up.upload).map(|c| CarriedChecksum {
        object: PartChecksum::of(&version.checksums, c.algorithm).map(|v| v.value),
        ..c
    });
    let parts: Vec<CompletePart> = listed
        .iter()
        .map(|(n, etag)| CompletePart {
            checksum: carried.as_ref().and_then(|c| {
                let part = up.parts.iter().find(|p| p.number == *n)?;
                c.part(&part.checksums)
            }),
            ..CompletePart::new(*n, etag)
        })
        .collect();
    let mut headers = vec![replica_header(&rep.cfg.region, version.last_modified_ms)];
    headers.extend(carried.iter().flat_map(CarriedChecksum::complete_headers));
    match remote
        .client
        .complete_multipart_upload_parts(dest, &task.key, &remote_upload, &parts, headers)
        .await
    {
        Ok(etag) => {
            if etag != version.etag {
                tracing::warn!(source_etag = %version.etag, destination_etag = %etag, "destination ETag differs");
            }
            Ok(Step::Done)
        }
        // An earlier run completed it and its ack was lost.
        Err(e) if e.code() == Some("NoSuchUpload") => {
            already_completed(remote, task, &version.etag, e.to_string()).await
        }
        Err(e) => Err(e.into()),
    }
}

/// The source aborted: abort at the destination.
pub(crate) async fn abort(
    rep: &Arc<Replicator>,
    task: &ReplicationTask,
    remote: &Remote,
    upload_id: &str,
) -> TaskResult {
    let dest_label = destination_label(task);
    let _serial = rep
        .upload_locks
        .lock((upload_id.to_string(), dest_label.clone()))
        .await;
    {
        let mut aborted = rep
            .aborted_uploads
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        if aborted.len() >= ABORTED_REMEMBERED {
            aborted.clear();
        }
        aborted.insert((upload_id.to_string(), dest_label.clone()));
    }
    let up = rep
        .queue
        .replication_upload(&task.bucket, &task.key, upload_id)
        .await?;
    let Some(remote_upload) = up.remote_upload_ids.get(&dest_label) else {
        return Ok(Step::Done); // no part reached this destination
    };
    match remote
        .client
        .abort_multipart_upload(&task.destination_bucket, &task.key, remote_upload)
        .await
    {
        Ok(()) => Ok(Step::Done),
        Err(e) if e.code() == Some("NoSuchUpload") => Ok(Step::Done),
        Err(e) => Err(e.into()),
    }
}

/// The destination upload id for this source upload, opening it if no
/// worker did yet. `None` when this process aborted it.
async fn ensure_remote_upload(
    rep: &Arc<Replicator>,
    task: &ReplicationTask,
    remote: &Remote,
    up: &ReplUpload,
    upload_id: &str,
) -> Result<Option<String>, TaskError> {
    let dest_label = destination_label(task);
    if let Some(id) = up.remote_upload_ids.get(&dest_label) {
        return Ok(Some(id.clone()));
    }
    let key = (upload_id.to_string(), dest_label.clone());
    let _serial = rep.upload_locks.lock(key.clone()).await;
    if rep
        .aborted_uploads
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .contains(&key)
    {
        return Ok(None);
    }
    // Another task here may have opened it while this one waited.
    let fresh = rep
        .queue
        .replication_upload(&task.bucket, &task.key, upload_id)
        .await?;
    if let Some(id) = fresh.remote_upload_ids.get(&dest_label) {
        return Ok(Some(id.clone()));
    }
    let info = &fresh.upload;
    // The final last-modified is only known at completion (which carries it
    // in REPLICA_HEADER); until then the upload's initiation time stands in.
    let mut headers = object_headers(
        &rep.cfg.region,
        info.initiated_ms,
        &info.headers,
        &info.user_meta,
    );
    if !info.tags.is_empty() {
        headers.push(("x-amz-tagging".into(), tagging_header(&info.tags)));
    }
    headers.extend(crate::task::lock_headers(&info.lock));
    headers.extend(crate::task::sse_headers(info.sse.as_ref()));
    // The same checksum algorithm and type as the source upload.
    headers.extend(
        CarriedChecksum::of_upload(info)
            .iter()
            .flat_map(CarriedChecksum::create_headers),
    );
    let dest = &task.destination_bucket;
    let mine = remote
        .client
        .create_multipart_upload(dest, &task.key, headers)
        .await?;
    let recorded = rep
        .queue
        .set_remote_upload_id(&task.bucket, &task.key, upload_id, &dest_label, &mine)
        .await;
    match recorded {
        Ok(recorded) if recorded == mine => Ok(Some(mine)),
        Ok(theirs) => {
            // Another worker opened one first: use theirs, drop ours.
            if let Err(e) = remote
                .client
                .abort_multipart_upload(dest, &task.key, &mine)
                .await
            {
                tracing::warn!(error = %e, "aborting a surplus destination upload failed");
            }
            Ok(Some(theirs))
        }
        Err(e) => {
            if let Err(abort) = remote
                .client
                .abort_multipart_upload(dest, &task.key, &mine)
                .await
            {
                tracing::warn!(error = %abort, "aborting an unrecorded destination upload failed");
            }
            Err(e.into())
        }
    }
}

/// Uploads one source part's bytes to the destination upload.
async fn upload_one(
    rep: &Arc<Replicator>,
    task: &ReplicationTask,
    remote: &Remote,
    up: &ReplUpload,
    part: &PartRecord,
    remote_upload: &str,
    sealed: Option<&Sealed>,
) -> Result<(), godwit_common::net::s3_remote::RemoteError> {
    // A part of an encrypted upload is one segment under its own nonce.
    let part_sealed = match sealed {
        None => None,
        Some(s) => Some(Sealed {
            dek: s.dek.clone(),
            segments: vec![godwit_common::sse::SegmentKey {
                plain_len: part.size,
                nonce: godwit_common::sse::base_nonce(&part.sse_nonce).map_err(|e| {
                    godwit_common::net::s3_remote::RemoteError::Invalid {
                        op: "sse",
                        message: e.to_string(),
                    }
                })?,
            }],
        }),
    };
    let body = rep.body(
        task,
        remote,
        &part.data,
        &up.grant,
        0,
        part.size,
        part_sealed.as_ref(),
    );
    let md5 = content_md5_from_etag(&part.etag);
    let checksum = CarriedChecksum::of_upload(&up.upload).and_then(|c| c.part(&part.checksums));
    let etag = remote
        .client
        .upload_part_checked(
            &task.destination_bucket,
            &task.key,
            remote_upload,
            part.number,
            body,
            part.size,
            md5.as_deref(),
            checksum.as_ref(),
        )
        .await?;
    if etag != part.etag {
        tracing::warn!(part = part.number, source_etag = %part.etag, destination_etag = %etag, "destination part ETag differs");
    }
    Ok(())
}

/// The destination upload is gone: done if the destination already holds
/// the completed object.
async fn already_completed(
    remote: &Remote,
    task: &ReplicationTask,
    etag: &str,
    why: String,
) -> TaskResult {
    match remote
        .client
        .head_object(&task.destination_bucket, &task.key)
        .await?
    {
        Some(have) if have.etag == etag => Ok(Step::Done),
        _ => Err(TaskError::permanent(
            "destination-upload-vanished",
            format!("the destination upload is gone and the object is not there: {why}"),
        )),
    }
}

/// (source upload id, destination label).
type UploadKey = (String, String);

/// How many part uploads of each (source upload, destination) are running
/// in this process.
#[derive(Default)]
pub(crate) struct PartsInFlight {
    map: std::sync::Mutex<HashMap<UploadKey, usize>>,
    /// Signalled whenever a part upload ends.
    ended: tokio::sync::Notify,
}

/// One running part upload; counted until dropped.
pub(crate) struct PartRunning<'a> {
    set: &'a PartsInFlight,
    key: UploadKey,
}

impl PartsInFlight {
    pub fn start(&self, key: UploadKey) -> PartRunning<'_> {
        *self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key.clone())
            .or_default() += 1;
        PartRunning { set: self, key }
    }

    /// Returns when a part upload ended (any upload's) or after `at_most`.
    pub async fn changed(&self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.ended.notified()).await;
    }

    pub fn count(&self, key: &UploadKey) -> usize {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .copied()
            .unwrap_or(0)
    }
}

impl Drop for PartRunning<'_> {
    fn drop(&mut self) {
        let mut map = self.set.map.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(n) = map.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.key);
            }
        }
        drop(map);
        self.set.ended.notify_waiters();
    }
}

/// Async mutexes by key, dropped once nobody holds or waits for them.
#[derive(Default)]
pub(crate) struct KeyedLocks {
    map: std::sync::Mutex<HashMap<UploadKey, Arc<tokio::sync::Mutex<()>>>>,
}

pub(crate) struct KeyedGuard<'a> {
    locks: &'a KeyedLocks,
    key: UploadKey,
    mutex: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl KeyedLocks {
    pub async fn lock(&self, key: UploadKey) -> KeyedGuard<'_> {
        let mutex = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(key.clone())
            .or_default()
            .clone();
        let guard = mutex.clone().lock_owned().await;
        KeyedGuard {
            locks: self,
            key,
            mutex,
            guard: Some(guard),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.map.lock().unwrap().len()
    }
}

impl Drop for KeyedGuard<'_> {
    fn drop(&mut self) {
        self.guard.take();
        let mut map = self.locks.map.lock().unwrap_or_else(|p| p.into_inner());
        // Clones are only made under the map lock: two references (the
        // map's and ours) mean nobody else holds or awaits this key.
        if Arc::strong_count(&self.mutex) == 2 {
            map.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_in_flight_are_counted_until_dropped() {
        let set = PartsInFlight::default();
        let k = || ("u1".to_string(), "r/b".to_string());
        assert_eq!(set.count(&k()), 0);
        let a = set.start(k());
        let b = set.start(k());
        let other = set.start(("u2".into(), "r/b".into()));
        assert_eq!(set.count(&k()), 2);
        drop(a);
        assert_eq!(set.count(&k()), 1);
        drop(b);
        drop(other);
        assert_eq!(set.count(&k()), 0);
        assert!(set.map.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn keyed_locks_serialize_one_key_and_clean_up() {
        let locks = Arc::new(KeyedLocks::default());
        let k = || ("u1".to_string(), "r/b".to_string());
        let first = locks.lock(k()).await;
        // Another key is free.
        let other = locks.lock(("u2".into(), "r/b".into())).await;
        drop(other);
        let waiter = {
            let locks = locks.clone();
            tokio::spawn(async move {
                let _g = locks.lock(k()).await;
            })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiter.is_finished(), "the same key must wait");
        drop(first);
        tokio::time::timeout(Duration::from_secs(5), waiter)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(locks.len(), 0);
    }
}
