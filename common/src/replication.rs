//! Replication vocabulary shared by meta (rules, the outbox queue, status),
//! the gateway (the S3 replication API, replica writes) and the
//! `replication` worker (leases tasks, talks to remotes).
//!
//! The queue is a transactional outbox (docs/architecture.md, invariant 5): the Raft
//! entry that commits a mutation appends its tasks in the same rocksdb
//! write batch; workers lease them, and a task leaves the queue only when
//! its outcome is acknowledged.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Header a replication worker sets on writes to another Godwit region:
/// the value is `<source region>;<original last-modified ms>`. Writes that
/// carry it become replicas (status `REPLICA`) and are never replicated
/// again, which is what makes two-way rules loop-free.
pub const REPLICA_HEADER: &str = "x-godwit-replica-of";
/// User-metadata key under which a non-Godwit destination keeps the
/// original last-modified time (RFC 3339).
pub const ORIGINAL_MTIME_META: &str = "godwit-original-last-modified";

/// A registered remote region (or any S3 endpoint).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct RemoteInfo {
    pub name: String,
    /// Base URL, e.g. `http://127.0.0.1:9100`.
    pub endpoint: String,
    pub access_key: String,
    /// Never returned by listings or logged.
    pub secret_key: String,
    /// Region to sign for.
    pub region: String,
    /// Bytes per second shared by every lane to this remote; RTC tasks
    /// take what they need first.
    #[serde(default)]
    pub bandwidth_limit: Option<u64>,
    /// PEM CA bundle trusted for this remote's `https://` endpoint, on top
    /// of the system's roots and `--ca-file` (absent in records written
    /// before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_pem: Option<String>,
}

/// A bucket's replication configuration, as PutBucketReplication stores it.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicationConfig {
    /// `<Role>`, kept verbatim (Godwit has no IAM).
    pub role: String,
    pub rules: Vec<ReplicationRule>,
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleFilter {
    /// Keys must start with this.
    pub prefix: String,
    /// Objects must carry every one of these tags.
    pub tags: BTreeMap<String, String>,
}

impl RuleFilter {
    pub fn matches(&self, key: &str, tags: &BTreeMap<String, String>) -> bool {
        key.starts_with(&self.prefix) && self.tags.iter().all(|(k, v)| tags.get(k) == Some(v))
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplicationRule {
    pub id: String,
    /// Higher wins when several rules to one destination match.
    pub priority: i32,
    pub enabled: bool,
    pub filter: RuleFilter,
    /// True when the rule used the deprecated V1 `<Prefix>` (no `<Filter>`):
    /// GetBucketReplication answers in the same schema.
    #[serde(default)]
    pub v1_prefix: bool,
    pub delete_marker_replication: bool,
    /// Replicate permanent version deletes (a Godwit/MinIO extension; AWS
    /// never does).
    #[serde(default)]
    pub version_delete_replication: bool,
    pub existing_object_replication: bool,
    /// `arn:aws:s3:::name` as given.
    pub destination_arn: String,
    /// The destination bucket name (from the ARN).
    pub destination_bucket: String,
    /// The registered remote that holds the destination bucket.
    pub remote: String,
    pub storage_class: Option<String>,
    /// Replication Time Control: tasks go to the RTC lane.
    pub rtc: bool,
    /// RTC threshold (S3 allows only 15).
    pub rtc_minutes: u32,
    pub metrics: bool,
    /// Set on rules made by the OSS API (`POST /?replication&comp=add`):
    /// what OSS says about a rule that S3 does not. `None` for rules of the
    /// AWS API.
    #[serde(default)]
    pub oss: Option<OssRuleInfo>,
}

/// What an OSS replication rule carries beyond the shared fields
/// (Alibaba Cloud OSS API: PutBucketReplication; docs/compatibility.md,
/// "OSS replication API"). An OSS rule may replicate between two
/// unversioned buckets, which S3 forbids.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct OssRuleInfo {
    /// `Destination/Location` as the client wrote it (`oss-<remote>`).
    pub location: String,
    /// `Destination/TransferType` (`internal` or `oss_acc`), when given.
    #[serde(default)]
    pub transfer_type: Option<String>,
    /// `Action`, normalized: `ALL`, or some of `PUT`, `DELETE`, `ABORT`.
    pub actions: Vec<String>,
    /// `PrefixSet`: a key must start with one of these (empty: any key).
    #[serde(default)]
    pub prefixes: Vec<String>,
    #[serde(default)]
    pub sync_role: Option<String>,
    /// Creation time (ms): the rule reads `starting` until its worker
    /// picked it up.
    #[serde(default)]
    pub created_ms: i64,
    /// DeleteBucketReplication was called: the rule routes nothing new and
    /// is removed once its queued tasks drained (GET shows `closing`).
    #[serde(default)]
    pub closing: bool,
}

/// The OSS API's edits of one rule (OSS adds, closes and changes rules one
/// at a time, where S3 replaces the whole configuration). Each is applied
/// atomically by meta (`ObjectMeta::edit_replication_rule`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum RuleEdit {
    /// Appends a rule. `TooManyReplicationRules` when the bucket already
    /// has `max_rules`; `BucketReplicationAlreadyExist` when a rule to the
    /// same destination exists; an ID in use is `InvalidArgument`.
    Add {
        rule: Box<ReplicationRule>,
        max_rules: usize,
    },
    /// PutBucketRTC: moves the rule's new writes to the RTC lane (or back).
    SetRtc {
        rule_id: String,
        enabled: bool,
        minutes: u32,
    },
    /// DeleteBucketReplication: the rule stops routing new writes and
    /// becomes `closing`.
    Close { rule_id: String },
    /// Removes a closing rule (the worker, once the rule's tasks drained);
    /// the configuration goes with its last rule.
    Remove { rule_id: String },
}

impl ReplicationRule {
    /// Whether the rule takes `key` (with `tags`; `None`: unknown, decide
    /// on the key alone): its filter, and for OSS rules the prefix set.
    pub fn matches(&self, key: &str, tags: Option<&BTreeMap<String, String>>) -> bool {
        let filter = match tags {
            Some(tags) => self.filter.matches(key, tags),
            None => key.starts_with(&self.filter.prefix),
        };
        filter
            && self.oss.as_ref().is_none_or(|o| {
                o.prefixes.is_empty() || o.prefixes.iter().any(|p| key.starts_with(p.as_str()))
            })
    }

    /// True for an OSS rule being removed (DeleteBucketReplication).
    pub fn is_closing(&self) -> bool {
        self.oss.as_ref().is_some_and(|o| o.closing)
    }

    /// The lane new writes of this rule go to.
    pub fn lane(&self) -> Lane {
        if self.rtc {
            Lane::Rtc
        } else {
            Lane::Standard
        }
    }

    /// `remote/bucket`, the label of a destination in metrics and status.
    pub fn destination_label(&self) -> String {
        format!("{}/{}", self.remote, self.destination_bucket)
    }
}

/// Worker lanes, in priority order: a backlog in a lower lane never delays
/// a higher one.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Lane {
    Rtc,
    Standard,
    Backfill,
}

impl Lane {
    pub const ALL: [Lane; 3] = [Lane::Rtc, Lane::Standard, Lane::Backfill];

    pub fn as_str(self) -> &'static str {
        match self {
            Lane::Rtc => "rtc",
            Lane::Standard => "standard",
            Lane::Backfill => "backfill",
        }
    }

    pub fn index(self) -> u8 {
        self as u8
    }
}

#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum TaskKind {
    /// A new version (PutObject, CopyObject, CompleteMultipartUpload when
    /// the parts were not streamed).
    NewVersion,
    /// A delete marker (when the rule's DeleteMarkerReplication is on).
    DeleteMarker,
    /// A version removed permanently (when the rule allows).
    VersionDelete,
    /// One multipart part was committed at the source.
    PartCommitted { upload_id: String, part_number: u32 },
    /// CompleteMultipartUpload at the source: complete at the destination
    /// with the same parts.
    MultipartCompleted { upload_id: String },
    /// AbortMultipartUpload at the source.
    MultipartAborted { upload_id: String },
    /// Tags of an existing version changed (PutObjectTagging,
    /// DeleteObjectTagging): PutObjectTagging at the destination.
    TagsChanged,
    /// A key of an unversioned bucket was deleted (its "null" version is
    /// gone, no marker remains): delete the key at the destination, unless
    /// the source has written it again since (OSS rules with Action ALL or
    /// DELETE).
    KeyDeleted,
    /// What is said about the bytes changed, not the bytes: the
    /// destination already holds them and gets the new metadata without
    /// them crossing again (falling back to the whole version when it
    /// does not). A build from before this variant cannot read such a
    /// task; every build reads the tasks of older ones.
    MetadataChanged { change: MetadataChange },
}

/// What a `TaskKind::MetadataChanged` task carries to the destination.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetadataChange {
    /// A new version whose data is the data of the version it replaced as
    /// the key's latest (a CopyObject of the key onto itself with
    /// `x-amz-metadata-directive: REPLACE`, which names the same blocks):
    /// the destination makes its new version by the same copy in place.
    SameDataNewVersion,
    /// The Object Lock retention or legal hold of an existing version
    /// (PutObjectRetention, PutObjectLegalHold): set on the destination's
    /// copy of that version, as AWS replicates retention changes.
    ObjectLock,
}

impl MetadataChange {
    pub fn as_str(self) -> &'static str {
        match self {
            MetadataChange::SameDataNewVersion => "same_data_version",
            MetadataChange::ObjectLock => "object_lock",
        }
    }
}

impl TaskKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            TaskKind::NewVersion => "new_version",
            TaskKind::DeleteMarker => "delete_marker",
            TaskKind::VersionDelete => "version_delete",
            TaskKind::PartCommitted { .. } => "part",
            TaskKind::MultipartCompleted { .. } => "multipart_complete",
            TaskKind::MultipartAborted { .. } => "multipart_abort",
            TaskKind::TagsChanged => "tags",
            TaskKind::KeyDeleted => "key_delete",
            TaskKind::MetadataChanged { .. } => "metadata",
        }
    }
}

/// One unit of replication work, as leased by a worker.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ReplicationTask {
    /// Opaque, unique; names the task in `ack_tasks`.
    pub id: String,
    pub bucket: String,
    pub key: String,
    /// The source version concerned (None for multipart-part tasks).
    pub version_id: Option<String>,
    pub kind: TaskKind,
    pub rule_id: String,
    pub remote: String,
    pub destination_bucket: String,
    pub lane: Lane,
    /// Commit time at the source (ms): replication latency is measured
    /// from here to the destination's acknowledgement.
    pub created_ms: i64,
    /// Bytes this task moves (0 for deletes).
    pub size: u64,
    /// Failed attempts so far.
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    /// For RTC rules: the threshold in minutes.
    #[serde(default)]
    pub rtc_minutes: Option<u32>,
}

/// What a worker reports for a leased task.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub enum TaskOutcome {
    /// The destination acknowledged (or already had it): the task leaves
    /// the queue.
    Done {
        /// Source commit to destination ack, ms.
        latency_ms: u64,
    },
    /// A transient failure: retry at `retry_at_ms` (the worker's backoff
    /// with jitter); meta turns it into `Failed` after the configured
    /// number of attempts.
    Retry {
        error: String,
        retry_at_ms: i64,
        /// What a failure is counted under if this retry turns the task
        /// FAILED (see `Failed`).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        cause: String,
    },
    /// Not retryable (e.g. the destination bucket does not exist).
    Failed {
        error: String,
        /// A short class of `error`, the same for every task that failed
        /// alike: the remote's S3 error code (`SignatureDoesNotMatch`,
        /// `NoSuchBucket`), `HTTP 403` when it sent none, `transport`,
        /// `sse-c`, ... (the SLA report counts failures by it; empty in
        /// outcomes from before it existed).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        cause: String,
    },
}

/// `x-amz-replication-status` of a version.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplicationStatus {
    Pending,
    Completed,
    Failed,
    Replica,
}

impl ReplicationStatus {
    pub fn as_header(self) -> &'static str {
        match self {
            ReplicationStatus::Pending => "PENDING",
            ReplicationStatus::Completed => "COMPLETED",
            ReplicationStatus::Failed => "FAILED",
            ReplicationStatus::Replica => "REPLICA",
        }
    }
}

/// Where a replica came from (set on versions written with `REPLICA_HEADER`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct ReplicaOrigin {
    pub region: String,
    pub original_mtime_ms: i64,
}

/// Per rule, destination and lane: the figures behind `/metrics` and
/// `godwit admin replication status`.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct RuleStats {
    pub bucket: String,
    pub rule_id: String,
    pub destination: String,
    pub lane: String,
    pub pending_operations: u64,
    pub pending_bytes: u64,
    /// Age of the oldest pending task, seconds (0 when none).
    pub oldest_pending_age_seconds: f64,
    pub completed_operations_total: u64,
    pub failed_operations_total: u64,
    /// Tasks of an RTC rule acknowledged after the threshold.
    pub rtc_threshold_missed_total: u64,
    /// Existing-object backfill: fraction of keys scanned (None: no backfill).
    pub backfill_progress_ratio: Option<f64>,
    /// Existing-object backfill: what the scan found and did so far (on
    /// the backfill lane's row; None: no backfill).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill: Option<BackfillProgress>,
    /// Seconds until the backfill's scan is through the bucket at its rate
    /// so far (None: not started or done).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backfill_eta_seconds: Option<f64>,
}

/// Existing-object replication's progress on one rule, kept in meta
/// (`repl_state`) and saved a page at a time by the worker, so a restarted
/// worker resumes after `cursor`.
///
/// A comparing scan (`compared`) lists the source's latest versions and the
/// destination's keys page by page, merge-joined by key (the verify
/// machinery at level 1), and sends only the keys missing at the
/// destination or differing in size or ETag: a pre-seeded destination
/// receives what differs and nothing else. The blind scan, the fallback
/// when the destination cannot be listed, sends every key.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct BackfillProgress {
    /// Source keys looked at (each key once, whatever the outcome).
    pub scanned: u64,
    /// The bucket's key count when the scan started (approximate: keys
    /// written meanwhile are not in it).
    pub total: u64,
    pub done: bool,
    /// The last key covered; the next page starts after it.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Whether the scan compares with the destination's listing.
    #[serde(default)]
    pub compared: bool,
    /// Keys sent: missing at the destination or differing from it (every
    /// key the rule replicates, in a blind scan).
    #[serde(default)]
    pub sent: u64,
    /// Keys the destination already holds the same (size and ETag): not sent.
    #[serde(default)]
    pub skipped: u64,
    /// Keys that differ but whose destination copy was written after the
    /// source's version: last-writer-wins keeps it, so not sent.
    #[serde(default)]
    pub newer_at_destination: u64,
    /// Keys at the destination only (within the rule's prefix).
    #[serde(default)]
    pub extra_at_destination: u64,
    /// Proposer clock of the first and the latest page.
    #[serde(default)]
    pub started_ms: i64,
    #[serde(default)]
    pub updated_ms: i64,
}

impl BackfillProgress {
    /// Fraction of the bucket's keys scanned.
    pub fn ratio(&self) -> f64 {
        if self.done {
            1.0
        } else if self.total == 0 {
            0.0
        } else {
            (self.scanned as f64 / self.total as f64).min(1.0)
        }
    }

    /// Keys scanned per second so far (None: under a second of history).
    pub fn rate(&self) -> Option<f64> {
        let secs = (self.updated_ms - self.started_ms) as f64 / 1000.0;
        (secs >= 1.0 && self.scanned > 0).then(|| self.scanned as f64 / secs)
    }

    /// Seconds left at the rate so far (None: done, or no rate yet).
    pub fn eta_seconds(&self) -> Option<f64> {
        if self.done {
            return None;
        }
        let left = self.total.saturating_sub(self.scanned) as f64;
        self.rate().map(|r| left / r)
    }
}

/// One page of a comparing backfill, as the worker saves it: the keys it
/// sends and what it found about the others. Applied only while the rule's
/// cursor is still `from` (compare-and-set), so a step sent twice counts
/// once.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct BackfillStep {
    pub bucket: String,
    pub rule_id: String,
    /// The cursor the page started after (None: the first page).
    pub from: Option<String>,
    /// The last key the page covered.
    pub to: Option<String>,
    /// The bucket has no key after `to`.
    pub done: bool,
    /// Keys missing at the destination or differing from it: their latest
    /// versions are queued in the backfill lane.
    pub send: Vec<String>,
    pub skipped: u64,
    pub newer_at_destination: u64,
    pub extra_at_destination: u64,
}

/// Source-side state of a multipart upload whose parts stream to
/// destinations. Meta keeps it after the source completes or aborts, until
/// the `MultipartCompleted` / `MultipartAborted` tasks are acknowledged.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct ReplUpload {
    pub upload: crate::types::UploadInfo,
    /// The parts committed at the source, ascending.
    pub parts: Vec<crate::types::PartRecord>,
    /// Read tokens for the parts' blocks.
    pub grant: crate::types::ReadGrant,
    /// Destination label (`remote/bucket`) -> the destination's upload id.
    pub remote_upload_ids: BTreeMap<String, String>,
    /// Set once the source completed: the new version and the part list
    /// the client sent (number, unquoted etag).
    pub completed: Option<(String, Vec<(u32, String)>)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{decode, encode, Format};

    fn task(kind: TaskKind) -> ReplicationTask {
        ReplicationTask {
            id: "0000000000000001".into(),
            bucket: "b".into(),
            key: "k".into(),
            version_id: Some("v".into()),
            kind,
            rule_id: "r".into(),
            remote: "eu".into(),
            destination_bucket: "d".into(),
            lane: Lane::Standard,
            created_ms: 7,
            size: 0,
            attempts: 0,
            last_error: None,
            rtc_minutes: None,
        }
    }

    #[test]
    fn backfill_eta_follows_the_rate_so_far_and_old_records_still_read() {
        let mut p = BackfillProgress {
            scanned: 250_000,
            total: 1_000_000,
            started_ms: 10_000,
            updated_ms: 15_000,
            ..Default::default()
        };
        assert_eq!(p.rate(), Some(50_000.0));
        assert_eq!(p.eta_seconds(), Some(15.0));
        assert_eq!(p.ratio(), 0.25);
        p.updated_ms = 10_500; // under a second of history: no rate yet
        assert_eq!(p.eta_seconds(), None);
        p.done = true;
        assert_eq!((p.eta_seconds(), p.ratio()), (None, 1.0));
        // A record of a build before cursors and counts were kept.
        let old: BackfillProgress =
            decode(br#"{"scanned":3,"total":5,"done":false}"#).expect("old JSON record");
        assert_eq!((old.scanned, old.cursor, old.sent), (3, None, 0));
    }

    #[test]
    fn metadata_tasks_round_trip_in_both_formats() {
        for change in [
            MetadataChange::SameDataNewVersion,
            MetadataChange::ObjectLock,
        ] {
            let t = task(TaskKind::MetadataChanged { change });
            for f in [Format::Json, Format::Packed] {
                assert_eq!(decode::<ReplicationTask>(&encode(f, &t)).unwrap(), t);
            }
        }
    }

    #[test]
    fn tasks_written_before_metadata_changes_still_decode() {
        // As builds before `MetadataChanged` wrote them (JSON rows).
        let old = br#"{"id":"1","bucket":"b","key":"k","version_id":"v","kind":"TagsChanged","rule_id":"r","remote":"eu","destination_bucket":"d","lane":"Standard","created_ms":7,"size":0,"attempts":0}"#;
        let t: ReplicationTask = decode(old).unwrap();
        assert_eq!(t.kind, TaskKind::TagsChanged);
        let old = br#"{"id":"1","bucket":"b","key":"k","version_id":null,"kind":{"PartCommitted":{"upload_id":"u","part_number":2}},"rule_id":"r","remote":"eu","destination_bucket":"d","lane":"Rtc","created_ms":7,"size":5,"attempts":1}"#;
        let t: ReplicationTask = decode(old).unwrap();
        assert_eq!(
            t.kind,
            TaskKind::PartCommitted {
                upload_id: "u".into(),
                part_number: 2
            }
        );
        // And packed rows of every older kind.
        let t = task(TaskKind::NewVersion);
        assert_eq!(
            decode::<ReplicationTask>(&encode(Format::Packed, &t)).unwrap(),
            t
        );
    }
}
