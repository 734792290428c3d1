//! Applying one leased task to its destination, and turning the result into
//! the outcome meta records. Every application is idempotent: a task may
//! run twice (its lease expired, or its ack was lost) and must leave the
//! destination as once.

use std::sync::Arc;

use futures::{StreamExt, TryStreamExt};
use godwit_common::net::s3_remote::{
    content_md5_from_etag, tagging_header, CompletePart, Headers, PartChecksum, RemoteError,
    RemoteObject,
};
use godwit_common::object_read::read_data_range;
use godwit_common::replication::{
    MetadataChange, ReplicationTask, TaskKind, TaskOutcome, ORIGINAL_MTIME_META, REPLICA_HEADER,
};
use godwit_common::sse::{self, DataKey, SseInfo};
use godwit_common::types::{
    ChecksumType, Checksums, ContentHeaders, ObjectData, ObjectRead, ObjectVersion, ReadGrant,
    UploadInfo,
};
use godwit_common::{ByteStream, MetaError};
use tracing::Instrument;

use crate::backoff::backoff_delay_ms;
use crate::limiter::throttle;
use crate::remotes::Remote;
use crate::{metrics, multipart, now_ms, Replicator};

/// S3's largest single PUT; larger objects go as multipart.
const MAX_SINGLE_PUT: u64 = 5 * 1024 * 1024 * 1024;
/// Part size for objects sent as multipart that had no parts at the
/// source (only objects above `MAX_SINGLE_PUT`).
const SPLIT_PART_SIZE: u64 = 256 * 1024 * 1024;
/// Parts of one object in flight at once when copying it as multipart.
const PARTS_IN_FLIGHT: usize = 4;

/// How a task ended, short of an error.
#[derive(Debug)]
pub(crate) enum Step {
    /// The destination acknowledged.
    Done,
    /// Nothing had to be sent (the destination already had it); the label
    /// of `godwit_replication_skipped_total`.
    Skipped(&'static str),
    /// Not yet possible (e.g. parts still on their way): ask again soon.
    Wait { reason: String, delay_ms: u64 },
}

/// Why a task did not finish.
#[derive(Debug)]
pub(crate) enum TaskError {
    /// The source no longer has what the task names (version, upload,
    /// bucket deleted since): nothing is left to send, so the task is done.
    SourceGone,
    /// May succeed later.
    Retryable(Failure),
    /// Will not succeed by retrying (e.g. the destination bucket is gone).
    Permanent(Failure),
}

/// A failure's cause (a short class that failures alike share, what the
/// SLA report counts them under: `TaskOutcome::Failed::cause`) and its
/// message (for the log and the task's `last_error`).
#[derive(Debug)]
pub(crate) struct Failure {
    pub cause: String,
    pub message: String,
}

impl TaskError {
    pub(crate) fn retryable(cause: &str, message: impl Into<String>) -> TaskError {
        TaskError::Retryable(Failure {
            cause: cause.into(),
            message: message.into(),
        })
    }

    pub(crate) fn permanent(cause: &str, message: impl Into<String>) -> TaskError {
        TaskError::Permanent(Failure {
            cause: cause.into(),
            message: message.into(),
        })
    }
}

/// The cause of a remote's error: its S3 error code when it sent one, else
/// its HTTP status, else how the exchange broke.
pub(crate) fn remote_cause(e: &RemoteError) -> String {
    match e {
        RemoteError::Status {
            code: Some(code), ..
        } => code.clone(),
        RemoteError::Status { status, .. } => format!("HTTP {status}"),
        RemoteError::Transport { .. } => "transport".into(),
        RemoteError::Invalid { .. } => "invalid-exchange".into(),
    }
}

impl From<RemoteError> for TaskError {
    fn from(e: RemoteError) -> Self {
        let failure = Failure {
            cause: remote_cause(&e),
            message: e.to_string(),
        };
        if e.is_retryable() {
            TaskError::Retryable(failure)
        } else {
            TaskError::Permanent(failure)
        }
    }
}

impl From<MetaError> for TaskError {
    fn from(e: MetaError) -> Self {
        match e {
            MetaError::NoSuchBucket
            | MetaError::NoSuchKey
            | MetaError::NoSuchVersion
            | MetaError::NoSuchUpload => TaskError::SourceGone,
            MetaError::NotLeader { .. } | MetaError::Unavailable(_) | MetaError::Internal(_) => {
                TaskError::retryable("source-meta", format!("source meta: {e}"))
            }
            other => TaskError::permanent("source-meta", format!("source meta: {other}")),
        }
    }
}

pub(crate) type TaskResult = Result<Step, TaskError>;

impl Replicator {
    /// Runs one task and says what meta should record.
    pub(crate) async fn run_task(self: &Arc<Self>, task: &ReplicationTask) -> TaskOutcome {
        let span = tracing::info_span!(
            "replicate",
            task = %task.id,
            bucket = %task.bucket,
            key = %task.key,
            kind = task.kind.as_str(),
            remote = %task.remote,
            lane = task.lane.as_str(),
        );
        let result = self.execute(task).instrument(span.clone()).await;
        let _entered = span.enter();
        self.outcome(task, result)
    }

    async fn execute(self: &Arc<Self>, task: &ReplicationTask) -> TaskResult {
        if task.kind == TaskKind::VersionDelete {
            // Version ids are assigned by each region, so the source's id
            // names nothing at the destination; AWS never replicates
            // permanent version deletes either
            // (https://docs.aws.amazon.com/AmazonS3/latest/userguide/replication-what-is-isnot-replicated.html).
            tracing::info!(
                "permanent version delete is not replicated (version ids differ between regions)"
            );
            return Ok(Step::Done);
        }
        let Some(remote) = self.remotes.get(self.meta.as_ref(), &task.remote).await else {
            return Err(TaskError::retryable(
                "remote-not-registered",
                format!("remote `{}` is not registered", task.remote),
            ));
        };
        match &task.kind {
            TaskKind::NewVersion => self.new_version(task, &remote).await,
            TaskKind::DeleteMarker => self.delete_marker(task, &remote).await,
            TaskKind::TagsChanged => self.tags_changed(task, &remote).await,
            TaskKind::KeyDeleted => self.key_deleted(task, &remote).await,
            TaskKind::MetadataChanged { change } => {
                self.metadata_changed(task, &remote, *change).await
            }
            TaskKind::PartCommitted {
                upload_id,
                part_number,
            } => multipart::part(self, task, &remote, upload_id, *part_number).await,
            TaskKind::MultipartCompleted { upload_id } => {
                multipart::complete(self, task, &remote, upload_id).await
            }
            TaskKind::MultipartAborted { upload_id } => {
                multipart::abort(self, task, &remote, upload_id).await
            }
            TaskKind::VersionDelete => Ok(Step::Done),
        }
    }

    fn outcome(&self, task: &ReplicationTask, result: TaskResult) -> TaskOutcome {
        let now = now_ms();
        let lane = task.lane.as_str();
        match result {
            Ok(Step::Done) | Err(TaskError::SourceGone) | Ok(Step::Skipped(_)) => {
                if let Ok(Step::Skipped(reason)) = &result {
                    metrics::get().skipped.with_label_values(&[reason]).inc();
                    tracing::debug!(reason, "destination already up to date");
                }
                if matches!(result, Err(TaskError::SourceGone)) {
                    tracing::debug!("the source no longer has it: nothing to send");
                }
                let latency_ms = (now - task.created_ms).max(0) as u64;
                metrics::get()
                    .latency
                    .with_label_values(&[
                        &task.bucket,
                        &task.rule_id,
                        &destination_label(task),
                        lane,
                    ])
                    .observe(latency_ms as f64 / 1000.0);
                metrics::get()
                    .outcomes
                    .with_label_values(&[lane, "done"])
                    .inc();
                TaskOutcome::Done { latency_ms }
            }
            Ok(Step::Wait { reason, delay_ms }) => {
                tracing::debug!(%reason, delay_ms, "task waits");
                metrics::get()
                    .outcomes
                    .with_label_values(&[lane, "wait"])
                    .inc();
                TaskOutcome::Retry {
                    error: reason,
                    retry_at_ms: now + delay_ms as i64,
                    cause: "waited-too-long".into(),
                }
            }
            Err(TaskError::Retryable(Failure {
                cause,
                message: error,
            })) if task.attempts + 1 < self.cfg.max_attempts => {
                let delay = backoff_delay_ms(
                    &mut rand::thread_rng(),
                    self.cfg.backoff_base_ms,
                    self.cfg.backoff_max_ms,
                    task.attempts,
                );
                tracing::info!(%error, attempts = task.attempts + 1, delay_ms = delay, "replication failed, will retry");
                metrics::get()
                    .outcomes
                    .with_label_values(&[lane, "retry"])
                    .inc();
                metrics::get()
                    .failures
                    .with_label_values(&[lane, &cause, "retry"])
                    .inc();
                TaskOutcome::Retry {
                    error,
                    retry_at_ms: now + delay as i64,
                    cause,
                }
            }
            Err(TaskError::Retryable(Failure {
                cause,
                message: error,
            }))
            | Err(TaskError::Permanent(Failure {
                cause,
                message: error,
            })) => {
                tracing::warn!(%error, %cause, attempts = task.attempts + 1, "replication FAILED");
                metrics::get()
                    .outcomes
                    .with_label_values(&[lane, "failed"])
                    .inc();
                metrics::get()
                    .failures
                    .with_label_values(&[lane, &cause, "failed"])
                    .inc();
                TaskOutcome::Failed { error, cause }
            }
        }
    }

    /// A new version: PUT it (or skip it when the destination has it).
    async fn new_version(&self, task: &ReplicationTask, remote: &Remote) -> TaskResult {
        let obj = self
            .meta
            .get_object(&task.bucket, &task.key, task.version_id.as_deref())
            .await?;
        let v = &obj.version;
        if v.is_delete_marker {
            // A delete marker on a NewVersion task (the latest was asked
            // for): its own task carries it.
            return Ok(Step::Done);
        }
        if v.size > self.cfg.optimistic_threshold {
            // XDCR's optimistic threshold: a HEAD is cheap next to the body.
            if let Some(have) = remote
                .client
                .head_object(&task.destination_bucket, &task.key)
                .await?
            {
                if have.etag == v.etag && have.size == v.size {
                    if metadata_matches(&have, v) {
                        return Ok(Step::Skipped("same_etag"));
                    }
                    // The bytes are there under other metadata (a copy in
                    // place queued by a build from before
                    // `MetadataChanged`, or a destination seeded by other
                    // means): the metadata goes alone.
                    return self.copy_in_place(task, remote, v).await;
                }
            }
        }
        self.send_version(task, remote, &obj).await
    }

    /// Sends a version whole: its bytes and everything said about them.
    async fn send_version(
        &self,
        task: &ReplicationTask,
        remote: &Remote,
        obj: &ObjectRead,
    ) -> TaskResult {
        let v = &obj.version;
        let mut headers = object_headers(
            &self.cfg.region,
            v.last_modified_ms,
            &v.headers,
            &v.user_meta,
        );
        if !v.tags.is_empty() {
            headers.push(("x-amz-tagging".into(), tagging_header(&v.tags)));
        }
        headers.extend(lock_headers(&v.lock));
        let sealed = self.sealed_version(v)?;
        headers.extend(sse_headers(v.sse.as_ref()));
        if !v.parts.is_empty() || v.size > MAX_SINGLE_PUT {
            return self
                .copy_as_multipart(task, remote, v, &obj.grant, headers, sealed.as_ref())
                .await;
        }
        // The source ETag is the MD5 of the bytes: the destination checks
        // what it received against it (BadDigest otherwise, retried).
        if let Some(md5) = content_md5_from_etag(&v.etag) {
            headers.push(("content-md5".into(), md5));
        }
        // A single-request object's checksum is of its whole bytes: the
        // destination checks it and keeps it.
        headers.extend(PartChecksum::first_of(&v.checksums).map(|c| c.header()));
        let body = self.body(
            task,
            remote,
            &v.data,
            &obj.grant,
            0,
            v.size,
            sealed.as_ref(),
        );
        remote
            .client
            .put_object(&task.destination_bucket, &task.key, body, v.size, headers)
            .await?;
        Ok(Step::Done)
    }

    /// An object made by CompleteMultipartUpload goes over with the same
    /// part boundaries, so the destination computes the same ETag (and a
    /// later optimistic HEAD recognises it).
    async fn copy_as_multipart(
        &self,
        task: &ReplicationTask,
        remote: &Remote,
        v: &ObjectVersion,
        grant: &ReadGrant,
        mut headers: Headers,
        sealed: Option<&Sealed>,
    ) -> TaskResult {
        // A single-request object split here goes without its checksum:
        // its parts' values are not known before they are read.
        let carried = CarriedChecksum::of_version(v);
        headers.extend(carried.iter().flat_map(CarriedChecksum::create_headers));
        let mut ranges = Vec::new(); // (number, start, end, etag, checksum)
        if v.parts.is_empty() {
            let mut start = 0;
            let mut n = 1;
            while start < v.size {
                let end = (start + SPLIT_PART_SIZE).min(v.size);
                ranges.push((n, start, end, None, None));
                start = end;
                n += 1;
            }
        } else {
            let mut start = 0;
            for p in &v.parts {
                let checksum = carried.as_ref().and_then(|c| c.part(&p.checksums));
                ranges.push((
                    p.number,
                    start,
                    start + p.size,
                    Some(p.etag.clone()),
                    checksum,
                ));
                start += p.size;
            }
        }
        let dest = &task.destination_bucket;
        let upload_id = remote
            .client
            .create_multipart_upload(dest, &task.key, headers)
            .await?;
        let sent = futures::stream::iter(ranges)
            .map(|(n, start, end, etag, checksum)| {
                let body = self.body(task, remote, &v.data, grant, start, end, sealed);
                let md5 = etag.as_deref().and_then(content_md5_from_etag);
                let upload_id = &upload_id;
                async move {
                    let got = remote
                        .client
                        .upload_part_checked(
                            dest,
                            &task.key,
                            upload_id,
                            n,
                            body,
                            end - start,
                            md5.as_deref(),
                            checksum.as_ref(),
                        )
                        .await?;
                    Ok::<_, RemoteError>(CompletePart {
                        number: n,
                        etag: got,
                        checksum,
                    })
                }
            })
            .buffered(PARTS_IN_FLIGHT)
            .try_collect::<Vec<_>>()
            .await;
        let result = match sent {
            Ok(parts) => {
                let mut headers = vec![replica_header(&self.cfg.region, v.last_modified_ms)];
                headers.extend(carried.iter().flat_map(CarriedChecksum::complete_headers));
                remote
                    .client
                    .complete_multipart_upload_parts(dest, &task.key, &upload_id, &parts, headers)
                    .await
            }
            Err(e) => Err(e),
        };
        match result {
            Ok(etag) => {
                if etag != v.etag {
                    tracing::warn!(source_etag = %v.etag, destination_etag = %etag, "destination ETag differs");
                }
                Ok(Step::Done)
            }
            Err(e) => {
                if let Err(abort) = remote
                    .client
                    .abort_multipart_upload(dest, &task.key, &upload_id)
                    .await
                {
                    tracing::warn!(error = %abort, "aborting the destination upload failed");
                }
                Err(e.into())
            }
        }
    }

    /// A delete marker: DELETE the key at the destination, marked as a
    /// replica so a two-way rule does not send it back.
    async fn delete_marker(&self, task: &ReplicationTask, remote: &Remote) -> TaskResult {
        let obj = self
            .meta
            .get_object(&task.bucket, &task.key, task.version_id.as_deref())
            .await?;
        if !obj.version.is_delete_marker {
            tracing::warn!(
                "the version of a delete-marker task is not a delete marker; nothing sent"
            );
            return Ok(Step::Done);
        }
        remote
            .client
            .delete_object(
                &task.destination_bucket,
                &task.key,
                vec![replica_header(
                    &self.cfg.region,
                    obj.version.last_modified_ms,
                )],
            )
            .await?;
        Ok(Step::Done)
    }

    /// A key of an unversioned bucket was deleted: DELETE it at the
    /// destination, marked as a replica whose time is the delete's, so a
    /// Godwit destination keeps a newer write of the key (last writer
    /// wins). When the source holds the key again it was written after the
    /// delete: that write's own task brings it, and the delete is moot.
    async fn key_deleted(&self, task: &ReplicationTask, remote: &Remote) -> TaskResult {
        match self.meta.get_object(&task.bucket, &task.key, None).await {
            Ok(obj) if !obj.version.is_delete_marker => {
                return Ok(Step::Skipped("written_again"));
            }
            Ok(_) => {}
            Err(MetaError::NoSuchKey) => {}
            // The bucket itself is gone: nothing left to mirror.
            Err(e) => return Err(e.into()),
        }
        remote
            .client
            .delete_object(
                &task.destination_bucket,
                &task.key,
                vec![replica_header(&self.cfg.region, task.created_ms)],
            )
            .await?;
        Ok(Step::Done)
    }

    /// New tags on a version: PUT ?tagging on the destination's latest
    /// version, once that is the same object (same ETag).
    async fn tags_changed(&self, task: &ReplicationTask, remote: &Remote) -> TaskResult {
        let obj = self
            .meta
            .get_object(&task.bucket, &task.key, task.version_id.as_deref())
            .await?;
        let v = &obj.version;
        if v.is_delete_marker {
            return Ok(Step::Done);
        }
        let dest = &task.destination_bucket;
        match remote.client.head_object(dest, &task.key).await? {
            None => {
                return Err(TaskError::retryable(
                    "destination-missing",
                    "the destination does not have the object yet",
                ))
            }
            Some(have) if have.etag != v.etag => {
                if !v.is_latest {
                    // A newer version replaced it at the source; its own
                    // task carries its tags.
                    return Ok(Step::Done);
                }
                return Err(TaskError::retryable(
                    "destination-differs",
                    "the destination holds another version of the key",
                ));
            }
            Some(_) => {}
        }
        remote
            .client
            .put_object_tagging(
                dest,
                &task.key,
                None,
                &v.tags,
                vec![replica_header(&self.cfg.region, v.last_modified_ms)],
            )
            .await?;
        Ok(Step::Done)
    }

    /// What is said about a version's bytes changed, not the bytes
    /// (`MetadataChange`): the destination gets the change without them.
    async fn metadata_changed(
        &self,
        task: &ReplicationTask,
        remote: &Remote,
        change: MetadataChange,
    ) -> TaskResult {
        let obj = self
            .meta
            .get_object(&task.bucket, &task.key, task.version_id.as_deref())
            .await?;
        let v = &obj.version;
        if v.is_delete_marker {
            return Ok(Step::Done);
        }
        let have = remote
            .client
            .head_object(&task.destination_bucket, &task.key)
            .await?;
        let same_bytes = have
            .as_ref()
            .is_some_and(|h| h.etag == v.etag && h.size == v.size);
        match (change, have) {
            // Already carried (the task ran before and its ack was lost):
            // the destination's latest shows this version's time and
            // metadata.
            (MetadataChange::SameDataNewVersion, Some(h)) if same_bytes && shows_version(&h, v) => {
                Ok(Step::Skipped("same_version"))
            }
            // The destination holds the bytes: a copy in place makes its
            // new version from them.
            (MetadataChange::SameDataNewVersion, Some(_)) if same_bytes => {
                self.copy_in_place(task, remote, v).await
            }
            // It does not (the replaced version never reached it, or
            // another replaced it there): the whole version goes.
            (MetadataChange::SameDataNewVersion, _) => self.send_version(task, remote, &obj).await,
            // As for tags: the version's own task brings it, and its lock.
            (MetadataChange::ObjectLock, None) => Err(TaskError::retryable(
                "metadata-not-yet",
                "the destination does not have the object yet",
            )),
            // The destination's latest is the copy of another version (a
            // newer one at the source, or one made of the same bytes):
            // the replicator knows no version id there to aim at, so an
            // older version's change stays at the source, as on a
            // destination the version never reached.
            (MetadataChange::ObjectLock, Some(h))
                if !(v.is_latest || same_bytes && shows_version_time(&h, v)) =>
            {
                Ok(Step::Done)
            }
            (MetadataChange::ObjectLock, Some(_)) if !same_bytes => Err(TaskError::retryable(
                "metadata-other-version",
                "the destination holds another version of the key",
            )),
            (MetadataChange::ObjectLock, Some(_)) => {
                let until = v.lock.retention.map(|r| rfc3339(r.retain_until_ms));
                let retention = v
                    .lock
                    .retention
                    .as_ref()
                    .zip(until.as_deref())
                    .map(|(r, u)| (r.mode.as_str(), u));
                remote
                    .client
                    .put_object_lock(
                        &task.destination_bucket,
                        &task.key,
                        retention,
                        v.lock.legal_hold,
                        vec![replica_header(&self.cfg.region, v.last_modified_ms)],
                    )
                    .await?;
                metrics::get()
                    .metadata_only
                    .with_label_values(&[change.as_str()])
                    .inc();
                Ok(Step::Done)
            }
        }
    }

    /// A CopyObject of the destination's latest version onto itself, with
    /// `REPLACE` and everything said about `v`, provided the destination
    /// still holds `v`'s bytes (its ETag): a new version there made of
    /// the bytes it has, none sent. A Godwit destination takes it as a
    /// replica (the replica header), so it keeps the source's time and
    /// never travels back.
    async fn copy_in_place(
        &self,
        task: &ReplicationTask,
        remote: &Remote,
        v: &ObjectVersion,
    ) -> TaskResult {
        if v.sse.as_ref().is_some_and(SseInfo::is_customer) {
            // As `data_key` says: an SSE-C object is never replicated.
            self.data_key(v.sse.as_ref())?;
        }
        let mut headers = object_headers(
            &self.cfg.region,
            v.last_modified_ms,
            &v.headers,
            &v.user_meta,
        );
        headers.push(("x-amz-metadata-directive".into(), "REPLACE".into()));
        headers.push(("x-amz-tagging-directive".into(), "REPLACE".into()));
        if !v.tags.is_empty() {
            headers.push(("x-amz-tagging".into(), tagging_header(&v.tags)));
        }
        headers.extend(lock_headers(&v.lock));
        headers.extend(sse_headers(v.sse.as_ref()));
        match remote
            .client
            .copy_object_in_place(&task.destination_bucket, &task.key, &v.etag, headers)
            .await
        {
            Ok(_) => {
                metrics::get()
                    .metadata_only
                    .with_label_values(&[MetadataChange::SameDataNewVersion.as_str()])
                    .inc();
                Ok(Step::Done)
            }
            // The destination's latest changed since the HEAD: the next
            // attempt looks again (and sends the bytes if they are gone).
            Err(e) if e.status() == Some(412) => {
                Err(TaskError::retryable(&remote_cause(&e), e.to_string()))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// The data key of an encrypted version or upload (None: its data is
    /// in the clear). SSE-C fails for good: the replicator never holds a
    /// customer's key (the key is never stored), so such an object cannot
    /// be read here; its task ends FAILED with the cause `sse-c`.
    pub(crate) fn data_key(&self, sse: Option<&SseInfo>) -> Result<Option<DataKey>, TaskError> {
        let Some(info) = sse else { return Ok(None) };
        if info.is_customer() {
            return Err(TaskError::permanent(
                "sse-c",
                "sse-c: an SSE-C object is not replicated (its key is never stored)",
            ));
        }
        let ring = self.cfg.sse_keys.as_ref().ok_or_else(|| {
            TaskError::permanent(
                "sse-s3",
                "sse-s3: this replicator has no key ring (--sse-key-file)",
            )
        })?;
        ring.open(info)
            .map(Some)
            .map_err(|e| TaskError::permanent("sse-s3", format!("sse-s3: {e}")))
    }

    /// How to open an encrypted version's data (None: in the clear).
    pub(crate) fn sealed_version(&self, v: &ObjectVersion) -> Result<Option<Sealed>, TaskError> {
        let Some(dek) = self.data_key(v.sse.as_ref())? else {
            return Ok(None);
        };
        let info = v.sse.as_ref().expect("a data key comes from a record");
        let parts: Vec<(u64, &[u8])> = v
            .parts
            .iter()
            .map(|p| (p.size, p.sse_nonce.as_slice()))
            .collect();
        let segments = sse::segments_of(info, v.size, &parts)
            .map_err(|e| TaskError::permanent("sse-s3", format!("sse-s3: {e}")))?;
        Ok(Some(Sealed { dek, segments }))
    }

    /// Bytes `[start, end)` of `data` (of the plaintext when `sealed`),
    /// throttled by the remote's limiter and counted.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn body(
        &self,
        task: &ReplicationTask,
        remote: &Remote,
        data: &ObjectData,
        grant: &ReadGrant,
        start: u64,
        end: u64,
        sealed: Option<&Sealed>,
    ) -> ByteStream {
        let raw = match sealed {
            None => read_data_range(self.blocks.clone(), data, grant, start, end),
            Some(s) => {
                let plan = sse::ReadPlan::new(&s.segments, start, end);
                let stored = read_data_range(
                    self.blocks.clone(),
                    data,
                    grant,
                    plan.stored_start,
                    plan.stored_end,
                );
                sse::open_stream(stored, plan, &s.dek)
            }
        };
        let counter = metrics::get()
            .sent_bytes
            .with_label_values(&[&destination_label(task), task.lane.as_str()]);
        let counted: ByteStream = Box::pin(raw.inspect(move |chunk| {
            if let Ok(c) = chunk {
                counter.inc_by(c.len() as u64);
            }
        }));
        throttle(counted, remote.limiter.clone(), task.lane, end - start)
    }
}

/// What opens encrypted data: its data key and segments.
pub(crate) struct Sealed {
    pub dek: DataKey,
    pub segments: Vec<sse::SegmentKey>,
}

/// The header that asks the destination to encrypt what an encrypted
/// (SSE-S3) source holds: it arrives encrypted there too.
pub(crate) fn sse_headers(sse: Option<&SseInfo>) -> Option<(String, String)> {
    sse.filter(|i| !i.is_customer())
        .map(|_| ("x-amz-server-side-encryption".into(), "AES256".into()))
}

/// `remote/bucket`, as `RuleStats::destination` labels it.
pub(crate) fn destination_label(task: &ReplicationTask) -> String {
    format!("{}/{}", task.remote, task.destination_bucket)
}

/// `REPLICA_HEADER: <region>;<original last-modified ms>`.
pub(crate) fn replica_header(region: &str, mtime_ms: i64) -> (String, String) {
    (REPLICA_HEADER.to_string(), format!("{region};{mtime_ms}"))
}

/// The headers that carry an object's fidelity to the destination: content
/// headers, user metadata, the original last-modified (as user metadata, for
/// destinations that are not Godwit) and the replica marker.
pub(crate) fn object_headers(
    region: &str,
    mtime_ms: i64,
    content: &ContentHeaders,
    user_meta: &std::collections::BTreeMap<String, String>,
) -> Headers {
    let mut h: Headers = Vec::new();
    for (name, value) in [
        ("content-type", &content.content_type),
        ("content-encoding", &content.content_encoding),
        ("content-disposition", &content.content_disposition),
        ("content-language", &content.content_language),
        ("cache-control", &content.cache_control),
        ("expires", &content.expires),
    ] {
        if let Some(v) = value {
            h.push((name.to_string(), header_safe(v)));
        }
    }
    for (k, v) in user_meta {
        if k != ORIGINAL_MTIME_META {
            h.push((
                format!("x-amz-meta-{}", k.to_ascii_lowercase()),
                header_safe(v),
            ));
        }
    }
    h.push((
        format!("x-amz-meta-{ORIGINAL_MTIME_META}"),
        rfc3339(mtime_ms),
    ));
    h.push(replica_header(region, mtime_ms));
    h
}

/// Whether what a destination's HEAD shows is said of the bytes as `v`
/// says it: the same user metadata (but the original last-modified time,
/// which differs between versions of the same bytes) and, when `v` has
/// one, the same Content-Type. What a HEAD does not show (tags, Object
/// Lock to a caller without the right) is not compared.
pub(crate) fn metadata_matches(have: &RemoteObject, v: &ObjectVersion) -> bool {
    if let Some(ct) = &v.headers.content_type {
        if have.content_type.as_deref() != Some(header_safe(ct).as_str()) {
            return false;
        }
    }
    let theirs = have
        .user_meta
        .iter()
        .filter(|(k, _)| *k != ORIGINAL_MTIME_META);
    let ours: Vec<(String, String)> = v
        .user_meta
        .iter()
        .filter(|(k, _)| *k != ORIGINAL_MTIME_META)
        .map(|(k, val)| (k.to_ascii_lowercase(), header_safe(val)))
        .collect();
    let mut ours_sorted = ours;
    ours_sorted.sort();
    theirs
        .map(|(k, val)| (k.clone(), val.clone()))
        .eq(ours_sorted)
}

/// Whether a destination's HEAD shows `v` itself: its metadata and its
/// original last-modified time (which every copy the replicator makes
/// carries as user metadata).
pub(crate) fn shows_version(have: &RemoteObject, v: &ObjectVersion) -> bool {
    shows_version_time(have, v) && metadata_matches(have, v)
}

/// Whether a destination's HEAD carries `v`'s original last-modified time.
fn shows_version_time(have: &RemoteObject, v: &ObjectVersion) -> bool {
    have.user_meta.get(ORIGINAL_MTIME_META).map(String::as_str)
        == Some(rfc3339(v.last_modified_ms).as_str())
}

/// The `x-amz-object-lock-*` headers that carry a version's retention and
/// legal hold to the destination (which must have Object Lock, as S3
/// requires of a replication destination for locked objects).
pub(crate) fn lock_headers(lock: &godwit_common::object_lock::VersionLock) -> Headers {
    let mut h: Headers = Vec::new();
    if let Some(r) = &lock.retention {
        h.push(("x-amz-object-lock-mode".into(), r.mode.as_str().into()));
        h.push((
            "x-amz-object-lock-retain-until-date".into(),
            rfc3339(r.retain_until_ms),
        ));
    }
    if let Some(on) = lock.legal_hold {
        let status = if on { "ON" } else { "OFF" };
        h.push(("x-amz-object-lock-legal-hold".into(), status.into()));
    }
    h
}

/// A value that HTTP and SigV4 accept: visible ASCII as is, anything else
/// as an RFC 2047 encoded word, the form S3 itself uses for non-ASCII
/// metadata (<https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html>).
fn header_safe(v: &str) -> String {
    if v.bytes().all(|b| b == b'\t' || (0x20..0x7f).contains(&b)) {
        return v.to_string();
    }
    use base64::Engine;
    format!(
        "=?UTF-8?B?{}?=",
        base64::engine::general_purpose::STANDARD.encode(v.as_bytes())
    )
}

fn rfc3339(ms: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn fidelity_headers_carry_metadata_mtime_and_replica_marker() {
        let content = ContentHeaders {
            content_type: Some("text/csv".into()),
            cache_control: Some("no-cache".into()),
            ..Default::default()
        };
        let meta = BTreeMap::from([
            ("colour".to_string(), "blue".to_string()),
            ("city".to_string(), "Zürich".to_string()),
        ]);
        let h = object_headers("eu-west", 1_700_000_000_123, &content, &meta);
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("content-type"), Some("text/csv"));
        assert_eq!(get("cache-control"), Some("no-cache"));
        assert_eq!(get("content-encoding"), None);
        assert_eq!(get("x-amz-meta-colour"), Some("blue"));
        assert_eq!(get("x-amz-meta-city"), Some("=?UTF-8?B?WsO8cmljaA==?="));
        assert_eq!(
            get("x-amz-meta-godwit-original-last-modified"),
            Some("2023-11-14T22:13:20.123Z")
        );
        assert_eq!(get(REPLICA_HEADER), Some("eu-west;1700000000123"));
    }

    #[test]
    fn lock_headers_carry_retention_and_legal_hold() {
        use godwit_common::object_lock::{LockMode, Retention, VersionLock};
        assert!(lock_headers(&VersionLock::default()).is_empty());
        let h = lock_headers(&VersionLock {
            retention: Some(Retention {
                mode: LockMode::Compliance,
                retain_until_ms: 1_893_456_000_000,
            }),
            legal_hold: Some(true),
        });
        let get = |n: &str| h.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
        assert_eq!(get("x-amz-object-lock-mode"), Some("COMPLIANCE"));
        assert_eq!(
            get("x-amz-object-lock-retain-until-date"),
            Some("2030-01-01T00:00:00Z")
        );
        assert_eq!(get("x-amz-object-lock-legal-hold"), Some("ON"));
    }

    fn version_with(checksums: Checksums, parts: Vec<Checksums>) -> ObjectVersion {
        use godwit_common::types::PartSummary;
        ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "v".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 0,
            size: parts.len() as u64,
            etag: "e-2".into(),
            headers: Default::default(),
            user_meta: Default::default(),
            checksums,
            data: ObjectData::Blocks(vec![]),
            parts: parts
                .into_iter()
                .enumerate()
                .map(|(i, checksums)| PartSummary {
                    number: i as u32 + 1,
                    size: 1,
                    etag: "e".into(),
                    checksums,
                    sse_nonce: vec![],
                })
                .collect(),
            tags: Default::default(),
            owner: String::new(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        }
    }

    /// A FULL_OBJECT multipart object goes over as a FULL_OBJECT upload
    /// whose Complete carries the whole-object CRC; a COMPOSITE one as
    /// COMPOSITE (legacy records: type from the `-N`); parts without the
    /// algorithm's value leave the checksum behind.
    #[test]
    fn multipart_copies_carry_the_checksum_and_its_type() {
        let crc = |v: &str| Checksums {
            crc32: Some(v.into()),
            ..Default::default()
        };
        let whole = Checksums {
            checksum_type: Some(ChecksumType::FullObject),
            ..crc("AAAAAA==")
        };
        let v = version_with(whole, vec![crc("AAAAAQ=="), crc("AAAAAg==")]);
        let c = CarriedChecksum::of_version(&v).unwrap();
        assert_eq!(
            c.create_headers(),
            vec![
                ("x-amz-checksum-algorithm".to_string(), "CRC32".to_string()),
                ("x-amz-checksum-type".to_string(), "FULL_OBJECT".to_string())
            ]
        );
        assert_eq!(
            c.complete_headers(),
            vec![
                ("x-amz-checksum-type".to_string(), "FULL_OBJECT".to_string()),
                ("x-amz-checksum-crc32".to_string(), "AAAAAA==".to_string())
            ]
        );
        assert_eq!(c.part(&v.parts[1].checksums).unwrap().value, "AAAAAg==");

        let legacy = version_with(crc("AAAAAA==-2"), vec![crc("AAAAAQ=="), crc("AAAAAg==")]);
        let c = CarriedChecksum::of_version(&legacy).unwrap();
        assert_eq!(c.checksum_type, ChecksumType::Composite);

        let partless = version_with(
            crc("AAAAAA==-2"),
            vec![crc("AAAAAQ=="), Checksums::default()],
        );
        assert_eq!(CarriedChecksum::of_version(&partless), None);
        assert_eq!(
            CarriedChecksum::of_version(&version_with(Checksums::default(), vec![])),
            None
        );
    }

    #[test]
    fn a_destination_head_shows_the_version_only_with_its_metadata_and_time() {
        let mut v = version_with(Checksums::default(), vec![]);
        v.last_modified_ms = 1_700_000_000_123;
        v.headers.content_type = Some("text/csv".into());
        v.user_meta = BTreeMap::from([
            ("Colour".to_string(), "blue".to_string()),
            ("city".to_string(), "Zürich".to_string()),
        ]);
        let head = |ct: &str, meta: &[(&str, &str)]| RemoteObject {
            size: v.size,
            etag: v.etag.clone(),
            version_id: None,
            replication_status: None,
            replica_of: None,
            content_type: Some(ct.into()),
            user_meta: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        };
        let carried = [
            ("colour", "blue"),
            ("city", "=?UTF-8?B?WsO8cmljaA==?="),
            ("godwit-original-last-modified", "2023-11-14T22:13:20.123Z"),
        ];
        let have = head("text/csv", &carried);
        assert!(metadata_matches(&have, &v));
        assert!(shows_version(&have, &v));
        // The same bytes and metadata of an earlier version (an in-place
        // copy that changed nothing HEAD shows): another version.
        let earlier = head(
            "text/csv",
            &[
                carried[0],
                carried[1],
                ("godwit-original-last-modified", "2023-11-14T22:13:20.000Z"),
            ],
        );
        assert!(metadata_matches(&earlier, &v));
        assert!(!shows_version(&earlier, &v));
        // Metadata that differs: a value, a key too many or too few, the
        // Content-Type.
        assert!(!metadata_matches(
            &head("text/csv", &[("colour", "red"), carried[1]]),
            &v
        ));
        assert!(!metadata_matches(
            &head("text/csv", &[carried[0], carried[1], ("x", "1")]),
            &v
        ));
        assert!(!metadata_matches(&head("text/csv", &[carried[0]]), &v));
        assert!(!metadata_matches(&head("text/plain", &carried), &v));
        // A version without a Content-Type takes the destination's default.
        v.headers.content_type = None;
        assert!(metadata_matches(&head("binary/octet-stream", &carried), &v));
    }

    #[test]
    fn meta_errors_map_to_the_right_outcome_class() {
        assert!(matches!(
            TaskError::from(MetaError::NoSuchVersion),
            TaskError::SourceGone
        ));
        assert!(matches!(
            TaskError::from(MetaError::NoSuchUpload),
            TaskError::SourceGone
        ));
        assert!(matches!(
            TaskError::from(MetaError::Unavailable("x".into())),
            TaskError::Retryable(_)
        ));
        assert!(matches!(
            TaskError::from(MetaError::InvalidArgument("x".into())),
            TaskError::Permanent(_)
        ));
    }
}

/// How an object's additional checksum (S3 keeps one per object) goes to
/// the destination of a multipart copy: the destination upload is created
/// with the same algorithm and `x-amz-checksum-type`, every part carries
/// its own value (S3 wants it on each part of such an upload, and in the
/// Complete for COMPOSITE), and the Complete carries the object's value,
/// which the destination compares with what it computes (COMPOSITE: the
/// same parts give the same value; FULL_OBJECT: the CRC combined from the
/// same bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CarriedChecksum {
    pub algorithm: &'static str,
    pub checksum_type: ChecksumType,
    /// The object's value, once the source object exists.
    pub object: Option<String>,
}

impl CarriedChecksum {
    /// A completed multipart object's checksum, when every part has its
    /// value of the object's algorithm (parts stored before checksums were
    /// kept have none: the object then goes without, as before).
    pub fn of_version(v: &ObjectVersion) -> Option<CarriedChecksum> {
        let object = PartChecksum::first_of(&v.checksums)?;
        let checksum_type = v.checksums.effective_type()?;
        if v.parts.is_empty()
            || !v
                .parts
                .iter()
                .all(|p| PartChecksum::of(&p.checksums, object.algorithm).is_some())
        {
            return None;
        }
        Some(CarriedChecksum {
            algorithm: object.algorithm,
            checksum_type,
            object: Some(object.value),
        })
    }

    /// A source upload's algorithm and type (uploads from before the type
    /// was kept are COMPOSITE); the object's value comes at completion.
    pub fn of_upload(info: &UploadInfo) -> Option<CarriedChecksum> {
        let name = info.checksum_algorithm.as_deref()?;
        let algorithm = ["CRC32", "CRC32C", "CRC64NVME", "SHA1", "SHA256"]
            .into_iter()
            .find(|a| a.eq_ignore_ascii_case(name))?;
        Some(CarriedChecksum {
            algorithm,
            checksum_type: info.checksum_type.unwrap_or(ChecksumType::Composite),
            object: None,
        })
    }

    /// Headers of the destination's CreateMultipartUpload.
    pub fn create_headers(&self) -> Headers {
        vec![
            ("x-amz-checksum-algorithm".into(), self.algorithm.into()),
            (
                "x-amz-checksum-type".into(),
                self.checksum_type.as_str().into(),
            ),
        ]
    }

    /// A part's value of the algorithm.
    pub fn part(&self, c: &Checksums) -> Option<PartChecksum> {
        PartChecksum::of(c, self.algorithm)
    }

    /// Headers of the destination's CompleteMultipartUpload.
    pub fn complete_headers(&self) -> Headers {
        let mut h: Headers = vec![(
            "x-amz-checksum-type".into(),
            self.checksum_type.as_str().into(),
        )];
        if let Some(value) = &self.object {
            h.push(
                PartChecksum {
                    algorithm: self.algorithm,
                    value: value.clone(),
                }
                .header(),
            );
        }
        h
    }
}
