//! `AdminMeta`: what the operator changes. Raft status, the datanodes'
//! state and their decommissioning, access keys, remotes, and requeuing
//! failed replication tasks.
//!
//! Held by the admin API and CLI and by the role wiring (which installs
//! the root key). Reads the S3 path needs too (one access key, the
//! remotes, replication figures) live in `ObjectMeta`; the datanode list
//! in `BlockMeta`.

use async_trait::async_trait;

use super::{ask, request_enum, MetaRequest, MetaResult};
use crate::replication::*;
use crate::types::*;

request_enum! {
    /// One `AdminMeta` call and its arguments.
    pub enum AdminRequest {
        Status,
        DatanodeStatus,
        DecommissionDatanode { id: NodeId },
        PutAccessKey { key: AccessKey },
        ListAccessKeys,
        DeleteAccessKey { access_key_id: String },
        PutRemote { remote: RemoteInfo },
        DeleteRemote { name: String },
        RetryFailed { bucket: String },
    }
}

/// What an `AdminMeta` call answers, by type.
#[derive(serde::Serialize, serde::Deserialize, Debug, Clone)]
pub enum AdminResponse {
    Done(()),
    Status(MetaStatus),
    Datanodes(Vec<DatanodeStatus>),
    AccessKey(AccessKey),
    AccessKeys(Vec<AccessKey>),
    Count(u64),
}

impl MetaRequest for AdminRequest {
    type Response = AdminResponse;
    const CONTRACT: &'static str = "admin";

    fn name(&self) -> &'static str {
        self.variant_name()
    }

    fn retry_safe(&self) -> bool {
        use AdminRequest::*;
        matches!(self, Status | DatanodeStatus | ListAccessKeys)
    }

    fn slow(&self) -> bool {
        matches!(
            self,
            AdminRequest::DatanodeStatus | AdminRequest::RetryFailed { .. }
        )
    }
}

/// Implementors write `call`; the typed methods are for callers and are
/// not overridden.
#[async_trait]
pub trait AdminMeta: Send + Sync + 'static {
    async fn call(&self, req: AdminRequest) -> MetaResult<AdminResponse>;

    /// This meta node's Raft view: state, term, leader, log and members.
    async fn status(&self) -> MetaResult<MetaStatus> {
        ask!(self, AdminRequest::Status => AdminResponse::Status)
    }
    /// Every registered datanode with its state, liveness and usage.
    async fn datanode_status(&self) -> MetaResult<Vec<DatanodeStatus>> {
        ask!(self, AdminRequest::DatanodeStatus => AdminResponse::Datanodes)
    }
    /// Starts draining a datanode: its copies move to other nodes, then it
    /// becomes `Decommissioned`. `InvalidArgument` for an unknown id.
    async fn decommission_datanode(&self, id: NodeId) -> MetaResult<()> {
        ask!(self, AdminRequest::DecommissionDatanode { id } => AdminResponse::Done)
    }
    /// Creates the key when absent (used for the root key at start-up);
    /// returns the stored key.
    async fn put_access_key(&self, key: AccessKey) -> MetaResult<AccessKey> {
        ask!(self, AdminRequest::PutAccessKey { key } => AdminResponse::AccessKey)
    }
    async fn list_access_keys(&self) -> MetaResult<Vec<AccessKey>> {
        ask!(self, AdminRequest::ListAccessKeys => AdminResponse::AccessKeys)
    }
    async fn delete_access_key(&self, access_key_id: &str) -> MetaResult<()> {
        let req = AdminRequest::DeleteAccessKey {
            access_key_id: access_key_id.into(),
        };
        ask!(self, req => AdminResponse::Done)
    }
    /// Adds or replaces a remote.
    async fn put_remote(&self, remote: RemoteInfo) -> MetaResult<()> {
        ask!(self, AdminRequest::PutRemote { remote } => AdminResponse::Done)
    }
    /// `NoSuchRemote`; `InvalidRequest` while a rule still names it.
    async fn delete_remote(&self, name: &str) -> MetaResult<()> {
        ask!(self, AdminRequest::DeleteRemote { name: name.into() } => AdminResponse::Done)
    }
    /// Puts a bucket's failed tasks back in their lanes; returns how many.
    async fn retry_failed(&self, bucket: &str) -> MetaResult<u64> {
        let req = AdminRequest::RetryFailed {
            bucket: bucket.into(),
        };
        ask!(self, req => AdminResponse::Count)
    }
}
