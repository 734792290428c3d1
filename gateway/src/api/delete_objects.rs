//! DeleteObjects (`POST /bucket?delete`): up to 1000 keys, each deleted on
//! its own; failures are reported per key, not for the request. The
//! outcome is typed: S3 and OSS render it differently (`s3`,
//! `oss::ops`).

use axum::body::Body;
use futures::StreamExt;

use super::{read_small_body, require_integrity, ApiError, Ctx, MAX_XML_BODY};
use crate::error::S3Error;
use crate::xml::requests::{parse_delete, DeleteObjectId};
use crate::xml::responses::{DeleteError, Deleted};

/// Deletes in flight at once (each is one Raft write).
const PARALLEL_DELETES: usize = 16;

enum Outcome {
    Deleted(Deleted),
    Failed(DeleteError),
}

async fn delete_one(ctx: &Ctx, obj: DeleteObjectId, bypass: bool) -> Outcome {
    let result = ctx
        .gw
        .meta
        .delete_object_bypassing(ctx.bucket(), &obj.key, obj.version_id.as_deref(), bypass)
        .await;
    match result {
        Ok(out) => {
            // A marker created (or removed) is reported as such; the
            // version id then names the marker.
            let (marker, marker_id) = if out.delete_marker {
                (Some(true), out.version_id.clone())
            } else {
                (None, None)
            };
            Outcome::Deleted(Deleted {
                key: obj.key,
                version_id: obj.version_id,
                delete_marker: marker,
                delete_marker_version_id: marker_id,
            })
        }
        Err(e) => {
            let err = S3Error::from(e);
            Outcome::Failed(DeleteError {
                key: obj.key,
                version_id: obj.version_id,
                code: err.code().to_string(),
                message: err.to_string(),
            })
        }
    }
}

/// What a DeleteObjects did: the keys deleted (none when the request
/// asked for a quiet answer) and the keys that failed.
#[derive(Debug, Default)]
pub struct DeleteOutcome {
    pub deleted: Vec<Deleted>,
    pub errors: Vec<DeleteError>,
}

pub async fn delete_objects(ctx: &Ctx, body: Body) -> Result<DeleteOutcome, ApiError> {
    let body = read_small_body(ctx, body, MAX_XML_BODY).await?;
    require_integrity(&body)?;
    let req = parse_delete(&body.bytes)?;
    // The bucket must exist even if every key is absent.
    ctx.gw.meta.get_bucket(ctx.bucket()).await?;
    // `x-amz-bypass-governance-retention` covers every key of the request.
    let bypass = super::object_lock::bypass_governance(ctx).await?;

    let outcomes: Vec<Outcome> = futures::stream::iter(req.objects)
        .map(|obj| delete_one(ctx, obj, bypass))
        .buffered(PARALLEL_DELETES)
        .collect()
        .await;
    let mut doc = DeleteOutcome::default();
    for outcome in outcomes {
        match outcome {
            Outcome::Deleted(d) if !req.quiet => doc.deleted.push(d),
            Outcome::Deleted(_) => {}
            Outcome::Failed(f) => doc.errors.push(f),
        }
    }
    Ok(doc)
}
