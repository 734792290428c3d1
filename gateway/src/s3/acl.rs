//! The S3 documents of GetBucketAcl and GetObjectAcl: Godwit has no ACLs,
//! so the owner has FULL_CONTROL, as S3 reports for the default
//! (private) ACL.

use axum::response::Response;
use godwit_common::types::NULL_VERSION_ID;
use http::StatusCode;

use crate::api::bucket::BucketAcl;
use crate::api::object::ObjectAcl;
use crate::api::{version_header, xml_response};
use crate::error::S3Error;
use crate::xml::render;
use crate::xml::responses::{AccessControlPolicy, Owner};

fn owner_full_control(owner: &Owner) -> Result<Response, S3Error> {
    Ok(xml_response(
        StatusCode::OK,
        render(
            "AccessControlPolicy",
            &AccessControlPolicy::owner_full_control(owner),
        )?,
    ))
}

pub fn bucket_acl(acl: BucketAcl) -> Result<Response, S3Error> {
    owner_full_control(&acl.owner)
}

pub fn object_acl(acl: ObjectAcl) -> Result<Response, S3Error> {
    let mut resp = owner_full_control(&acl.owner)?;
    // Not a response S3 documents a version header for; kept for real ids.
    let vid = &acl.version_id;
    version_header(resp.headers_mut(), vid, vid != NULL_VERSION_ID);
    Ok(resp)
}
