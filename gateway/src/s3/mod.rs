//! The S3 dialect's own answers: the documents S3 renders from the
//! neutral handlers' typed results (listings in `list`; ListBuckets and
//! GetBucketLocation in `bucket`; the ACLs in `acl`; ListParts and
//! ListMultipartUploads in `multipart`; the DeleteObjects result and
//! error documents here) and the S3-only operations (the AWS replication
//! API in `replication`). The operations themselves are `api`'s.

pub mod acl;
pub mod bucket;
pub mod list;
pub mod multipart;
pub mod replication;

use axum::body::Body;
use axum::response::Response;
use http::StatusCode;

use crate::api::delete_objects::DeleteOutcome;
use crate::api::{xml_response, ApiError};
use crate::error::S3Error;
use crate::xml::render;
use crate::xml::responses::DeleteResult;

/// The DeleteObjects answer: S3 lists keys as they are.
pub fn delete_result(outcome: DeleteOutcome) -> Result<Response, S3Error> {
    let doc = DeleteResult {
        deleted: outcome.deleted,
        errors: outcome.errors,
        ..Default::default()
    };
    Ok(xml_response(StatusCode::OK, render("DeleteResult", &doc)?))
}

/// The S3 error document (none for HEAD and 304), with the error's status
/// and any extra headers.
pub fn error_response(e: ApiError, resource: &str, request_id: &str, is_head: bool) -> Response {
    let status = e.err.http_status();
    let mut resp = if is_head || status == StatusCode::NOT_MODIFIED {
        Response::new(Body::empty())
    } else {
        xml_response(status, crate::xml::error_body(&e.err, resource, request_id))
    };
    *resp.status_mut() = status;
    if let S3Error::InternalError(detail)
    | S3Error::ServiceUnavailable(detail)
    | S3Error::StorageFull(detail) = &e.err
    {
        tracing::warn!(%request_id, error = %detail, "server-side error");
    }
    resp.headers_mut().extend(e.headers);
    resp
}
