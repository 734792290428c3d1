//! The doors to the metadata service, one per role. Each contract is one
//! file: a request enum, a response enum and a trait whose only required
//! method is `call(request) -> response`; the typed methods callers use
//! (`get_bucket(name)`, `heartbeat(hb)`, ...) are provided on top of it.
//!
//! | contract | file | held by |
//! |---|---|---|
//! | `ObjectMeta` | `objects.rs` | gateway (S3/OSS API), replication worker, admin (key and remote reads), bench |
//! | `BlockMeta` | `blocks.rs` | datanodes, the gateway's and worker's block path (`BlockRouter`), repair |
//! | `ReplicationMeta` | `replication.rs` | replication worker |
//! | `AdminMeta` | `admin.rs` | admin API and CLI, role wiring (root key) |
//!
//! `godwit_meta::MetaNode` implements each `call` with one match (its arms
//! call the node's logic); `net::MetaClient` implements them all with one
//! generic path: the request enum is sent to `POST /meta/v2/<contract>`
//! and the response enum comes back. Adding a call is one request variant
//! (plus a response variant when it returns a new type), one typed method
//! here, and one match arm in `godwit_meta`.
//!
//! Every read is linearizable (Raft read-index on the leader); every write
//! is one Raft entry, acknowledged only after it is durable on a quorum.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::error::MetaError;

pub mod admin;
pub mod blocks;
pub mod objects;
pub mod replication;

pub use admin::{AdminMeta, AdminRequest, AdminResponse};
pub use blocks::{BlockMeta, BlockRequest, BlockResponse};
pub use objects::{ObjectMeta, ObjectRequest, ObjectResponse};
pub use replication::{ReplicationMeta, ReplicationRequest, ReplicationResponse};

pub type MetaResult<T> = Result<T, MetaError>;

/// A contract's request enum, as the network door carries it.
pub trait MetaRequest: Serialize + DeserializeOwned + Send + Sync + 'static {
    type Response: Serialize + DeserializeOwned + Send + 'static;
    /// The last segment of the contract's endpoint, `/meta/v2/<CONTRACT>`.
    const CONTRACT: &'static str;
    /// The call's name, for logs (never its arguments: some carry secrets).
    fn name(&self) -> &'static str;
    /// Changes nothing, or repeating it is harmless: the client retries it
    /// after any failure and sends it without a request id.
    fn retry_safe(&self) -> bool;
    /// Scans much of a column family: given the long attempt timeout.
    fn slow(&self) -> bool;
}

/// Encoding of requests and responses on the wire (`crate::codec`): the
/// client sends the packed format, the server decodes either and answers
/// in the format it was asked in, and a client talking to a build that
/// reads JSON only (it answers 400 to a packed body) falls back to JSON.
pub mod codec {
    pub use crate::codec::{decode, encode, Format};
}

/// A response variant that does not belong to the request: a bug on the
/// answering side. Names only the variant expected (a response may carry
/// secrets).
pub fn unexpected(expected: &str) -> MetaError {
    MetaError::Internal(format!("meta answered something else than {expected}"))
}

/// `ask!(self, Request::X { .. } => Response::Y)`: sends the request
/// through `call` and unpacks the one response variant it must get.
macro_rules! ask {
    ($meta:expr, $req:expr => $resp:path) => {
        match $meta.call($req).await? {
            $resp(v) => Ok(v),
            _ => Err($crate::meta_api::unexpected(stringify!($resp))),
        }
    };
}
pub(crate) use ask;

/// Declares a request enum and its `name()` (the variant's name).
macro_rules! request_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident {
            $(
                $(#[$vm:meta])*
                $variant:ident $({ $( $(#[$fm:meta])* $field:ident : $ty:ty ),* $(,)? })?
            ),* $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
        pub enum $name {
            $(
                $(#[$vm])*
                $variant $({ $( $(#[$fm])* $field : $ty ),* })?
            ),*
        }

        impl $name {
            /// The variant's name, for logs.
            pub fn variant_name(&self) -> &'static str {
                match self {
                    $( Self::$variant { .. } => stringify!($variant) ),*
                }
            }
        }
    };
}
pub(crate) use request_enum;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replication::{Lane, TaskOutcome};
    use crate::types::{AccessKey, BucketInfo, VersioningState};

    #[test]
    fn requests_and_answers_cross_the_codec_unchanged() {
        let req = ObjectRequest::GetObject {
            bucket: "b".into(),
            key: "k".into(),
            version_id: None,
        };
        let back: ObjectRequest =
            codec::decode(&codec::encode(codec::Format::Packed, &req)).unwrap();
        assert!(matches!(back, ObjectRequest::GetObject { key, .. } if key == "k"));
        let ok: MetaResult<ObjectResponse> = Ok(ObjectResponse::Bucket(BucketInfo {
            name: "b".into(),
            created_ms: 1,
            region: "r".into(),
            versioning: VersioningState::Enabled,
            owner: "o".into(),
            policy: None,
            access: Default::default(),
            config: Default::default(),
        }));
        let back: MetaResult<ObjectResponse> =
            codec::decode(&codec::encode(codec::Format::Packed, &ok)).unwrap();
        assert!(matches!(back, Ok(ObjectResponse::Bucket(b)) if b.name == "b"));
        let err: MetaResult<BlockResponse> = Err(MetaError::NoSuchBucket);
        let back: MetaResult<BlockResponse> =
            codec::decode(&codec::encode(codec::Format::Json, &err)).unwrap();
        assert_eq!(back.unwrap_err(), MetaError::NoSuchBucket);
    }

    /// Writes carry a request id (meta applies them once); only reads and
    /// writes harmless to repeat go without.
    #[test]
    fn only_reads_and_harmless_writes_are_retried_without_a_request_id() {
        let writes = [
            ObjectRequest::DeleteBucket { name: "b".into() }.retry_safe(),
            ObjectRequest::SetVersioning {
                bucket: "b".into(),
                state: VersioningState::Enabled,
            }
            .retry_safe(),
            ReplicationRequest::AckTasks {
                acks: vec![("t".into(), TaskOutcome::Done { latency_ms: 1 })],
            }
            .retry_safe(),
            ReplicationRequest::LeaseTasks {
                lane: Lane::Rtc,
                max: 1,
                lease_ms: 1,
            }
            .retry_safe(),
            BlockRequest::ReportSlowDatanode {
                node: 1,
                reason: "r".into(),
            }
            .retry_safe(),
            AdminRequest::PutAccessKey {
                key: AccessKey {
                    access_key_id: "a".into(),
                    secret_access_key: "s".into(),
                    name: "n".into(),
                    created_ms: 0,
                    is_root: false,
                    account: String::new(),
                },
            }
            .retry_safe(),
            AdminRequest::RetryFailed { bucket: "b".into() }.retry_safe(),
        ];
        assert!(writes.iter().all(|safe| !safe), "{writes:?}");
        let reads = [
            ObjectRequest::ListBuckets.retry_safe(),
            ObjectRequest::ListRemotes.retry_safe(),
            BlockRequest::AllocateBlocks { count: 1 }.retry_safe(),
            BlockRequest::ListDatanodes.retry_safe(),
            ReplicationRequest::ReplicationUpload {
                bucket: "b".into(),
                key: "k".into(),
                upload_id: "u".into(),
            }
            .retry_safe(),
            AdminRequest::Status.retry_safe(),
            AdminRequest::ReplicationReport {
                bucket: "b".into(),
                rule_id: None,
                period_ms: 1,
            }
            .retry_safe(),
            AdminRequest::FailedTasks {
                bucket: "b".into(),
                limit: 1,
            }
            .retry_safe(),
        ];
        assert!(reads.iter().all(|safe| *safe), "{reads:?}");
        assert_eq!(ObjectRequest::ListBuckets.name(), "ListBuckets");
        assert_eq!(
            BlockRequest::StrayBlocks {
                node: 1,
                ids: vec![],
                grace_ms: 0
            }
            .name(),
            "StrayBlocks"
        );
    }
}
