//! Access settings of buckets and objects: Get/Put Bucket and Object ACL,
//! the bucket's ownership controls and public access block, and the ACL
//! and owner a write gives the object it creates (PutObject, CopyObject,
//! CreateMultipartUpload, POST Object).
//!
//! The rules are AWS's since 2023 (docs/security.md):
//! - a bucket whose ownership is BucketOwnerEnforced (every new S3 bucket)
//!   has ACLs disabled: requests that set an ACL other than
//!   bucket-owner-full-control (or its XML equivalent) are refused with
//!   `AccessControlListNotSupported`, and the bucket owner owns every
//!   object;
//! - BucketOwnerPreferred: the bucket owner owns what is written with
//!   bucket-owner-full-control, the writer the rest; ObjectWriter (and a
//!   bucket without ownership controls): the writer owns what it writes;
//! - a bucket created through the OSS dialect follows OSS: ACLs enabled,
//!   the bucket owner owns every object, and an object without an ACL of
//!   its own ("default") takes the bucket's;
//! - BlockPublicAcls refuses (AccessDenied) any request that sets a
//!   public ACL; the other switches act in `authz` and at
//!   PutBucketPolicy.

use axum::body::Body;
use godwit_common::access::{
    AccessChange, Acl, BucketAccess, Grantee, ObjectOwnership, Permission, PublicAccessBlock,
};
use godwit_common::types::{BucketInfo, NULL_VERSION_ID};
use http::StatusCode;
use serde::{Deserialize, Serialize};

use super::{empty_response, read_small_body, xml_response, ApiError, ApiResult, Ctx};
use crate::acl::{self, AclRequest, AclView, Canned, GrantView, GranteeRef};
use crate::error::S3Error;
use crate::xml::responses::Ns;
use crate::xml::{parse, render};

/// The largest ACL or configuration body read (100 grants fit).
const MAX_ACCESS_BODY: usize = 64 * 1024;

/// The canonical id of the bucket's owner (stored owners from before
/// accounts resolve to their account).
pub async fn bucket_owner_id(ctx: &Ctx, bucket: &BucketInfo) -> Result<String, S3Error> {
    if bucket.owner.is_empty() {
        return Ok(ctx.caller.id.clone());
    }
    Ok(ctx.gw.accounts.display(&bucket.owner).await?.0)
}

/// The ACL headers of the request in its dialect (`x-amz-acl` and
/// `x-amz-grant-*`, or `x-oss-acl`/`x-oss-object-acl`).
fn acl_headers(ctx: &Ctx, object: bool) -> Result<Option<AclRequest>, S3Error> {
    if ctx.dialect.is_oss() {
        acl::from_oss_headers(ctx.headers(), object)
    } else {
        acl::from_s3_headers(ctx.headers())
    }
}

/// Whether `req` only gives the bucket owner (and the writer) full
/// control: the one ACL a BucketOwnerEnforced bucket accepts.
fn is_bucket_owner_full_control(req: &AclRequest, writer: &str, bucket_owner: &str) -> bool {
    match req.canned {
        Some(Canned::BucketOwnerFullControl) => true,
        Some(_) => false,
        None => {
            !req.grants.is_empty()
                && req.grants.iter().all(|(g, p)| {
                    *p == Permission::FullControl
                        && matches!(g, GranteeRef::Id(id) if id == writer || id == bucket_owner)
                })
        }
    }
}

/// Owner and ACL of an object a write creates.
pub struct ObjectAccess {
    pub owner: String,
    pub acl: Option<Acl>,
}

/// The owner and ACL a write request gives the object it creates, from
/// its ACL headers and the bucket's settings (refusals as the module
/// says).
pub async fn object_access(ctx: &Ctx, bucket: &BucketInfo) -> Result<ObjectAccess, S3Error> {
    let requested = acl_headers(ctx, true)?;
    let bucket_owner = bucket_owner_id(ctx, bucket).await?;
    let writer = ctx.caller.id.clone();
    let access = &bucket.access;
    if !access.acls_enabled() {
        if let Some(req) = &requested {
            if !is_bucket_owner_full_control(req, &writer, &bucket_owner) {
                return Err(S3Error::AccessControlListNotSupported);
            }
        }
        return Ok(ObjectAccess {
            owner: bucket_owner,
            acl: None,
        });
    }
    let owner_takes = access.oss
        || (access.ownership == Some(ObjectOwnership::BucketOwnerPreferred)
            && requested
                .as_ref()
                .is_some_and(|r| is_bucket_owner_full_control(r, &writer, &bucket_owner)));
    let owner = if owner_takes {
        bucket_owner.clone()
    } else {
        writer
    };
    let acl = match requested {
        None => None,
        Some(req) => resolve_requested(ctx, bucket, &req, &owner, &bucket_owner).await?,
    };
    Ok(ObjectAccess { owner, acl })
}

/// A requested ACL made storable: public ones refused under
/// BlockPublicAcls, OSS "default" as no ACL of its own, the rest expanded
/// for `owner` and resolved.
async fn resolve_requested(
    ctx: &Ctx,
    bucket: &BucketInfo,
    req: &AclRequest,
    owner: &str,
    bucket_owner: &str,
) -> Result<Option<Acl>, S3Error> {
    if acl::is_oss_default(req) {
        return Ok(None);
    }
    let acl = acl::resolve(acl::expand(req, owner, bucket_owner), &*ctx.gw.meta).await?;
    if acl.is_public() && bucket.access.block().block_public_acls {
        return Err(crate::authz::denied());
    }
    Ok(Some(acl))
}

/// The access settings a CreateBucket asks for: S3 buckets are
/// BucketOwnerEnforced (or what `x-amz-object-ownership` says) under the
/// server's default public access block; OSS buckets follow OSS.
pub async fn new_bucket_access(ctx: &Ctx) -> Result<BucketAccess, S3Error> {
    let owner = ctx.caller.id.clone();
    let requested = acl_headers(ctx, false)?;
    if ctx.dialect.is_oss() {
        let acl = match requested {
            Some(req) => {
                Some(acl::resolve(acl::expand(&req, &owner, &owner), &*ctx.gw.meta).await?)
            }
            None => None,
        };
        return Ok(BucketAccess {
            acl,
            ownership: Some(ObjectOwnership::ObjectWriter),
            public_access_block: None,
            oss: true,
        });
    }
    let ownership = match ctx.header("x-amz-object-ownership") {
        None => ObjectOwnership::BucketOwnerEnforced,
        Some(v) => ObjectOwnership::from_s3_name(v.trim()).ok_or_else(|| {
            S3Error::InvalidArgument(format!("Invalid x-amz-object-ownership header: {v}"))
        })?,
    };
    let public_access_block = ctx
        .gw
        .cfg
        .default_public_access_block
        .then_some(PublicAccessBlock::ALL);
    let mut access = BucketAccess {
        acl: None,
        ownership: Some(ownership),
        public_access_block,
        oss: false,
    };
    if let Some(req) = requested {
        let harmless = matches!(req.canned, Some(Canned::Private))
            || is_bucket_owner_full_control(&req, &owner, &owner);
        if ownership == ObjectOwnership::BucketOwnerEnforced && !harmless {
            return Err(S3Error::InvalidBucketAclWithObjectOwnership);
        }
        let acl = acl::resolve(acl::expand(&req, &owner, &owner), &*ctx.gw.meta).await?;
        if acl.is_public() && access.block().block_public_acls {
            return Err(S3Error::InvalidBucketAclWithBlockPublicAccessError);
        }
        access.acl = (ownership != ObjectOwnership::BucketOwnerEnforced).then_some(acl);
    }
    Ok(access)
}

/// How a response shows `acl` (owned by `owner_id`).
async fn view(
    ctx: &Ctx,
    owner_id: &str,
    acl: Option<&Acl>,
    object: bool,
    own_acl: bool,
    version_id: Option<String>,
) -> Result<AclView, S3Error> {
    let private = Acl::private(owner_id);
    let acl = acl.unwrap_or(&private);
    let mut grants = Vec::with_capacity(acl.grants.len());
    for g in &acl.grants {
        let display_name = match &g.grantee {
            Grantee::Account(id) => Some(ctx.gw.accounts.display(id).await?.1),
            Grantee::Group(_) => None,
        };
        grants.push(GrantView {
            grantee: g.grantee.clone(),
            display_name,
            permission: g.permission,
        });
    }
    Ok(AclView {
        owner: ctx.owner_of(owner_id).await?,
        grants,
        object,
        own_acl,
        version_id,
    })
}

/// GetBucketAcl.
pub async fn get_bucket_acl(ctx: &Ctx) -> Result<AclView, S3Error> {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let owner = bucket_owner_id(ctx, &bucket).await?;
    let acl = match bucket.access.acls_enabled() {
        true => bucket.access.acl.as_ref(),
        false => None,
    };
    view(ctx, &owner, acl, false, true, None).await
}

/// The ACL a PutBucketAcl or PutObjectAcl asks for: its headers, or else
/// its AccessControlPolicy body (whose Owner, if given, must be the
/// resource's owner).
async fn put_request(
    ctx: &Ctx,
    body: Body,
    object: bool,
    owner: &str,
) -> Result<AclRequest, S3Error> {
    let body = read_small_body(ctx, body, MAX_ACCESS_BODY).await?;
    let from_headers = acl_headers(ctx, object)?;
    let empty = body.bytes.iter().all(u8::is_ascii_whitespace);
    match (from_headers, empty) {
        (Some(req), true) => Ok(req),
        (Some(_), false) => Err(S3Error::UnexpectedContent),
        (None, true) => Err(S3Error::MalformedACLError),
        (None, false) => {
            let doc = acl::from_xml(&body.bytes)?;
            if doc.owner_id.as_deref().is_some_and(|id| id != owner) {
                return Err(crate::authz::denied());
            }
            Ok(doc.request)
        }
    }
}

/// PutBucketAcl.
pub async fn put_bucket_acl(ctx: &Ctx, body: Body) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let owner = bucket_owner_id(ctx, &bucket).await?;
    let req = put_request(ctx, body, false, &owner).await?;
    if !bucket.access.acls_enabled() {
        if !is_bucket_owner_full_control(&req, &owner, &owner) {
            return Err(S3Error::AccessControlListNotSupported.into());
        }
        return Ok(empty_response(StatusCode::OK));
    }
    let acl = resolve_requested(ctx, &bucket, &req, &owner, &owner).await?;
    ctx.gw
        .meta
        .change_bucket_access(ctx.bucket(), AccessChange::Acl(acl))
        .await?;
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(empty_response(StatusCode::OK))
}

/// GetObjectAcl.
pub async fn get_object_acl(ctx: &Ctx) -> Result<AclView, ApiError> {
    let bucket = ctx.gw.buckets.get(ctx.bucket()).await?;
    let version = super::object::live_version(ctx).await?;
    let v = version;
    let (owner, acl) = match bucket.access.acls_enabled() {
        true => (
            object_owner_id(ctx, &bucket, &v.owner).await?,
            v.acl.as_ref(),
        ),
        false => (bucket_owner_id(ctx, &bucket).await?, None),
    };
    let own_acl = !(bucket.access.oss && acl.is_none());
    let inherited = match own_acl {
        true => acl,
        false => bucket.access.acl.as_ref(),
    };
    // A real version id is shown, the "null" one is not (as for the
    // other object operations).
    let shown = (v.version_id != NULL_VERSION_ID).then(|| v.version_id.clone());
    Ok(view(ctx, &owner, inherited, true, own_acl, shown).await?)
}

/// The canonical id of an object's owner as stored (the bucket owner's
/// for versions written before owners were kept).
pub async fn object_owner_id(
    ctx: &Ctx,
    bucket: &BucketInfo,
    owner: &str,
) -> Result<String, S3Error> {
    if owner.is_empty() || bucket.access.oss {
        return bucket_owner_id(ctx, bucket).await;
    }
    Ok(ctx.gw.accounts.display(owner).await?.0)
}

/// PutObjectAcl.
pub async fn put_object_acl(ctx: &Ctx, body: Body) -> ApiResult {
    let bucket = ctx.gw.buckets.get(ctx.bucket()).await?;
    let version = super::object::live_version(ctx).await?;
    let bucket_owner = bucket_owner_id(ctx, &bucket).await?;
    let owner = object_owner_id(ctx, &bucket, &version.owner).await?;
    let req = put_request(ctx, body, true, &owner).await?;
    if !bucket.access.acls_enabled() {
        if !is_bucket_owner_full_control(&req, &owner, &bucket_owner) {
            return Err(S3Error::AccessControlListNotSupported.into());
        }
        return Ok(empty_response(StatusCode::OK));
    }
    let acl = resolve_requested(ctx, &bucket, &req, &owner, &bucket_owner).await?;
    let version_id = ctx.query.get("versionId");
    let vid = ctx
        .gw
        .meta
        .put_object_acl(ctx.bucket(), ctx.key(), version_id, acl)
        .await?;
    let mut resp = empty_response(StatusCode::OK);
    super::version_header(resp.headers_mut(), &vid, version_id.is_some());
    Ok(resp)
}

// ---- ownership controls ----

#[derive(Serialize, Deserialize, Debug)]
struct OwnershipControls {
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    xmlns: Ns,
    #[serde(rename = "Rule")]
    rule: OwnershipRule,
}

#[derive(Serialize, Deserialize, Debug)]
struct OwnershipRule {
    #[serde(rename = "ObjectOwnership")]
    object_ownership: String,
}

pub async fn get_ownership_controls(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let ownership = bucket
        .access
        .ownership
        .ok_or(S3Error::OwnershipControlsNotFoundError)?;
    let doc = OwnershipControls {
        xmlns: Ns::default(),
        rule: OwnershipRule {
            object_ownership: ownership.s3_name().to_string(),
        },
    };
    Ok(xml_response(
        StatusCode::OK,
        render("OwnershipControls", &doc)?,
    ))
}

pub async fn put_ownership_controls(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_ACCESS_BODY).await?;
    let doc: OwnershipControls = parse(&body.bytes)?;
    let ownership = ObjectOwnership::from_s3_name(doc.rule.object_ownership.trim())
        .ok_or(S3Error::MalformedXML)?;
    change(ctx, AccessChange::Ownership(Some(ownership))).await
}

pub async fn delete_ownership_controls(ctx: &Ctx) -> ApiResult {
    change(ctx, AccessChange::Ownership(None)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

// ---- public access block ----

#[derive(Serialize, Deserialize, Debug, Default)]
struct PublicAccessBlockConfiguration {
    #[serde(rename = "@xmlns", default, skip_deserializing)]
    xmlns: Ns,
    #[serde(rename = "BlockPublicAcls", default)]
    block_public_acls: bool,
    #[serde(rename = "IgnorePublicAcls", default)]
    ignore_public_acls: bool,
    #[serde(rename = "BlockPublicPolicy", default)]
    block_public_policy: bool,
    #[serde(rename = "RestrictPublicBuckets", default)]
    restrict_public_buckets: bool,
}

pub async fn get_public_access_block(ctx: &Ctx) -> ApiResult {
    let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    let b = bucket
        .access
        .public_access_block
        .ok_or(S3Error::NoSuchPublicAccessBlockConfiguration)?;
    let doc = PublicAccessBlockConfiguration {
        xmlns: Ns::default(),
        block_public_acls: b.block_public_acls,
        ignore_public_acls: b.ignore_public_acls,
        block_public_policy: b.block_public_policy,
        restrict_public_buckets: b.restrict_public_buckets,
    };
    Ok(xml_response(
        StatusCode::OK,
        render("PublicAccessBlockConfiguration", &doc)?,
    ))
}

pub async fn put_public_access_block(ctx: &Ctx, body: Body) -> ApiResult {
    let body = read_small_body(ctx, body, MAX_ACCESS_BODY).await?;
    let doc: PublicAccessBlockConfiguration = parse(&body.bytes)?;
    let block = PublicAccessBlock {
        block_public_acls: doc.block_public_acls,
        ignore_public_acls: doc.ignore_public_acls,
        block_public_policy: doc.block_public_policy,
        restrict_public_buckets: doc.restrict_public_buckets,
    };
    change(ctx, AccessChange::PublicAccessBlock(Some(block))).await
}

pub async fn delete_public_access_block(ctx: &Ctx) -> ApiResult {
    change(ctx, AccessChange::PublicAccessBlock(None)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

async fn change(ctx: &Ctx, change: AccessChange) -> ApiResult {
    ctx.gw
        .meta
        .change_bucket_access(ctx.bucket(), change)
        .await?;
    ctx.gw.buckets.invalidate(ctx.bucket());
    Ok(empty_response(StatusCode::OK))
}
