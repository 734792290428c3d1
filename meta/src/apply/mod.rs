//! Applying a command to the state machine. Everything here is a
//! deterministic function of (state, command, log position): no clock, no
//! randomness, no I/O other than the overlay. A command that is refused
//! (no such bucket, invalid part, ...) returns its `MetaError` and leaves
//! the state untouched; the entry is still applied.

mod append;
pub(crate) mod blocks;
pub(crate) mod dedup;
mod multipart;
mod objects;
pub(crate) mod outbox;
mod replication;
pub(crate) mod sla;
pub(crate) mod streaming;
pub(crate) mod verify;

use godwit_common::bucket_config::ConfigChange;
use godwit_common::types::*;
use godwit_common::MetaError;

use crate::command::{Command, Reply};
use crate::store::overlay::Overlay;
use crate::store::*;

/// Applies one command at position `pos` of the entry at `log_index`.
pub fn apply_command(
    tx: &mut Overlay,
    cmd: Command,
    log_index: u64,
    pos: usize,
) -> Result<Reply, MetaError> {
    let seq = crate::command::version_seq(log_index, pos);
    tx.now_ms = cmd.now_ms();
    match cmd {
        Command::CreateBucket {
            name,
            region,
            owner,
            now_ms,
            access,
            object_lock,
        } => create_bucket(tx, name, region, owner, now_ms, access, object_lock),
        Command::DeleteBucket { name } => delete_bucket(tx, &name),
        Command::SetVersioning { bucket, state } => set_versioning(tx, &bucket, state),
        Command::SetBucketPolicy { bucket, policy } => {
            let mut info = load_bucket(tx, &bucket)?;
            info.policy = policy;
            tx.put(CF_BUCKETS, bucket.into_bytes(), tx.encode(&info));
            Ok(Reply::Done)
        }
        Command::PutObject {
            obj,
            version_id,
            now_ms,
            claim,
        } => {
            if claim {
                blocks::claim_blocks(tx, &obj.data, obj.copy_source.as_ref(), now_ms)?;
            }
            objects::put_object(tx, *obj, version_id, now_ms, seq)
        }
        Command::AppendObject {
            append,
            version_id,
            now_ms,
        } => {
            blocks::claim_blocks(tx, &append.data, None, now_ms)?;
            append::append_object(tx, *append, version_id, now_ms, seq)
        }
        Command::DeleteObject {
            bucket,
            key,
            version_id,
            new_version_id,
            now_ms,
            replica_of,
            lifecycle,
            expect_current,
            bypass_governance,
        } => objects::delete_object(
            tx,
            objects::Delete {
                bucket: &bucket,
                key: &key,
                version_id,
                fresh_version_id: new_version_id,
                now_ms,
                replica_of,
                lifecycle,
                expect_current,
                bypass_governance,
            },
            seq,
        ),
        Command::SetObjectLock {
            bucket,
            key,
            version_id,
            change,
            bypass_governance,
            now_ms,
        } => objects::set_object_lock(
            tx,
            &bucket,
            &key,
            version_id,
            change,
            bypass_governance,
            now_ms,
        ),
        Command::CreateUpload {
            upload,
            upload_id,
            now_ms,
        } => multipart::create_upload(tx, upload, upload_id, now_ms),
        Command::PutPart {
            bucket,
            key,
            upload_id,
            part,
            now_ms,
            claim,
        } => {
            if claim {
                blocks::claim_blocks(tx, &part.data, None, now_ms)?;
            }
            multipart::put_part(tx, &bucket, &key, &upload_id, part, now_ms)
        }
        Command::CompleteUpload {
            complete,
            version_id,
            now_ms,
            min_part_size,
        } => multipart::complete_upload(tx, complete, version_id, now_ms, min_part_size, seq),
        Command::AbortUpload {
            bucket,
            key,
            upload_id,
            now_ms,
        } => multipart::abort_upload(tx, &bucket, &key, &upload_id, now_ms),
        Command::PutAccessKey { key } => put_access_key(tx, key),
        Command::DeleteAccessKey { access_key_id } => delete_access_key(tx, &access_key_id),
        Command::PutAccount { account } => crate::accounts::put_account(tx, account),
        Command::DeleteAccount { id } => crate::accounts::delete_account(tx, &id),
        Command::AdoptKeys => crate::accounts::adopt_keys(tx),
        Command::RegisterDatanode { info } => blocks::register_datanode(tx, info),
        Command::PutBucketReplication { bucket, cfg } => {
            replication::put_bucket_replication(tx, &bucket, cfg)
        }
        Command::DeleteBucketReplication { bucket } => {
            replication::delete_bucket_replication(tx, &bucket)
        }
        Command::EditReplicationRule { bucket, edit } => {
            replication::edit_replication_rule(tx, &bucket, edit)
        }
        Command::PutObjectTags {
            bucket,
            key,
            version_id,
            tags,
            now_ms,
        } => replication::put_object_tags(tx, &bucket, &key, version_id, tags, now_ms),
        Command::PutObjectAcl {
            bucket,
            key,
            version_id,
            acl,
        } => replication::put_object_acl(tx, &bucket, &key, version_id, acl),
        Command::ChangeBucketAccess { bucket, change } => change_bucket_access(tx, &bucket, change),
        Command::ChangeBucketConfig { bucket, change } => {
            let mut info = load_bucket(tx, &bucket)?;
            // Object Lock needs version ids: S3 enables it on an existing
            // bucket only while versioning is Enabled.
            if matches!(change, ConfigChange::ObjectLock(_))
                && info.versioning != VersioningState::Enabled
            {
                return Err(MetaError::InvalidBucketState(
                    "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"
                        .into(),
                ));
            }
            info.config.apply(change);
            tx.put(CF_BUCKETS, bucket.into_bytes(), tx.encode(&info));
            Ok(Reply::Bucket(info))
        }
        Command::PutRemote { remote } => replication::put_remote(tx, remote),
        Command::DeleteRemote { name } => replication::delete_remote(tx, &name),
        Command::LeaseTasks {
            lane,
            max,
            lease_ms,
            now_ms,
        } => replication::lease_tasks(tx, lane, max, lease_ms, now_ms),
        Command::AckTasks {
            acks,
            now_ms,
            max_attempts,
        } => replication::ack_tasks(tx, acks, now_ms, max_attempts),
        Command::RetryFailed { bucket, now_ms } => replication::retry_failed(tx, &bucket, now_ms),
        Command::SetRemoteUploadId {
            bucket,
            key,
            upload_id,
            destination,
            remote_upload_id,
        } => streaming::set_remote_upload_id(
            tx,
            &bucket,
            &key,
            &upload_id,
            &destination,
            &remote_upload_id,
        ),
        Command::BackfillScan {
            bucket,
            rule_id,
            start_after,
            max,
            total_keys,
            now_ms,
        } => {
            replication::backfill_scan(tx, &bucket, &rule_id, start_after, max, total_keys, now_ms)
        }
        Command::BackfillStep {
            step,
            total_keys,
            now_ms,
        } => replication::backfill_step(tx, step, total_keys, now_ms),
        Command::StartVerify { id, spec, now_ms } => verify::start(tx, id, spec, now_ms),
        Command::SaveVerifyStep { step, now_ms } => verify::step(tx, step, now_ms),
        Command::CancelVerifyJob { id, now_ms } => verify::cancel(tx, &id, now_ms),
        Command::RequeueKeys {
            bucket,
            rule_id,
            keys,
            now_ms,
        } => verify::requeue_keys(tx, &bucket, &rule_id, &keys, now_ms),
        Command::UpdatePlacement {
            block_id,
            expect,
            nodes,
        } => blocks::update_placement(tx, &block_id, expect, nodes),
        Command::SetDatanodeState { id, state } => blocks::set_datanode_state(tx, id, state),
        Command::RecordIntents { ids, deadline_ms } => {
            blocks::record_intents(tx, &ids, deadline_ms)
        }
        Command::RenewIntents {
            ids,
            deadline_ms,
            now_ms,
        } => blocks::renew_intents(tx, &ids, deadline_ms, now_ms),
        Command::SweepBlocks {
            now_ms,
            keep_ms,
            max,
        } => blocks::sweep(tx, now_ms, keep_ms, max),
        Command::PackRecords => pack_records(tx),
    }
}

/// Rows written from here on are packed (`KEY_RECORD_FORMAT`); the rows
/// already written stay as they are and are read as they are.
fn pack_records(tx: &mut Overlay) -> Result<Reply, MetaError> {
    tx.put(
        CF_SM_META,
        KEY_RECORD_FORMAT.to_vec(),
        RECORD_FORMAT_PACKED_V1.to_vec(),
    );
    tx.format = godwit_common::codec::Format::Packed;
    Ok(Reply::Done)
}

pub(crate) fn load_bucket(tx: &Overlay, name: &str) -> Result<BucketInfo, MetaError> {
    match tx.get(CF_BUCKETS, name.as_bytes())? {
        Some(b) => decode(&b),
        None => Err(MetaError::NoSuchBucket),
    }
}

fn change_bucket_access(
    tx: &mut Overlay,
    bucket: &str,
    change: godwit_common::access::AccessChange,
) -> Result<Reply, MetaError> {
    use godwit_common::access::{AccessChange, Grantee, ObjectOwnership};
    let mut info = load_bucket(tx, bucket)?;
    match change {
        AccessChange::Acl(acl) => info.access.acl = acl,
        AccessChange::Ownership(ownership) => {
            // AWS refuses to disable ACLs while the bucket ACL grants to
            // anyone but the owner.
            let get = |c, k: &[u8]| tx.get(c, k);
            let owner =
                crate::accounts::owner_id(&get, &info.owner)?.unwrap_or_else(|| info.owner.clone());
            let grants_others = info.access.acl.as_ref().is_some_and(|acl| {
                acl.grants
                    .iter()
                    .any(|g| g.grantee != Grantee::Account(owner.clone()))
            });
            if ownership == Some(ObjectOwnership::BucketOwnerEnforced) && grants_others {
                return Err(MetaError::InvalidBucketAclWithObjectOwnership);
            }
            info.access.ownership = ownership;
        }
        AccessChange::PublicAccessBlock(block) => info.access.public_access_block = block,
    }
    tx.put(CF_BUCKETS, bucket.as_bytes().to_vec(), tx.encode(&info));
    Ok(Reply::Bucket(info))
}

fn create_bucket(
    tx: &mut Overlay,
    name: String,
    region: String,
    owner: String,
    now_ms: i64,
    access: godwit_common::access::BucketAccess,
    object_lock: bool,
) -> Result<Reply, MetaError> {
    if name.is_empty() || name.as_bytes().contains(&0) {
        return Err(MetaError::InvalidArgument("invalid bucket name".into()));
    }
    if let Some(existing) = tx.get(CF_BUCKETS, name.as_bytes())? {
        let existing: BucketInfo = decode(&existing)?;
        let get = |c, k: &[u8]| tx.get(c, k);
        let theirs = crate::accounts::owner_id(&get, &existing.owner)?.unwrap_or(existing.owner);
        let ours = crate::accounts::owner_id(&get, &owner)?.unwrap_or(owner);
        return Err(if theirs == ours {
            MetaError::BucketAlreadyOwnedByYou
        } else {
            MetaError::BucketAlreadyExists
        });
    }
    let mut info = BucketInfo {
        name: name.clone(),
        created_ms: now_ms,
        region,
        versioning: VersioningState::Unversioned,
        owner,
        policy: None,
        access,
        config: Default::default(),
    };
    if object_lock {
        // S3 enables versioning with Object Lock, for good.
        info.versioning = VersioningState::Enabled;
        info.config.object_lock = Some(Default::default());
    }
    tx.put(CF_BUCKETS, name.into_bytes(), tx.encode(&info));
    Ok(Reply::Bucket(info))
}

fn delete_bucket(tx: &mut Overlay, name: &str) -> Result<Reply, MetaError> {
    load_bucket(tx, name)?;
    let prefix = bucket_prefix(name);
    // Versions and delete markers both live in `objects`.
    if tx.first_with_prefix(CF_OBJECTS, &prefix)?.is_some()
        || tx.first_with_prefix(CF_UPLOADS, &prefix)?.is_some()
    {
        return Err(MetaError::BucketNotEmpty);
    }
    replication::forget_bucket(tx, name)?;
    tx.delete(CF_BUCKETS, name.as_bytes().to_vec());
    Ok(Reply::Done)
}

fn set_versioning(
    tx: &mut Overlay,
    bucket: &str,
    state: VersioningState,
) -> Result<Reply, MetaError> {
    let mut info = load_bucket(tx, bucket)?;
    if state == VersioningState::Unversioned {
        // S3 has no way back to "never versioned".
        return Err(MetaError::InvalidArgument(
            "versioning can only be Enabled or Suspended".into(),
        ));
    }
    if state == VersioningState::Suspended && info.config.object_lock.is_some() {
        return Err(MetaError::InvalidBucketState(
            "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."
                .into(),
        ));
    }
    // S3 refuses to suspend versioning under a replication configuration
    // (InvalidBucketState): replication needs version ids.
    if state == VersioningState::Suspended && outbox::load_config(tx, bucket)?.is_some() {
        return Err(MetaError::InvalidRequest(
            "Replication configuration is present, versioning cannot be suspended".into(),
        ));
    }
    info.versioning = state;
    tx.put(CF_BUCKETS, bucket.as_bytes().to_vec(), tx.encode(&info));
    Ok(Reply::Done)
}

fn put_access_key(tx: &mut Overlay, key: AccessKey) -> Result<Reply, MetaError> {
    if let Some(existing) = tx.get(CF_KEYS, key.access_key_id.as_bytes())? {
        return Ok(Reply::AccessKey(decode(&existing)?));
    }
    if !key.account.is_empty() && tx.get(CF_ACCOUNTS, key.account.as_bytes())?.is_none() {
        return Err(MetaError::NoSuchAccount);
    }
    tx.put(
        CF_KEYS,
        key.access_key_id.as_bytes().to_vec(),
        tx.encode(&key),
    );
    Ok(Reply::AccessKey(key))
}

fn delete_access_key(tx: &mut Overlay, id: &str) -> Result<Reply, MetaError> {
    if tx.get(CF_KEYS, id.as_bytes())?.is_none() {
        return Err(MetaError::NoSuchAccessKey);
    }
    tx.delete(CF_KEYS, id.as_bytes().to_vec());
    Ok(Reply::Done)
}

// ---- block reference counts and placement: `blocks.rs` ----

pub(crate) use blocks::{add_refs, drop_refs};
