//! Authorization: whether the caller's account may run an operation,
//! decided once per request, before dispatch (and once more for a copy's
//! source bucket).
//!
//! The model today is ownership. The root account may do everything. Any
//! account may list its own buckets and create buckets. Every operation on
//! a bucket or its objects (unimplemented ones included, so that they
//! answer AccessDenied rather than NotImplemented to an account without
//! access) needs the caller to own the bucket: objects are the bucket
//! owner's, as S3's BucketOwnerEnforced setting has it. A bucket that does
//! not exist is NoSuchBucket before anything runs, so no operation can
//! slip into a bucket created between the check and the operation.
//!
//! Bucket ownership is read through the bucket cache: a bucket deleted
//! and re-created under another account becomes the new owner's on other
//! gateways within `api::bucket_cache::BUCKET_TTL` (docs/security.md).

use godwit_common::types::Account;
use godwit_common::MetaError;

use crate::error::S3Error;
use crate::router::Endpoint;
use crate::Gateway;

/// The refusal: the same for every operation and every reason, so it
/// tells an outsider nothing about what the bucket holds.
pub fn denied() -> S3Error {
    S3Error::AccessDenied("Access Denied".into())
}

/// Whether `caller` may run `ep` on `bucket` (None: a service operation).
pub async fn authorize(
    gw: &Gateway,
    ep: &Endpoint,
    bucket: Option<&str>,
    caller: &Account,
) -> Result<(), S3Error> {
    if caller.is_root {
        return Ok(());
    }
    match (ep, bucket) {
        // ListBuckets lists the caller's own; CreateBucket is open to
        // every account (meta answers BucketAlreadyExists for a name
        // another account holds).
        (Endpoint::ListBuckets | Endpoint::CreateBucket, _) => Ok(()),
        (_, Some(bucket)) => check_bucket(gw, bucket, caller).await,
        (_, None) => Err(denied()),
    }
}

/// Whether `caller` owns `bucket` (root owns everything):
/// NoSuchBucket for a bucket that does not exist, AccessDenied for
/// another account's.
pub async fn check_bucket(gw: &Gateway, bucket: &str, caller: &Account) -> Result<(), S3Error> {
    if caller.is_root {
        return Ok(());
    }
    let info = gw.buckets.get(bucket).await?;
    let owner = match gw.accounts.resolve(&info.owner).await {
        Ok(owner) => owner,
        Err(MetaError::NoSuchAccount) => return Err(denied()),
        Err(e) => return Err(e.into()),
    };
    if owner.id == caller.id {
        Ok(())
    } else {
        Err(denied())
    }
}
