//! The meta contracts on `MetaNode`: each contract's `call` is one match
//! (at the end of this file) whose arms run the node's logic, here, in
//! `repl_api.rs` and in `tier.rs`. Writes become commands committed
//! through Raft; reads pass the read-index barrier and then read rocksdb
//! directly.

use std::sync::Arc;

use async_trait::async_trait;
use godwit_common::block_token::{self, BlockOp};
use godwit_common::meta_api::*;
use godwit_common::replication::*;
use godwit_common::types::*;
use godwit_common::MetaError;
use rocksdb::{IteratorMode, DB};

use crate::command::{Command, Reply};
use crate::listing;
use crate::node::{block_id, random_id, upload_id, MetaNode};
use crate::store::*;

/// Most blocks one `allocate_blocks` call hands out.
const MAX_BLOCKS_PER_ALLOCATION: usize = 10_000;

fn unexpected(r: Reply) -> MetaError {
    MetaError::Internal(format!("unexpected state machine reply {r:?}"))
}

fn scan_all<T: serde::de::DeserializeOwned>(db: &DB, cf_name: &str) -> MetaResult<Vec<T>> {
    db.iterator_cf(cf(db, cf_name), IteratorMode::Start)
        .map(|item| decode(&item.map_err(db_err)?.1))
        .collect()
}

impl MetaNode {
    /// Runs a listing on a blocking thread: a page may be a thousand seeks.
    pub(crate) async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&DB) -> MetaResult<T> + Send + 'static,
    ) -> MetaResult<T> {
        let db: Arc<DB> = self.db.clone();
        tokio::task::spawn_blocking(move || f(&db))
            .await
            .map_err(|e| MetaError::Internal(format!("listing task: {e}")))?
    }

    /// The ids among `ids` whose block row (None: no row) `pick` selects,
    /// read linearizably in one batch off the runtime.
    pub(crate) async fn pick_blocks(
        &self,
        ids: Vec<String>,
        pick: impl Fn(&str, Option<&[u8]>) -> MetaResult<bool> + Send + 'static,
    ) -> MetaResult<Vec<String>> {
        self.linearizable().await?;
        self.blocking(move |db| {
            let blocks = cf(db, CF_BLOCKS);
            let found = db.multi_get_cf(ids.iter().map(|id| (blocks, id.as_bytes())));
            let mut out = Vec::new();
            for (id, r) in ids.iter().zip(found) {
                if pick(id, r.map_err(db_err)?.as_deref())? {
                    out.push(id.clone());
                }
            }
            Ok(out)
        })
        .await
    }

    fn read_grant(&self, data: &ObjectData) -> ReadGrant {
        ReadGrant {
            tokens: data
                .block_ids()
                .map(|id| {
                    (
                        id.to_string(),
                        block_token::issue(&self.cfg.cluster_secret, id, BlockOp::Read),
                    )
                })
                .collect(),
        }
    }

    fn read_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<ObjectVersion> {
        listing::check_bucket(&self.db, bucket)?;
        let missing = match version_id {
            Some(_) => MetaError::NoSuchVersion,
            None => MetaError::NoSuchKey,
        };
        if key.is_empty() || key.as_bytes().contains(&0) {
            return Err(missing);
        }
        let prefix = key_prefix(bucket, key);
        let mut it = self.db.raw_iterator_cf(cf(&self.db, CF_OBJECTS));
        it.seek(&prefix);
        let latest_seq = match it.key() {
            Some(k) if k.starts_with(&prefix) => seq_of_object_key(k),
            _ => {
                it.status().map_err(db_err)?;
                return Err(missing);
            }
        };
        let seq = match version_id {
            None => latest_seq,
            Some(vid) => {
                let idx = self
                    .db
                    .get_cf(
                        cf(&self.db, CF_VERSION_INDEX),
                        version_index_key(bucket, key, vid),
                    )
                    .map_err(db_err)?
                    .ok_or(MetaError::NoSuchVersion)?;
                u64::from_be_bytes(
                    idx.as_slice()
                        .try_into()
                        .map_err(|_| MetaError::Internal("corrupt version index".into()))?,
                )
            }
        };
        let raw = self
            .db
            .get_cf(cf(&self.db, CF_OBJECTS), object_key(bucket, key, seq))
            .map_err(db_err)?
            .ok_or_else(|| {
                MetaError::Internal(format!(
                    "version index names a missing version of {bucket}/{key}"
                ))
            })?;
        let mut v: ObjectVersion = decode(&raw)?;
        v.is_latest = seq == latest_seq;
        Ok(v)
    }
}

impl MetaNode {
    pub(crate) async fn create_bucket_impl(
        &self,
        name: &str,
        region: &str,
        owner: &str,
        access: godwit_common::access::BucketAccess,
        object_lock: bool,
    ) -> MetaResult<BucketInfo> {
        let cmd = Command::CreateBucket {
            name: name.into(),
            region: region.into(),
            owner: owner.into(),
            now_ms: self.now_ms(),
            access,
            object_lock,
        };
        match self.write(cmd).await? {
            Reply::Bucket(b) => Ok(b),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn get_bucket_impl(&self, name: &str) -> MetaResult<BucketInfo> {
        self.linearizable().await?;
        listing::load_bucket(&self.db, name)
    }

    pub(crate) async fn list_buckets_impl(&self) -> MetaResult<Vec<BucketInfo>> {
        self.linearizable().await?;
        // Keys are the names: rocksdb order is name order.
        scan_all(&self.db, CF_BUCKETS)
    }

    pub(crate) async fn delete_bucket_impl(&self, name: &str) -> MetaResult<()> {
        self.write(Command::DeleteBucket { name: name.into() })
            .await
            .map(|_| ())
    }

    pub(crate) async fn set_versioning_impl(
        &self,
        bucket: &str,
        state: VersioningState,
    ) -> MetaResult<()> {
        let cmd = Command::SetVersioning {
            bucket: bucket.into(),
            state,
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn set_bucket_policy_impl(
        &self,
        bucket: &str,
        policy: Option<String>,
    ) -> MetaResult<()> {
        let cmd = Command::SetBucketPolicy {
            bucket: bucket.into(),
            policy,
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn put_object_impl(&self, obj: NewObject) -> MetaResult<ObjectVersion> {
        let cmd = Command::PutObject {
            obj: Box::new(obj),
            version_id: random_id(),
            now_ms: self.now_ms(),
            claim: true,
        };
        match self.write(cmd).await? {
            Reply::Version(v) => Ok(*v),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn append_object_impl(&self, append: NewAppend) -> MetaResult<ObjectVersion> {
        let cmd = Command::AppendObject {
            append: Box::new(append),
            version_id: random_id(),
            now_ms: self.now_ms(),
        };
        match self.write(cmd).await? {
            Reply::Version(v) => Ok(*v),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn get_object_impl(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<ObjectRead> {
        self.linearizable().await?;
        let mut version = self.read_object(bucket, key, version_id)?;
        self.refresh_placement(&mut version.data)?;
        let grant = self.read_grant(&version.data);
        Ok(ObjectRead { version, grant })
    }

    pub(crate) async fn delete_object_impl(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        bypass_governance: bool,
    ) -> MetaResult<DeleteOutcome> {
        let cmd = Command::DeleteObject {
            bucket: bucket.into(),
            key: key.into(),
            version_id: version_id.map(str::to_string),
            new_version_id: random_id(),
            now_ms: self.now_ms(),
            replica_of: None,
            lifecycle: false,
            expect_current: None,
            bypass_governance,
        };
        match self.write(cmd).await? {
            Reply::Deleted(d) => Ok(d),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn list_objects_impl(
        &self,
        q: ListObjectsQuery,
    ) -> MetaResult<ListObjectsPage> {
        self.linearizable().await?;
        self.blocking(move |db| listing::list_objects(db, &q)).await
    }

    pub(crate) async fn list_versions_impl(
        &self,
        q: ListVersionsQuery,
    ) -> MetaResult<ListVersionsPage> {
        self.linearizable().await?;
        self.blocking(move |db| listing::list_versions(db, &q))
            .await
    }

    pub(crate) async fn create_upload_impl(&self, u: NewUpload) -> MetaResult<UploadInfo> {
        let now = self.now_ms();
        let cmd = Command::CreateUpload {
            upload: u,
            upload_id: upload_id(now),
            now_ms: now,
        };
        match self.write(cmd).await? {
            Reply::Upload(u) => Ok(*u),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn get_upload_impl(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> MetaResult<UploadInfo> {
        self.linearizable().await?;
        listing::check_bucket(&self.db, bucket)?;
        match self
            .db
            .get_cf(cf(&self.db, CF_UPLOADS), upload_key(bucket, key, upload_id))
            .map_err(db_err)?
        {
            Some(b) => decode(&b),
            None => Err(MetaError::NoSuchUpload),
        }
    }

    pub(crate) async fn put_part_impl(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: PartRecord,
    ) -> MetaResult<()> {
        let cmd = Command::PutPart {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            part,
            now_ms: self.now_ms(),
            claim: true,
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn list_parts_impl(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        marker: u32,
        max: usize,
    ) -> MetaResult<ListPartsPage> {
        // get_upload passes the barrier and checks bucket and upload.
        self.get_upload_impl(bucket, key, upload_id).await?;
        let upload_id = upload_id.to_string();
        self.blocking(move |db| listing::list_parts(db, &upload_id, marker, max))
            .await
    }

    pub(crate) async fn complete_upload_impl(
        &self,
        c: CompleteUpload,
    ) -> MetaResult<ObjectVersion> {
        // A dialect with a smaller minimum (OSS) may lower it, never raise it.
        let min_part_size = c
            .min_part_size
            .map_or(self.cfg.min_part_size, |m| m.min(self.cfg.min_part_size));
        let cmd = Command::CompleteUpload {
            complete: c,
            version_id: random_id(),
            now_ms: self.now_ms(),
            min_part_size,
        };
        match self.write(cmd).await? {
            Reply::Version(v) => Ok(*v),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn abort_upload_impl(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> MetaResult<()> {
        let cmd = Command::AbortUpload {
            bucket: bucket.into(),
            key: key.into(),
            upload_id: upload_id.into(),
            now_ms: self.now_ms(),
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn list_uploads_impl(
        &self,
        q: ListUploadsQuery,
    ) -> MetaResult<ListUploadsPage> {
        self.linearizable().await?;
        self.blocking(move |db| listing::list_uploads(db, &q)).await
    }

    pub(crate) async fn get_access_key_impl(&self, access_key_id: &str) -> MetaResult<AccessKey> {
        self.linearizable().await?;
        match self
            .db
            .get_cf(cf(&self.db, CF_KEYS), access_key_id.as_bytes())
            .map_err(db_err)?
        {
            Some(b) => decode(&b),
            None => Err(MetaError::NoSuchAccessKey),
        }
    }

    pub(crate) async fn get_account_impl(&self, owner: &str) -> MetaResult<Account> {
        self.linearizable().await?;
        let db = &self.db;
        let get = |c, k: &[u8]| db.get_cf(cf(db, c), k).map_err(db_err);
        crate::accounts::resolve(&get, owner)?.ok_or(MetaError::NoSuchAccount)
    }

    pub(crate) async fn put_account_impl(&self, account: Account) -> MetaResult<Account> {
        match self.write(Command::PutAccount { account }).await? {
            Reply::Account(a) => Ok(a),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn list_accounts_impl(&self) -> MetaResult<Vec<Account>> {
        self.linearizable().await?;
        scan_all(&self.db, CF_ACCOUNTS)
    }

    pub(crate) async fn delete_account_impl(&self, id: &str) -> MetaResult<()> {
        self.write(Command::DeleteAccount { id: id.into() })
            .await
            .map(|_| ())
    }

    pub(crate) async fn adopt_keys_impl(&self) -> MetaResult<u64> {
        match self.write(Command::AdoptKeys).await? {
            Reply::Count(n) => Ok(n),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn put_access_key_impl(&self, key: AccessKey) -> MetaResult<AccessKey> {
        match self.write(Command::PutAccessKey { key }).await? {
            Reply::AccessKey(k) => Ok(k),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn list_access_keys_impl(&self) -> MetaResult<Vec<AccessKey>> {
        self.linearizable().await?;
        scan_all(&self.db, CF_KEYS)
    }

    pub(crate) async fn delete_access_key_impl(&self, access_key_id: &str) -> MetaResult<()> {
        let cmd = Command::DeleteAccessKey {
            access_key_id: access_key_id.into(),
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn allocate_blocks_impl(&self, count: usize) -> MetaResult<Vec<BlockAlloc>> {
        if count > MAX_BLOCKS_PER_ALLOCATION {
            return Err(MetaError::InvalidArgument(format!(
                "at most {MAX_BLOCKS_PER_ALLOCATION} blocks per allocation"
            )));
        }
        // Placement skips down nodes: only the leader knows which are.
        self.ensure_leader().await?;
        let (placements, write_quorum) = self.place_new_blocks(count)?;
        let ttl = self.tier.policy().intent_ttl;
        let out: Vec<BlockAlloc> = placements
            .into_iter()
            .map(|nodes| {
                let id = block_id();
                let token = block_token::issue(&self.cfg.cluster_secret, &id, BlockOp::Write);
                BlockAlloc {
                    id,
                    nodes,
                    token,
                    write_quorum,
                    intent_ttl_ms: ttl.as_millis() as u64,
                }
            })
            .collect();
        // docs/architecture.md, invariant 9: recorded before the writer
        // sends its first byte.
        self.record_intents(
            out.iter().map(|a| a.id.clone()).collect(),
            self.now_ms() + ttl.as_millis() as i64,
        )
        .await?;
        Ok(out)
    }

    pub(crate) async fn renew_intents_impl(&self, ids: Vec<String>) -> MetaResult<Vec<String>> {
        let now = self.now_ms();
        let cmd = Command::RenewIntents {
            ids,
            deadline_ms: now + self.tier.policy().intent_ttl.as_millis() as i64,
            now_ms: now,
        };
        match self.write(cmd).await? {
            Reply::Ids(lost) => Ok(lost),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn unreferenced_blocks_impl(
        &self,
        ids: Vec<String>,
    ) -> MetaResult<Vec<String>> {
        self.pick_blocks(ids, |_, row| Ok(row.is_none())).await
    }

    pub(crate) async fn register_datanode_impl(&self, info: DatanodeInfo) -> MetaResult<()> {
        let id = info.id;
        self.write(Command::RegisterDatanode { info }).await?;
        // Registering counts as being heard from (liveness grace).
        self.tier.saw(id, None);
        Ok(())
    }

    pub(crate) async fn list_datanodes_impl(&self) -> MetaResult<Vec<DatanodeInfo>> {
        self.linearizable().await?;
        scan_all(&self.db, CF_DATANODES)
    }

    pub(crate) async fn status_impl(&self) -> MetaResult<MetaStatus> {
        let m = self.raft.metrics().borrow().clone();
        Ok(MetaStatus {
            node_id: m.id,
            state: format!("{:?}", m.state),
            current_term: m.current_term,
            current_leader: m.current_leader,
            last_log_index: m.last_log_index,
            last_applied: m.last_applied.map(|l| l.index),
            members: m.membership_config.voter_ids().collect(),
        })
    }
    pub(crate) async fn delete_bucket_replication_impl(&self, bucket: &str) -> MetaResult<()> {
        let cmd = Command::DeleteBucketReplication {
            bucket: bucket.into(),
        };
        self.write(cmd).await.map(|_| ())
    }

    pub(crate) async fn edit_replication_rule_impl(
        &self,
        bucket: &str,
        edit: RuleEdit,
    ) -> MetaResult<ReplicationRule> {
        let cmd = Command::EditReplicationRule {
            bucket: bucket.into(),
            edit,
        };
        match self.write(cmd).await? {
            Reply::Rule(r) => Ok(*r),
            r => Err(unexpected(r)),
        }
    }

    pub(crate) async fn put_remote_impl(&self, remote: RemoteInfo) -> MetaResult<()> {
        self.write(Command::PutRemote { remote }).await.map(|_| ())
    }

    pub(crate) async fn delete_remote_impl(&self, name: &str) -> MetaResult<()> {
        self.write(Command::DeleteRemote { name: name.into() })
            .await
            .map(|_| ())
    }
}

#[async_trait]
impl ObjectMeta for MetaNode {
    // The hottest in-process calls (every GET, HEAD and PUT of
    // `godwit server`) go straight to the node, without building a request
    // and unpacking a response (about 3 % of a 4 KiB GET;
    // docs/benchmarks-history.md §4.4).
    async fn get_object(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> MetaResult<ObjectRead> {
        self.get_object_impl(bucket, key, version_id).await
    }

    async fn put_object(&self, obj: NewObject) -> MetaResult<ObjectVersion> {
        self.put_object_impl(obj).await
    }

    async fn get_bucket(&self, name: &str) -> MetaResult<BucketInfo> {
        self.get_bucket_impl(name).await
    }

    async fn call(&self, req: ObjectRequest) -> MetaResult<ObjectResponse> {
        use ObjectRequest as Q;
        use ObjectResponse as A;
        Ok(match req {
            Q::CreateBucket {
                name,
                region,
                owner,
                access,
                object_lock,
            } => A::Bucket(
                self.create_bucket_impl(&name, &region, &owner, access, object_lock)
                    .await?,
            ),
            Q::GetBucket { name } => A::Bucket(self.get_bucket_impl(&name).await?),
            Q::ListBuckets => A::Buckets(self.list_buckets_impl().await?),
            Q::DeleteBucket { name } => A::Done(self.delete_bucket_impl(&name).await?),
            Q::SetVersioning { bucket, state } => {
                A::Done(self.set_versioning_impl(&bucket, state).await?)
            }
            Q::SetBucketPolicy { bucket, policy } => {
                A::Done(self.set_bucket_policy_impl(&bucket, policy).await?)
            }
            Q::ChangeBucketAccess { bucket, change } => {
                let cmd = Command::ChangeBucketAccess { bucket, change };
                match self.write(cmd).await? {
                    Reply::Bucket(b) => A::Bucket(b),
                    r => return Err(unexpected(r)),
                }
            }
            Q::ChangeBucketConfig { bucket, change } => {
                let cmd = Command::ChangeBucketConfig { bucket, change };
                match self.write(cmd).await? {
                    Reply::Bucket(b) => A::Bucket(b),
                    r => return Err(unexpected(r)),
                }
            }
            Q::PutObjectAcl {
                bucket,
                key,
                version_id,
                acl,
            } => {
                let cmd = Command::PutObjectAcl {
                    bucket,
                    key,
                    version_id,
                    acl,
                };
                match self.write(cmd).await? {
                    Reply::Text(v) => A::VersionId(v),
                    r => return Err(unexpected(r)),
                }
            }
            Q::PutObject { obj } => A::Version(Box::new(self.put_object_impl(*obj).await?)),
            Q::AppendObject { append } => {
                A::Version(Box::new(self.append_object_impl(*append).await?))
            }
            Q::GetObject {
                bucket,
                key,
                version_id,
            } => A::Read(Box::new(
                self.get_object_impl(&bucket, &key, version_id.as_deref())
                    .await?,
            )),
            Q::DeleteObject {
                bucket,
                key,
                version_id,
                bypass_governance,
            } => A::Deleted(
                self.delete_object_impl(&bucket, &key, version_id.as_deref(), bypass_governance)
                    .await?,
            ),
            Q::SetObjectLock {
                bucket,
                key,
                version_id,
                change,
                bypass_governance,
            } => {
                let cmd = Command::SetObjectLock {
                    bucket,
                    key,
                    version_id,
                    change,
                    bypass_governance,
                    now_ms: self.now_ms(),
                };
                match self.write(cmd).await? {
                    Reply::Version(v) => A::Version(v),
                    r => return Err(unexpected(r)),
                }
            }
            Q::DeleteObjectReplica {
                bucket,
                key,
                version_id,
                origin,
            } => A::Deleted(
                self.delete_object_replica_impl(&bucket, &key, version_id.as_deref(), origin)
                    .await?,
            ),
            Q::ListObjects { q } => A::Objects(self.list_objects_impl(q).await?),
            Q::ListVersions { q } => A::Versions(self.list_versions_impl(q).await?),
            Q::PutObjectTags {
                bucket,
                key,
                version_id,
                tags,
            } => A::VersionId(
                self.put_object_tags_impl(&bucket, &key, version_id.as_deref(), tags)
                    .await?,
            ),
            Q::CreateUpload { upload } => {
                A::Upload(Box::new(self.create_upload_impl(*upload).await?))
            }
            Q::GetUpload {
                bucket,
                key,
                upload_id,
            } => A::Upload(Box::new(
                self.get_upload_impl(&bucket, &key, &upload_id).await?,
            )),
            Q::PutPart {
                bucket,
                key,
                upload_id,
                part,
            } => A::Done(self.put_part_impl(&bucket, &key, &upload_id, part).await?),
            Q::ListParts {
                bucket,
                key,
                upload_id,
                marker,
                max,
            } => A::Parts(
                self.list_parts_impl(&bucket, &key, &upload_id, marker, max)
                    .await?,
            ),
            Q::CompleteUpload { complete } => {
                A::Version(Box::new(self.complete_upload_impl(*complete).await?))
            }
            Q::AbortUpload {
                bucket,
                key,
                upload_id,
            } => A::Done(self.abort_upload_impl(&bucket, &key, &upload_id).await?),
            Q::ListUploads { q } => A::Uploads(self.list_uploads_impl(q).await?),
            Q::PutBucketReplication { bucket, cfg } => {
                A::Done(self.put_bucket_replication_impl(&bucket, cfg).await?)
            }
            Q::GetBucketReplication { bucket } => {
                A::Replication(self.get_bucket_replication_impl(&bucket).await?)
            }
            Q::DeleteBucketReplication { bucket } => {
                A::Done(self.delete_bucket_replication_impl(&bucket).await?)
            }
            Q::EditReplicationRule { bucket, edit } => A::Rule(Box::new(
                self.edit_replication_rule_impl(&bucket, edit).await?,
            )),
            Q::GetAccessKey { access_key_id } => {
                A::AccessKey(self.get_access_key_impl(&access_key_id).await?)
            }
            Q::GetAccount { owner } => A::Account(self.get_account_impl(&owner).await?),
            Q::FindAccountByEmail { email } => {
                let accounts = self.list_accounts_impl().await?;
                A::Account(
                    accounts
                        .into_iter()
                        .find(|a| {
                            a.email
                                .as_deref()
                                .is_some_and(|e| e.eq_ignore_ascii_case(&email))
                        })
                        .ok_or(MetaError::NoSuchAccount)?,
                )
            }
            Q::ListRemotes => A::Remotes(self.list_remotes_impl().await?),
            Q::ReplicationStats { bucket } => {
                A::Stats(self.replication_stats_impl(bucket.as_deref()).await?)
            }
        })
    }
}

#[async_trait]
impl BlockMeta for MetaNode {
    async fn call(&self, req: BlockRequest) -> MetaResult<BlockResponse> {
        use BlockRequest as Q;
        use BlockResponse as A;
        Ok(match req {
            Q::AllocateBlocks { count } => A::Allocated(self.allocate_blocks_impl(count).await?),
            Q::RenewIntents { ids } => A::Ids(self.renew_intents_impl(ids).await?),
            Q::LeaseBlocks { ids, ttl_ms } => A::Done(self.lease_blocks_impl(ids, ttl_ms).await?),
            Q::UnreferencedBlocks { ids } => A::Ids(self.unreferenced_blocks_impl(ids).await?),
            Q::StrayBlocks {
                node,
                ids,
                grace_ms,
            } => A::Ids(self.stray_blocks_impl(node, ids, grace_ms).await?),
            Q::RegisterDatanode { info } => A::Done(self.register_datanode_impl(info).await?),
            Q::ListDatanodes => A::Datanodes(self.list_datanodes_impl().await?),
            Q::Heartbeat { hb } => A::Done(self.heartbeat_impl(hb).await?),
            Q::ReportBadReplica {
                block_id,
                node,
                reason,
            } => A::Done(
                self.report_bad_replica_impl(&block_id, node, &reason)
                    .await?,
            ),
            Q::ReportSlowDatanode { node, reason } => {
                A::Done(self.report_slow_datanode_impl(node, &reason).await?)
            }
        })
    }
}

#[async_trait]
impl ReplicationMeta for MetaNode {
    async fn call(&self, req: ReplicationRequest) -> MetaResult<ReplicationResponse> {
        use ReplicationRequest as Q;
        use ReplicationResponse as A;
        Ok(match req {
            Q::LeaseTasks {
                lane,
                max,
                lease_ms,
            } => A::Tasks(self.lease_tasks_impl(lane, max, lease_ms).await?),
            Q::AckTasks { acks } => A::Done(self.ack_tasks_impl(acks).await?),
            Q::ReplicationUpload {
                bucket,
                key,
                upload_id,
            } => A::Upload(Box::new(
                self.replication_upload_impl(&bucket, &key, &upload_id)
                    .await?,
            )),
            Q::SetRemoteUploadId {
                bucket,
                key,
                upload_id,
                destination,
                remote_upload_id,
            } => A::UploadId(
                self.set_remote_upload_id_impl(
                    &bucket,
                    &key,
                    &upload_id,
                    &destination,
                    &remote_upload_id,
                )
                .await?,
            ),
            Q::BackfillScan {
                bucket,
                rule_id,
                start_after,
                max,
            } => A::ScannedTo(
                self.backfill_scan_impl(&bucket, &rule_id, start_after.as_deref(), max)
                    .await?,
            ),
            Q::BackfillStep { step } => A::Backfill(Some(self.backfill_step_impl(step).await?)),
            Q::GetBackfillProgress { bucket, rule_id } => {
                A::Backfill(self.backfill_progress_impl(&bucket, &rule_id).await?)
            }
            Q::RunningVerifyJobs => A::Jobs(self.list_verify_jobs_impl(true).await?),
            Q::SaveVerifyStep { step } => A::Done(self.save_verify_step_impl(step).await?),
            Q::RequeueKeys {
                bucket,
                rule_id,
                keys,
            } => A::Count(self.requeue_keys_impl(&bucket, &rule_id, keys).await?),
        })
    }
}

#[async_trait]
impl AdminMeta for MetaNode {
    async fn call(&self, req: AdminRequest) -> MetaResult<AdminResponse> {
        use AdminRequest as Q;
        use AdminResponse as A;
        Ok(match req {
            Q::Status => A::Status(self.status_impl().await?),
            Q::DatanodeStatus => A::Datanodes(self.datanode_status_impl().await?),
            Q::DecommissionDatanode { id } => A::Done(self.decommission_datanode_impl(id).await?),
            Q::PutAccessKey { key } => A::AccessKey(self.put_access_key_impl(key).await?),
            Q::ListAccessKeys => A::AccessKeys(self.list_access_keys_impl().await?),
            Q::DeleteAccessKey { access_key_id } => {
                A::Done(self.delete_access_key_impl(&access_key_id).await?)
            }
            Q::PutAccount { account } => A::Account(self.put_account_impl(account).await?),
            Q::ListAccounts => A::Accounts(self.list_accounts_impl().await?),
            Q::DeleteAccount { id } => A::Done(self.delete_account_impl(&id).await?),
            Q::AdoptKeys => A::Count(self.adopt_keys_impl().await?),
            Q::PutRemote { remote } => A::Done(self.put_remote_impl(remote).await?),
            Q::DeleteRemote { name } => A::Done(self.delete_remote_impl(&name).await?),
            Q::RetryFailed { bucket } => A::Count(self.retry_failed_impl(&bucket).await?),
            Q::ReplicationReport {
                bucket,
                rule_id,
                period_ms,
            } => A::Report(
                self.replication_report_impl(&bucket, rule_id.as_deref(), period_ms)
                    .await?,
            ),
            Q::FailedTasks { bucket, limit } => {
                A::Tasks(self.failed_tasks_impl(&bucket, limit).await?)
            }
            Q::StartVerify { spec } => A::Job(Box::new(self.start_verify_impl(spec).await?)),
            Q::ListVerifyJobs => A::Jobs(self.list_verify_jobs_impl(false).await?),
            Q::GetVerifyJob { id } => {
                A::MaybeJob(self.get_verify_job_impl(&id).await?.map(Box::new))
            }
            Q::CancelVerifyJob { id } => A::Job(Box::new(self.cancel_verify_job_impl(&id).await?)),
        })
    }
}
