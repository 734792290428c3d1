//! Runs an operation: the neutral handler (`api`) and, where the two
//! dialects answer differently, the renderer or the operation of the
//! request's dialect (`s3`, `oss`). The one module that knows all three;
//! only the gateway's root calls it.

use axum::body::Body;
use axum::response::Response;

use crate::api::{
    access, append, attributes, bucket, bucket_encryption, bucket_tagging, copy, cors,
    delete_objects, lifecycle, multipart, object, object_lock, post_object, symlink, tagging,
    ApiResult, Ctx,
};
use crate::dialect::Dialect;
use crate::error::S3Error;
use crate::router::{endpoint_pattern, not_implemented, Endpoint};
use crate::{oss, s3};

/// Runs the handler of `ep` and renders its answer in the request's dialect.
pub async fn dispatch(ctx: Ctx, ep: Endpoint, body: Body) -> ApiResult {
    use Endpoint::*;
    if ctx.dialect.is_oss() {
        // OSS's own functions over api's queries and pages; the other
        // operations whose OSS document differs from S3's are rendered
        // from a typed result below (`render`).
        use oss::ops;
        match &ep {
            ListObjects => return ops::list_objects_v1(&ctx).await,
            ListObjectsV2 => return ops::list_objects_v2(&ctx).await,
            ListObjectVersions => return ops::list_versions(&ctx).await,
            // OSS reads `encoding-type` between the query and the fetch.
            ListParts { upload_id } => return ops::list_parts(&ctx, upload_id).await,
            _ => {}
        }
    }
    match ep {
        GetBucketInfo => oss::ops::get_bucket_info(&ctx).await,
        GetBucketStat => oss::ops::get_bucket_stat(&ctx).await,
        GetObjectMeta => object::get_object(&ctx, true).await,
        ListBuckets => {
            let query = match ctx.dialect {
                Dialect::S3 => s3::bucket::buckets_query(&ctx.query)?,
                Dialect::Oss => oss::ops::buckets_query(&ctx.query)?,
            };
            Ok(render(
                &ctx,
                bucket::list_buckets(&ctx, query).await?,
                s3::bucket::list_buckets,
                |list| oss::ops::list_buckets(&ctx, list),
            )?)
        }
        CreateBucket => bucket::create_bucket(&ctx, body).await,
        HeadBucket => bucket::head_bucket(&ctx).await,
        DeleteBucket => bucket::delete_bucket(&ctx).await,
        GetBucketLocation => Ok(render(
            &ctx,
            bucket::get_location(&ctx).await?,
            s3::bucket::location,
            oss::ops::location_constraint,
        )?),
        GetBucketVersioning => bucket::get_versioning(&ctx).await,
        PutBucketVersioning => bucket::put_versioning(&ctx, body).await,
        GetBucketAcl => Ok(render(
            &ctx,
            access::get_bucket_acl(&ctx).await?,
            s3::acl::render,
            oss::ops::render_acl,
        )?),
        PutBucketAcl => access::put_bucket_acl(&ctx, body).await,
        GetBucketOwnershipControls => access::get_ownership_controls(&ctx).await,
        PutBucketOwnershipControls => access::put_ownership_controls(&ctx, body).await,
        DeleteBucketOwnershipControls => access::delete_ownership_controls(&ctx).await,
        GetPublicAccessBlock => access::get_public_access_block(&ctx).await,
        PutPublicAccessBlock => access::put_public_access_block(&ctx, body).await,
        DeletePublicAccessBlock => access::delete_public_access_block(&ctx).await,
        ListObjects => s3::list::list_objects_v1(&ctx).await,
        ListObjectsV2 => s3::list::list_objects_v2(&ctx).await,
        ListObjectVersions => s3::list::list_versions(&ctx).await,
        ListMultipartUploads => Ok(render(
            &ctx,
            multipart::list_uploads(&ctx).await?,
            |listing| s3::multipart::list_uploads(&ctx, listing),
            |listing| oss::ops::list_uploads(&ctx, listing),
        )?),
        DeleteObjects => Ok(render(
            &ctx,
            delete_objects::delete_objects(&ctx, body).await?,
            s3::delete_result,
            |outcome| oss::ops::delete_result(&ctx, outcome),
        )?),
        GetObject => object::get_object(&ctx, false).await,
        HeadObject => object::get_object(&ctx, true).await,
        PutObject => object::put_object(&ctx, body).await,
        PostObject => {
            let oss = post_object::OssForms {
                alias_headers: oss::wire::alias_request_headers,
                rules: oss::wire::rules,
                region_matches: oss::auth::region_matches,
            };
            post_object::post_object(ctx, body, &oss).await
        }
        CopyObject => copy::copy_object(&ctx).await,
        DeleteObject => object::delete_object(&ctx).await,
        GetObjectAcl => Ok(render(
            &ctx,
            access::get_object_acl(&ctx).await?,
            s3::acl::render,
            oss::ops::render_acl,
        )?),
        PutObjectAcl => access::put_object_acl(&ctx, body).await,
        CreateMultipartUpload => multipart::create_upload(&ctx).await,
        UploadPart {
            part_number,
            upload_id,
        } => multipart::upload_part(&ctx, part_number, &upload_id, body).await,
        UploadPartCopy {
            part_number,
            upload_id,
        } => copy::upload_part_copy(&ctx, part_number, &upload_id).await,
        CompleteMultipartUpload { upload_id } => {
            multipart::complete_upload(&ctx, &upload_id, body).await
        }
        AbortMultipartUpload { upload_id } => multipart::abort_upload(&ctx, &upload_id).await,
        ListParts { upload_id } => {
            let listing = multipart::list_parts(&ctx, &upload_id).await?;
            Ok(s3::multipart::list_parts(listing)?)
        }
        // An OSS client reads the OSS document (rule states, RTC).
        GetBucketReplication if ctx.dialect.is_oss() => {
            oss::replication::get_bucket_replication(&ctx).await
        }
        GetBucketReplication => s3::replication::get_bucket_replication(&ctx).await,
        PutBucketReplication => s3::replication::put_bucket_replication(&ctx, body).await,
        DeleteBucketReplication => s3::replication::delete_bucket_replication(&ctx).await,
        OssPutBucketReplication => oss::replication::put_bucket_replication(&ctx, body).await,
        OssDeleteBucketReplication => oss::replication::delete_bucket_replication(&ctx, body).await,
        GetBucketReplicationLocation => {
            oss::replication::get_bucket_replication_location(&ctx).await
        }
        GetBucketReplicationProgress => {
            oss::replication::get_bucket_replication_progress(&ctx).await
        }
        PutBucketRtc => oss::replication::put_bucket_rtc(&ctx, body).await,
        GetBucketPolicy => bucket::get_bucket_policy(&ctx).await,
        PutBucketPolicy => bucket::put_bucket_policy(&ctx, body).await,
        DeleteBucketPolicy => bucket::delete_bucket_policy(&ctx).await,
        GetBucketPolicyStatus => bucket::get_bucket_policy_status(&ctx).await,
        GetObjectTagging => tagging::get_object_tagging(&ctx).await,
        PutObjectTagging => tagging::put_object_tagging(&ctx, body).await,
        DeleteObjectTagging => tagging::delete_object_tagging(&ctx).await,
        GetObjectAttributes => attributes::get_object_attributes(&ctx).await,
        RestoreObject => object::restore_object(&ctx).await,
        PutSymlink => symlink::put_symlink(&ctx).await,
        AppendObject => append::append_object(&ctx, body).await,
        GetSymlink => symlink::get_symlink(&ctx).await,
        GetBucketLifecycleConfiguration => Ok(render(
            &ctx,
            lifecycle::get_bucket_lifecycle(&ctx).await?,
            s3::bucket::lifecycle,
            oss::lifecycle::render_lifecycle,
        )?),
        PutBucketLifecycleConfiguration => {
            let parse: lifecycle::LifecycleParser = match ctx.dialect {
                Dialect::S3 => crate::xml::lifecycle::parse_lifecycle,
                Dialect::Oss => oss::lifecycle::parse_lifecycle,
            };
            lifecycle::put_bucket_lifecycle(&ctx, body, parse).await
        }
        DeleteBucketLifecycle => lifecycle::delete_bucket_lifecycle(&ctx).await,
        GetBucketCors => Ok(render(
            &ctx,
            cors::get_bucket_cors(&ctx).await?,
            s3::bucket::cors,
            oss::bucket_config::render_cors,
        )?),
        PutBucketCors => {
            let schema = match ctx.dialect {
                Dialect::S3 => &crate::xml::cors::S3_CORS,
                Dialect::Oss => &oss::bucket_config::OSS_CORS,
            };
            cors::put_bucket_cors(&ctx, body, schema).await
        }
        DeleteBucketCors => cors::delete_bucket_cors(&ctx).await,
        GetBucketTagging => Ok(render(
            &ctx,
            bucket_tagging::get_bucket_tagging(&ctx).await?,
            s3::bucket::tagging,
            oss::bucket_config::render_tags,
        )?),
        PutBucketTagging => {
            let check: bucket_tagging::TagCheck = match ctx.dialect {
                Dialect::S3 => crate::xml::tagging::validate_bucket_tags,
                Dialect::Oss => oss::bucket_config::check_tags,
            };
            bucket_tagging::put_bucket_tagging(&ctx, body, check).await
        }
        // OSS may name the keys to remove (`?tagging=k1,k2`).
        DeleteBucketTagging if ctx.dialect.is_oss() => {
            oss::bucket_config::delete_bucket_tags(&ctx).await
        }
        DeleteBucketTagging => bucket_tagging::delete_bucket_tagging(&ctx).await,
        GetBucketEncryption => Ok(render(
            &ctx,
            bucket_encryption::get_bucket_encryption(&ctx).await?,
            s3::bucket::encryption,
            oss::bucket_config::render_encryption,
        )?),
        PutBucketEncryption => {
            let parse: bucket_encryption::EncryptionParser = match ctx.dialect {
                Dialect::S3 => crate::xml::encryption::parse_encryption,
                Dialect::Oss => oss::bucket_config::parse_encryption,
            };
            bucket_encryption::put_bucket_encryption(&ctx, body, parse).await
        }
        DeleteBucketEncryption => bucket_encryption::delete_bucket_encryption(&ctx).await,
        GetObjectLockConfiguration => object_lock::get_lock_configuration(&ctx).await,
        PutObjectLockConfiguration => object_lock::put_lock_configuration(&ctx, body).await,
        GetObjectRetention => object_lock::get_retention(&ctx).await,
        PutObjectRetention => object_lock::put_retention(&ctx, body).await,
        GetObjectLegalHold => object_lock::get_legal_hold(&ctx).await,
        PutObjectLegalHold => object_lock::put_legal_hold(&ctx, body).await,
        // A CORS preflight, answered before authorization (it never
        // carries credentials).
        Options => cors::preflight(&ctx).await,

        // The one list of what is not offered (router.rs).
        not_implemented!(endpoint_pattern) => Err(S3Error::NotImplemented.into()),
    }
}

/// A handler's typed result, rendered in the request's dialect.
fn render<T>(
    ctx: &Ctx,
    result: T,
    s3: impl FnOnce(T) -> Result<Response, S3Error>,
    oss: impl FnOnce(T) -> Result<Response, S3Error>,
) -> Result<Response, S3Error> {
    match ctx.dialect {
        Dialect::S3 => s3(result),
        Dialect::Oss => oss(result),
    }
}
