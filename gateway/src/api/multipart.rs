//! Multipart uploads: CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload, AbortMultipartUpload, ListParts,
//! ListMultipartUploads. (UploadPartCopy lives in `copy`.) ListParts and
//! ListMultipartUploads answer with a typed listing that each dialect
//! renders its own way (`s3::multipart`, `oss::ops`).

use axum::body::Body;
use godwit_common::types::{
    ChecksumType, Checksums, CompleteUpload, ListPartsPage, ListUploadsPage, ListUploadsQuery,
    NewUpload, ObjectVersion, PartRecord, UploadInfo,
};
use http::{HeaderMap, StatusCode};

use super::conditions::write_precondition;
use super::headers::{content_headers, user_meta};
use super::list::{non_empty, parse_max, Listing};
use super::object::{write_checksum_headers, write_refusal};
use super::tagging::tags_from_headers;
use super::{
    empty_response, read_complete_body, replica_origin, set_header, shows_version_id,
    version_header, xml_response, ApiResult, Ctx, ObjectFacts, OwnerNames, MAX_XML_BODY,
};
use crate::blocks::Written;
use crate::body::checksum::{
    algo_from_name, composite_checksum, expected_from_headers, full_object_checksum, get_checksum,
    is_valid_checksum, set_checksum, Algo, Expected,
};
use crate::error::S3Error;
use crate::names::check_key;
use crate::router::Query;
use crate::xml::requests::{parse_complete, CompleteMultipartUpload, CompletePart};
use crate::xml::responses::*;
use crate::xml::{quote_etag, render, unquote_etag, url_encode};
use crate::MAX_PUT_SIZE;

pub use godwit_common::clock::now_ms;

/// `x-amz-checksum-algorithm` and `x-amz-checksum-type` of
/// CreateMultipartUpload, checked as S3 checks them: the type needs an
/// algorithm, defaults to FULL_OBJECT for CRC64NVME and COMPOSITE for the
/// others, and FULL_OBJECT needs a CRC (it is combined from the parts'),
/// COMPOSITE is not offered for CRC64NVME.
/// https://docs.aws.amazon.com/AmazonS3/latest/userguide/checking-object-integrity-upload.html
pub fn upload_checksum(
    algorithm: Option<&str>,
    checksum_type: Option<&str>,
) -> Result<Option<(Algo, ChecksumType)>, S3Error> {
    let algo = algorithm
        .map(|name| {
            algo_from_name(name).ok_or_else(|| {
                S3Error::InvalidRequest(
                    "Checksum algorithm provided is unsupported. Please try again with any of \
                     the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]"
                        .into(),
                )
            })
        })
        .transpose()?;
    let given = checksum_type
        .map(|t| {
            ChecksumType::parse(t).ok_or_else(|| {
                S3Error::InvalidRequest("Value for x-amz-checksum-type header is invalid.".into())
            })
        })
        .transpose()?;
    match (algo, given) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(S3Error::InvalidRequest(
            "The x-amz-checksum-type header can only be used with the \
             x-amz-checksum-algorithm header."
                .into(),
        )),
        (Some(a), t) => {
            let t = t.unwrap_or_else(|| a.default_type());
            if !a.supports(t) {
                return Err(S3Error::InvalidRequest(format!(
                    "The {} checksum type cannot be used with the {} checksum algorithm.",
                    t.as_str(),
                    a.name().to_ascii_lowercase()
                )));
            }
            Ok(Some((a, t)))
        }
    }
}

pub async fn create_upload(ctx: &Ctx) -> ApiResult {
    check_key(ctx.key())?;
    let checksum = upload_checksum(
        ctx.header("x-amz-checksum-algorithm"),
        ctx.header("x-amz-checksum-type"),
    )?;
    let tags = tags_from_headers(ctx)?;
    // A replication worker's upload: its parts and object are replicas.
    let replica_of = replica_origin(ctx.headers())?;
    // Given to the object at Complete.
    let lock = super::object_lock::lock_from_headers(ctx, replica_of.is_some())?;
    // The completed object's owner and ACL, settled now (S3 takes them
    // from CreateMultipartUpload).
    let access =
        super::access::object_access(ctx, &*ctx.gw.buckets.get(ctx.bucket()).await?).await?;
    // The upload's data key: every part is sealed with it.
    let sse_info = match super::sse::for_write(ctx).await? {
        Some(req) => Some(super::sse::new_key(ctx, &req, vec![])?.1),
        None => None,
    };
    let info = ctx
        .gw
        .meta
        .create_upload(NewUpload {
            bucket: ctx.bucket().to_string(),
            key: ctx.key().to_string(),
            headers: content_headers(ctx.headers()),
            user_meta: user_meta(ctx.headers())?,
            checksum_algorithm: checksum.map(|(a, _)| a.name().to_string()),
            checksum_type: checksum.map(|(_, t)| t),
            tags,
            owner: access.owner,
            acl: access.acl,
            replica_of,
            lock,
            sse: sse_info,
        })
        .await?;
    let doc = InitiateMultipartUploadResult {
        xmlns: Ns::default(),
        bucket: info.bucket,
        key: info.key,
        upload_id: info.upload_id,
    };
    let mut resp = xml_response(
        StatusCode::OK,
        render("InitiateMultipartUploadResult", &doc)?,
    );
    if let Some((a, t)) = checksum {
        set_header(resp.headers_mut(), "x-amz-checksum-algorithm", a.name());
        set_header(resp.headers_mut(), "x-amz-checksum-type", t.as_str());
    }
    super::sse::write_headers(ctx, resp.headers_mut(), info.sse.as_ref());
    Ok(resp)
}

/// The algorithm and checksum type an upload was created with, if any.
/// Uploads created before the type was kept are COMPOSITE, the only type
/// they could have.
pub fn upload_checksum_of(upload: &UploadInfo) -> Option<(Algo, ChecksumType)> {
    let algo = upload
        .checksum_algorithm
        .as_deref()
        .and_then(algo_from_name)?;
    Some((
        algo,
        upload.checksum_type.unwrap_or(ChecksumType::Composite),
    ))
}

/// S3 refuses a part whose own checksum (header or trailer) is of another
/// algorithm than its upload's. A part without one is accepted here (S3
/// refuses it): the upload's algorithm is computed for it anyway.
fn check_part_algorithm(upload_algo: Algo, expected: &Expected) -> Result<(), S3Error> {
    let sent = Algo::ALL.into_iter().find(|a| {
        *a != upload_algo
            && (get_checksum(&expected.checksums, *a).is_some() || expected.trailer.contains(a))
    });
    match sent {
        None => Ok(()),
        Some(other) => Err(S3Error::InvalidRequest(format!(
            "Checksum Type mismatch occurred, expected checksum Type: {}, actual checksum Type: {}",
            upload_algo.name().to_ascii_lowercase(),
            other.name().to_ascii_lowercase()
        ))),
    }
}

/// Records a part whose bytes are durable, and answers with its ETag and
/// checksums (UploadPart and UploadPartCopy share it). `sse_nonce`: the
/// base nonce the part was sealed under (empty: in the clear).
pub async fn commit_part(
    ctx: &Ctx,
    upload_id: &str,
    part_number: u32,
    written: Written,
    sse_nonce: Vec<u8>,
) -> Result<PartRecord, S3Error> {
    let part = PartRecord {
        number: part_number,
        size: written.size,
        etag: written.digests.md5_hex(),
        last_modified_ms: now_ms(),
        checksums: written.digests.checksums.clone(),
        data: written.data,
        sse_nonce,
    };
    ctx.gw
        .meta
        .put_part(ctx.bucket(), ctx.key(), upload_id, part.clone())
        .await?;
    Ok(part)
}

pub async fn upload_part(ctx: &Ctx, part_number: u32, upload_id: &str, body: Body) -> ApiResult {
    // Before any byte moves: the upload must exist.
    let upload = ctx
        .gw
        .meta
        .get_upload(ctx.bucket(), ctx.key(), upload_id)
        .await?;
    let expected = expected_from_headers(ctx.headers())?;
    let mut algos = expected.compute.clone();
    // Every part of an upload with an algorithm gets its checksum, so the
    // object's (composite or full-object) can be computed at completion.
    if let Some((a, _)) = upload_checksum_of(&upload) {
        check_part_algorithm(a, &expected)?;
        if !algos.contains(&a) {
            algos.push(a);
        }
    }
    // A part of an encrypted upload is sealed with the upload's key (SSE-C:
    // the request repeats it) under a nonce of its own.
    let upload_key = super::sse::key_for_read(ctx, upload.sse.as_ref(), super::sse::CUSTOMER)?;
    let nonce = godwit_common::sse::new_nonce();
    let decoded = crate::body::decode(&ctx.parts, &ctx.auth, body)?;
    if decoded.decoded_len.is_some_and(|n| n > MAX_PUT_SIZE) {
        return Err(S3Error::EntityTooLarge.into());
    }
    // Parts always go to blocks: completion stitches block lists together.
    let target = ctx.gw.write_target(false, MAX_PUT_SIZE);
    let seal = upload_key.as_ref().map(|k| (k, nonce));
    let written = super::write_checked(ctx, &target, decoded, &expected, &algos, seal).await?;
    let sse_nonce = upload_key.map(|_| nonce.to_vec()).unwrap_or_default();
    let part = commit_part(ctx, upload_id, part_number, written, sse_nonce).await?;

    let mut resp = empty_response(StatusCode::OK);
    set_header(resp.headers_mut(), "etag", &quote_etag(&part.etag));
    super::sse::write_headers(ctx, resp.headers_mut(), upload.sse.as_ref());
    write_checksum_headers(resp.headers_mut(), &part.checksums);
    resp.extensions_mut().insert(ObjectFacts::Written {
        crc64: part.checksums.crc64ecma,
    });
    Ok(resp)
}

/// Every part of an upload, in part order.
async fn all_parts(ctx: &Ctx, upload_id: &str) -> Result<Vec<PartRecord>, S3Error> {
    let mut parts = Vec::new();
    let mut marker = 0;
    loop {
        let page = ctx
            .gw
            .meta
            .list_parts(ctx.bucket(), ctx.key(), upload_id, marker, 1000)
            .await?;
        parts.extend(page.parts);
        match (page.is_truncated, page.next_part_number_marker) {
            (true, Some(next)) if next > marker => marker = next,
            _ => return Ok(parts),
        }
    }
}

/// What a CompleteMultipartUpload says of the object's checksum:
/// `x-amz-checksum-type` and an `x-amz-checksum-*` value to compare (the
/// full-object value the SDKs' transfer managers send, or a composite
/// one, with or without its `-N`).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct CompleteAsk {
    pub checksum_type: Option<ChecksumType>,
    pub value: Option<(Algo, String)>,
}

/// Whether `value` is a checksum of `algo`, or a composite one with its
/// `-<parts>` suffix.
fn is_valid_object_checksum(algo: Algo, value: &str) -> bool {
    let value = value.trim();
    let digest = match value.rsplit_once('-') {
        Some((digest, n)) if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => digest,
        Some(_) => return false,
        None => value,
    };
    is_valid_checksum(algo, digest)
}

/// The checksum headers of a CompleteMultipartUpload (InvalidRequest for a
/// malformed or repeated one, with S3's messages).
pub fn complete_ask(headers: &HeaderMap) -> Result<CompleteAsk, S3Error> {
    let mut ask = CompleteAsk::default();
    if let Some(t) = headers.get("x-amz-checksum-type") {
        ask.checksum_type = Some(t.to_str().ok().and_then(ChecksumType::parse).ok_or_else(
            || S3Error::InvalidRequest("Value for x-amz-checksum-type header is invalid.".into()),
        )?);
    }
    for algo in Algo::ALL {
        let Some(value) = headers.get(algo.header_name()) else {
            continue;
        };
        let value = value.to_str().unwrap_or("\u{fffd}");
        if !is_valid_object_checksum(algo, value) {
            return Err(S3Error::InvalidRequest(format!(
                "Value for {} header is invalid.",
                algo.header_name()
            )));
        }
        if ask.value.is_some() {
            return Err(S3Error::InvalidRequest(
                "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed."
                    .into(),
            ));
        }
        ask.value = Some((algo, value.trim().to_string()));
    }
    Ok(ask)
}

/// S3's answer to a part listed with a checksum that is not the part's.
fn part_not_found() -> S3Error {
    S3Error::InvalidPart(
        "One or more of the specified parts could not be found.  The part may not have been \
         uploaded, or the specified entity tag may not match the part's entity tag."
            .into(),
    )
}

/// The object checksum of an upload created with `algo` and `ctype`, from
/// the listed parts (in their order) and what is stored of them:
/// COMPOSITE, `base64(H(c1 || .. || cn))-n`; FULL_OBJECT, the parts' CRCs
/// combined with their sizes into the CRC of the whole object. Checks, as
/// S3 does, each checksum the client repeats for a part (InvalidPart when
/// it is not the part's; for COMPOSITE every part must repeat it), and the
/// object value the client sent in `ask` (BadDigest when it is not the
/// object's, or of another algorithm). None when a listed part was never
/// uploaded: meta rejects that (InvalidPart).
pub fn object_checksum(
    algo: Algo,
    ctype: ChecksumType,
    listed: &[CompletePart],
    stored: &[PartRecord],
    ask: &CompleteAsk,
) -> Result<Option<String>, S3Error> {
    let mut values = Vec::with_capacity(listed.len());
    for p in listed {
        let Some(part) = stored.iter().find(|s| s.number == p.part_number) else {
            return Ok(None);
        };
        let Some(value) = get_checksum(&part.checksums, algo) else {
            return Err(S3Error::InvalidPart(format!(
                "Part {} has no {} checksum; the upload was created with that algorithm.",
                p.part_number,
                algo.name()
            )));
        };
        match (get_checksum(&p.checksums(), algo), ctype) {
            (Some(given), _) if given.trim() != value => return Err(part_not_found()),
            (Some(_), _) | (None, ChecksumType::FullObject) => {}
            (None, ChecksumType::Composite) => {
                return Err(S3Error::InvalidRequest(format!(
                    "The upload was created using a {} checksum. The complete request must \
                     include the checksum for each part. It was missing for part {} in the \
                     request.",
                    algo.name().to_ascii_lowercase(),
                    p.part_number
                )))
            }
        }
        values.push((value.clone(), part.size));
    }
    let whole = match ctype {
        ChecksumType::Composite => {
            let digests: Vec<String> = values.into_iter().map(|(v, _)| v).collect();
            composite_checksum(algo, &digests)
        }
        ChecksumType::FullObject => full_object_checksum(algo, &values).ok_or_else(|| {
            S3Error::InternalError(format!("a stored part's {} is malformed", algo.name()))
        })?,
    };
    if let Some((given_algo, given)) = &ask.value {
        // A composite value may be given with or without its "-N".
        let matches = *given_algo == algo
            && (*given == whole
                || (ctype == ChecksumType::Composite
                    && whole.rsplit_once('-').is_some_and(|(d, _)| d == given)));
        if !matches {
            return Err(S3Error::BadDigest(format!(
                "The {} you specified did not match the calculated checksum.",
                algo.name().to_ascii_lowercase()
            )));
        }
    }
    Ok(Some(whole))
}

pub async fn complete_upload(ctx: &Ctx, upload_id: &str, body: Body) -> ApiResult {
    let precondition = write_precondition(ctx.headers())?;
    // A replication worker's completion carries the source's final mtime.
    let replica_of = replica_origin(ctx.headers())?;
    // Its x-amz-checksum-* header is the object's checksum, not the body's.
    let body = read_complete_body(ctx, body, MAX_XML_BODY).await?;
    let completes_all = ctx.rules.complete_all;
    let upload = match ctx
        .gw
        .meta
        .get_upload(ctx.bucket(), ctx.key(), upload_id)
        .await
    {
        Ok(u) => u,
        // Maybe completed already: a repeated Complete (an SDK retrying a
        // request whose answer it lost) answers what the first one made,
        // if meta still knows it and the part list is the same. OSS's
        // complete-all names no parts, so it cannot be matched.
        Err(godwit_common::MetaError::NoSuchUpload) if completes_all.is_none() => {
            let doc = parse_complete(&body.bytes)?;
            let version = ctx
                .gw
                .meta
                .complete_upload(CompleteUpload {
                    bucket: ctx.bucket().to_string(),
                    key: ctx.key().to_string(),
                    upload_id: upload_id.to_string(),
                    parts: listed_parts(&doc.parts),
                    checksums: Checksums::default(),
                    replica_of,
                    min_part_size: None,
                    // Meta answers a repeat without it: the first Complete
                    // checked it.
                    precondition,
                })
                .await
                .map_err(|e| write_refusal(ctx, e))?;
            return complete_response(ctx, &version).await;
        }
        Err(e) => return Err(e.into()),
    };
    let ask = complete_ask(ctx.headers())?;
    let upload_checksum = upload_checksum_of(&upload);
    match (ask.checksum_type, upload_checksum) {
        (Some(asked), Some((_, t))) if asked != t => return Err(type_mismatch(t.as_str()).into()),
        (Some(_), None) => return Err(type_mismatch("null").into()),
        _ => {}
    }
    let mut checksums = Checksums::default();
    // The parts are read for the whole object's CRC-64 (kept for OSS
    // readers whatever the writer's dialect) and the object checksum.
    let stored = all_parts(ctx, upload_id).await?;
    let doc = match completes_all {
        Some(refusal) => complete_all(&body.bytes, &stored, refusal)?,
        None => parse_complete(&body.bytes)?,
    };
    if let Some((algo, ctype)) = upload_checksum {
        if let Some(value) = object_checksum(algo, ctype, &doc.parts, &stored, &ask)? {
            set_checksum(&mut checksums, algo, value);
            checksums.checksum_type = Some(ctype);
        }
    }
    checksums.crc64ecma = whole_crc64(&doc.parts, &stored);
    let version = ctx
        .gw
        .meta
        .complete_upload(CompleteUpload {
            bucket: ctx.bucket().to_string(),
            key: ctx.key().to_string(),
            upload_id: upload_id.to_string(),
            parts: listed_parts(&doc.parts),
            checksums,
            replica_of,
            // OSS allows parts down to 100 KiB; S3 keeps meta's minimum.
            min_part_size: ctx.rules.min_part_size,
            // Checked against the key as it is when the upload completes;
            // a failed precondition leaves the upload in place, as S3 does.
            precondition,
        })
        .await
        .map_err(|e| write_refusal(ctx, e))?;
    complete_response(ctx, &version).await
}

/// A Complete whose `x-amz-checksum-type` is not its upload's (`created`:
/// the upload's type, "null" without one).
fn type_mismatch(created: &str) -> S3Error {
    S3Error::InvalidRequest(format!(
        "The upload was created using the {created} checksum mode. The complete request must \
         use the same checksum mode."
    ))
}

/// (part number, unquoted ETag) of a Complete's part list, in its order.
fn listed_parts(parts: &[CompletePart]) -> Vec<(u32, String)> {
    parts
        .iter()
        .map(|p| (p.part_number, unquote_etag(&p.etag).to_string()))
        .collect()
}

/// The answer to a Complete that made (or, repeated, had made) `version`.
async fn complete_response(ctx: &Ctx, version: &ObjectVersion) -> ApiResult {
    let host = ctx.header("host").unwrap_or("localhost");
    let result = CompleteMultipartUploadResult {
        xmlns: Ns::default(),
        location: format!("http://{host}/{}/{}", ctx.bucket(), url_encode(ctx.key())),
        bucket: ctx.bucket().to_string(),
        key: ctx.key().to_string(),
        etag: quote_etag(&version.etag),
        checksums: (&version.checksums).into(),
        checksum_type: version.checksums.effective_type().map(ChecksumType::as_str),
    };
    let mut resp = xml_response(
        StatusCode::OK,
        render("CompleteMultipartUploadResult", &result)?,
    );
    let shown = shows_version_id(ctx, ctx.bucket(), &version.version_id).await;
    version_header(resp.headers_mut(), &version.version_id, shown);
    super::sse::write_headers(ctx, resp.headers_mut(), version.sse.as_ref());
    super::lifecycle::add_expiration(ctx, version, resp.headers_mut()).await;
    resp.extensions_mut().insert(ObjectFacts::Written {
        crc64: version.checksums.crc64ecma,
    });
    Ok(resp)
}

/// The CRC-64/XZ of the completed object, combined from the listed parts'
/// (None when one is unknown: meta then rejects the part, or it predates
/// stored CRCs).
fn whole_crc64(listed: &[CompletePart], stored: &[PartRecord]) -> Option<u64> {
    let by_number: std::collections::HashMap<u32, &PartRecord> =
        stored.iter().map(|p| (p.number, p)).collect();
    let mut parts = Vec::with_capacity(listed.len());
    for p in listed {
        let part = by_number.get(&p.part_number)?;
        parts.push((part.checksums.crc64ecma, part.size));
    }
    combined_crc64(parts)
}

/// The CRC-64/XZ of a multipart object from its parts' CRCs and sizes in
/// the completed order; None when a part has none (written before CRCs
/// were kept).
pub fn combined_crc64(parts: impl IntoIterator<Item = (Option<u64>, u64)>) -> Option<u64> {
    let mut acc: Option<u64> = None;
    for (crc, size) in parts {
        let crc = crc?;
        acc = Some(match acc {
            None => crc,
            Some(a) => crate::body::checksum::crc64xz_combine(a, crc, size),
        });
    }
    Some(acc.unwrap_or(0))
}

/// The part list of a CompleteMultipartUpload that asked for every part
/// (`DialectRules::complete_all`, OSS's `x-oss-complete-all: yes`): every
/// uploaded part in order. A part list in the body alongside is refused
/// with the dialect's `refusal` message.
pub fn complete_all(
    body: &[u8],
    stored: &[PartRecord],
    refusal: &str,
) -> Result<CompleteMultipartUpload, S3Error> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        return Err(S3Error::InvalidArgument(refusal.into()));
    }
    if stored.is_empty() {
        return Err(S3Error::InvalidPart("The upload has no parts.".into()));
    }
    Ok(CompleteMultipartUpload {
        parts: stored
            .iter()
            // Every uploaded part, so every stored checksum too.
            .map(|p| CompletePart {
                part_number: p.number,
                etag: p.etag.clone(),
                crc32: p.checksums.crc32.clone(),
                crc32c: p.checksums.crc32c.clone(),
                crc64nvme: p.checksums.crc64nvme.clone(),
                sha1: p.checksums.sha1.clone(),
                sha256: p.checksums.sha256.clone(),
            })
            .collect(),
    })
}

pub async fn abort_upload(ctx: &Ctx, upload_id: &str) -> ApiResult {
    ctx.gw
        .meta
        .abort_upload(ctx.bucket(), ctx.key(), upload_id)
        .await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

/// A ListParts request as parsed: `max-parts` and `part-number-marker`.
pub struct PartsQuery {
    pub max_parts: usize,
    pub marker: u32,
}

impl PartsQuery {
    pub(crate) fn parse(q: &Query) -> Result<Self, S3Error> {
        let max_parts = parse_max(q, "max-parts")?;
        let marker = match q.get("part-number-marker") {
            None | Some("") => 0,
            Some(raw) => raw.trim().parse::<u32>().map_err(|_| {
                S3Error::InvalidArgument(
                    "Provided part-number-marker not an integer or within integer range".into(),
                )
            })?,
        };
        Ok(PartsQuery { max_parts, marker })
    }

    /// The upload (NoSuchUpload when gone) and the page of its parts.
    pub(crate) async fn fetch(self, ctx: &Ctx, upload_id: &str) -> Result<PartsListing, S3Error> {
        let upload = ctx
            .gw
            .meta
            .get_upload(ctx.bucket(), ctx.key(), upload_id)
            .await?;
        let page = if self.max_parts == 0 {
            Default::default()
        } else {
            ctx.gw
                .meta
                .list_parts(
                    ctx.bucket(),
                    ctx.key(),
                    upload_id,
                    self.marker,
                    self.max_parts,
                )
                .await?
        };
        let owner = ctx.owner_of(&upload.owner).await?;
        Ok(PartsListing {
            query: self,
            upload,
            owner,
            page,
        })
    }
}

/// A ListParts request, its upload and the page of its parts.
pub struct PartsListing {
    pub query: PartsQuery,
    pub upload: UploadInfo,
    /// The upload's owner (and initiator) as responses show it.
    pub owner: Owner,
    pub page: ListPartsPage,
}

pub async fn list_parts(ctx: &Ctx, upload_id: &str) -> Result<PartsListing, S3Error> {
    PartsQuery::parse(&ctx.query)?.fetch(ctx, upload_id).await
}

/// A ListMultipartUploads request and its page.
pub(crate) struct UploadsListing {
    pub list: Listing,
    pub key_marker: Option<String>,
    pub upload_id_marker: Option<String>,
    pub page: ListUploadsPage,
    /// The owners of the page's uploads as responses show them.
    pub owners: OwnerNames,
}

pub(crate) async fn list_uploads(ctx: &Ctx) -> Result<UploadsListing, S3Error> {
    let q = &ctx.query;
    let list = Listing::parse(q, "max-uploads")?;
    let key_marker = non_empty(q.get("key-marker"));
    let upload_id_marker = non_empty(q.get("upload-id-marker"));
    let page = if list.max == 0 {
        ctx.gw.meta.get_bucket(ctx.bucket()).await?;
        Default::default()
    } else {
        ctx.gw
            .meta
            .list_uploads(ListUploadsQuery {
                bucket: ctx.bucket().to_string(),
                prefix: list.prefix.clone(),
                delimiter: list.delimiter.clone(),
                key_marker: key_marker.clone(),
                upload_id_marker: upload_id_marker.clone(),
                max_uploads: list.max,
            })
            .await?
    };
    let owners = ctx
        .owner_names(page.uploads.iter().map(|u| u.owner.clone()).collect())
        .await?;
    Ok(UploadsListing {
        list,
        key_marker,
        upload_id_marker,
        page,
        owners,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_crc_combines_parts_in_order() {
        use crate::body::checksum::crc64xz;
        let parts: [&[u8]; 3] = [b"1234", b"567", b"89"];
        let whole = combined_crc64(parts.iter().map(|p| (Some(crc64xz(p)), p.len() as u64)));
        assert_eq!(whole, Some(crc64xz(b"123456789")));
        assert_eq!(combined_crc64([(Some(1), 1), (None, 2)]), None);
    }
    use godwit_common::types::ObjectData;

    fn stored(number: u32, crc: Option<&str>) -> PartRecord {
        PartRecord {
            number,
            size: 1,
            etag: "e".into(),
            last_modified_ms: 0,
            checksums: Checksums {
                crc32: crc.map(str::to_string),
                ..Default::default()
            },
            data: ObjectData::Blocks(vec![]),
            sse_nonce: vec![],
        }
    }

    fn listed(number: u32, crc: Option<&str>) -> CompletePart {
        CompletePart {
            part_number: number,
            etag: "\"e\"".into(),
            crc32: crc.map(str::to_string),
            crc32c: None,
            crc64nvme: None,
            sha1: None,
            sha256: None,
        }
    }

    fn composite(
        algo: Algo,
        listed: &[CompletePart],
        stored: &[PartRecord],
    ) -> Result<Option<String>, S3Error> {
        object_checksum(
            algo,
            ChecksumType::Composite,
            listed,
            stored,
            &CompleteAsk::default(),
        )
    }

    #[test]
    fn composite_checksum_uses_listed_parts_in_order() {
        let parts = [
            stored(1, Some("AAAAAA==")),
            stored(2, Some("AAAAAQ==")),
            stored(3, Some("AAAAAg==")),
        ];
        let got = composite(
            Algo::Crc32,
            &[listed(1, Some("AAAAAA==")), listed(3, Some("AAAAAg=="))],
            &parts,
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            got,
            composite_checksum(Algo::Crc32, &["AAAAAA==".into(), "AAAAAg==".into()])
        );
        assert!(got.ends_with("-2"), "{got}");
    }

    /// S3's refusals, with its codes and messages: a repeated part
    /// checksum that is not the part's is InvalidPart; COMPOSITE needs
    /// every part's; a part stored without one cannot be combined.
    #[test]
    fn composite_checksum_rejects_mismatch_and_missing() {
        let parts = [stored(1, Some("AAAAAA==")), stored(2, None)];
        let err = composite(Algo::Crc32, &[listed(1, Some("AAAAAQ=="))], &parts).unwrap_err();
        assert!(
            matches!(err, S3Error::InvalidPart(ref m) if m.starts_with("One or more of the specified parts could not be found.")),
            "{err:?}"
        );
        let err = composite(Algo::Crc32, &[listed(1, None)], &parts).unwrap_err();
        assert!(
            matches!(err, S3Error::InvalidRequest(ref m) if m == "The upload was created using a crc32 checksum. The complete request must include the checksum for each part. It was missing for part 1 in the request."),
            "{err:?}"
        );
        assert!(matches!(
            composite(Algo::Crc32, &[listed(2, None)], &parts),
            Err(S3Error::InvalidPart(_))
        ));
        // Unknown part: left to meta.
        assert_eq!(
            composite(Algo::Crc32, &[listed(9, None)], &parts).unwrap(),
            None
        );
    }

    /// Parts whose CRC32s and sizes are real: FULL_OBJECT gives the CRC32
    /// of the whole body, accepts the matching value from the client, and
    /// refuses another one (BadDigest, algorithm in lower case as S3 words
    /// it on Complete) or one of another algorithm; parts need not repeat
    /// their checksums.
    #[test]
    fn full_object_checksum_is_the_whole_bodys_crc() {
        use crate::body::checksum::Hasher;
        let crc = |data: &[u8]| {
            let mut h = Hasher::new(&[Algo::Crc32]);
            h.update(data);
            h.finish().checksums.crc32.unwrap()
        };
        let (a, b) = (vec![1u8; 5000], b"tail".to_vec());
        let mut parts = vec![stored(1, Some(&crc(&a))), stored(2, Some(&crc(&b)))];
        parts[0].size = a.len() as u64;
        parts[1].size = b.len() as u64;
        let whole = crc(&[a.clone(), b.clone()].concat());
        let listed_parts = [listed(1, None), listed(2, Some(&crc(&b)))];
        let full = |ask: &CompleteAsk| {
            object_checksum(
                Algo::Crc32,
                ChecksumType::FullObject,
                &listed_parts,
                &parts,
                ask,
            )
        };
        assert_eq!(full(&CompleteAsk::default()).unwrap(), Some(whole.clone()));
        let ask = |algo: Algo, v: &str| CompleteAsk {
            checksum_type: Some(ChecksumType::FullObject),
            value: Some((algo, v.to_string())),
        };
        assert_eq!(
            full(&ask(Algo::Crc32, &whole)).unwrap(),
            Some(whole.clone())
        );
        let err = full(&ask(Algo::Crc32, "AAAAAA==")).unwrap_err();
        assert!(
            matches!(err, S3Error::BadDigest(ref m) if m == "The crc32 you specified did not match the calculated checksum."),
            "{err:?}"
        );
        assert!(matches!(
            full(&ask(Algo::Crc32c, &whole)),
            Err(S3Error::BadDigest(_))
        ));
        // A composite value is no full-object value.
        assert!(matches!(
            full(&ask(Algo::Crc32, &format!("{whole}-2"))),
            Err(S3Error::BadDigest(_))
        ));
    }

    /// A composite value is accepted with or without its "-N", and not
    /// with another N.
    #[test]
    fn composite_value_from_the_client_with_or_without_its_count() {
        let parts = [stored(1, Some("AAAAAA=="))];
        let whole = composite_checksum(Algo::Crc32, &["AAAAAA==".into()]);
        let (digest, _) = whole.rsplit_once('-').unwrap();
        for (given, ok) in [
            (whole.clone(), true),
            (digest.to_string(), true),
            (format!("{digest}-2"), false),
        ] {
            let ask = CompleteAsk {
                checksum_type: None,
                value: Some((Algo::Crc32, given.clone())),
            };
            let got = object_checksum(
                Algo::Crc32,
                ChecksumType::Composite,
                &[listed(1, Some("AAAAAA=="))],
                &parts,
                &ask,
            );
            assert_eq!(got.is_ok(), ok, "{given}: {got:?}");
        }
    }

    fn hmap(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn complete_headers_are_checked_as_s3_checks_them() {
        let ask = complete_ask(&hmap(&[
            ("x-amz-checksum-type", "full_object"),
            ("x-amz-checksum-crc64nvme", "AAAAAAAAAAA="),
        ]))
        .unwrap();
        assert_eq!(ask.checksum_type, Some(ChecksumType::FullObject));
        assert_eq!(ask.value, Some((Algo::Crc64Nvme, "AAAAAAAAAAA=".into())));
        let ask = complete_ask(&hmap(&[(
            "x-amz-checksum-sha256",
            &format!("{}-3", "A".repeat(43) + "="),
        )]))
        .unwrap();
        assert!(ask.value.is_some());
        for (pairs, message) in [
            (
                vec![("x-amz-checksum-type", "BADCHECKSUM")],
                "Value for x-amz-checksum-type header is invalid.",
            ),
            (
                vec![("x-amz-checksum-crc32", "AAAAAA==-a")],
                "Value for x-amz-checksum-crc32 header is invalid.",
            ),
            (
                vec![("x-amz-checksum-crc32", "AAAA")],
                "Value for x-amz-checksum-crc32 header is invalid.",
            ),
            (
                vec![("x-amz-checksum-crc32", "AAAAAA=="), ("x-amz-checksum-crc32c", "AAAAAA==")],
                "Expecting a single x-amz-checksum- header. Multiple checksum Types are not allowed.",
            ),
        ] {
            let err = complete_ask(&hmap(&pairs)).unwrap_err();
            assert!(matches!(err, S3Error::InvalidRequest(ref m) if m == message), "{pairs:?}: {err:?}");
        }
    }

    #[test]
    fn create_checks_algorithm_and_type_as_s3_does() {
        use ChecksumType::*;
        assert_eq!(upload_checksum(None, None).unwrap(), None);
        assert_eq!(
            upload_checksum(Some("crc32"), None).unwrap(),
            Some((Algo::Crc32, Composite))
        );
        assert_eq!(
            upload_checksum(Some("SHA256"), None).unwrap(),
            Some((Algo::Sha256, Composite))
        );
        assert_eq!(
            upload_checksum(Some("CRC64NVME"), None).unwrap(),
            Some((Algo::Crc64Nvme, FullObject))
        );
        assert_eq!(
            upload_checksum(Some("CRC32C"), Some("FULL_OBJECT")).unwrap(),
            Some((Algo::Crc32c, FullObject))
        );
        for (algo, t, message) in [
            (None, Some("FULL_OBJECT"), "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header."),
            (Some("SHA256"), Some("FULL_OBJECT"), "The FULL_OBJECT checksum type cannot be used with the sha256 checksum algorithm."),
            (Some("SHA1"), Some("FULL_OBJECT"), "The FULL_OBJECT checksum type cannot be used with the sha1 checksum algorithm."),
            (Some("CRC64NVME"), Some("COMPOSITE"), "The COMPOSITE checksum type cannot be used with the crc64nvme checksum algorithm."),
            (Some("CRC32"), Some("BADCHECKSUM"), "Value for x-amz-checksum-type header is invalid."),
            (Some("MD4"), None, "Checksum algorithm provided is unsupported. Please try again with any of the valid types: [CRC32, CRC32C, CRC64NVME, SHA1, SHA256]"),
        ] {
            let err = upload_checksum(algo, t).unwrap_err();
            assert!(matches!(err, S3Error::InvalidRequest(ref m) if m == message), "{algo:?} {t:?}: {err:?}");
        }
    }

    #[test]
    fn a_part_of_another_algorithm_is_refused() {
        let e = expected_from_headers(&hmap(&[("x-amz-checksum-sha256", &("A".repeat(43) + "="))]))
            .unwrap();
        let err = check_part_algorithm(Algo::Crc32, &e).unwrap_err();
        assert!(
            matches!(err, S3Error::InvalidRequest(ref m) if m == "Checksum Type mismatch occurred, expected checksum Type: crc32, actual checksum Type: sha256"),
            "{err:?}"
        );
        let e =
            expected_from_headers(&hmap(&[("x-amz-trailer", "x-amz-checksum-crc32c")])).unwrap();
        assert!(check_part_algorithm(Algo::Crc32, &e).is_err());
        let e = expected_from_headers(&hmap(&[("x-amz-trailer", "x-amz-checksum-crc32")])).unwrap();
        check_part_algorithm(Algo::Crc32, &e).unwrap();
        // No checksum of its own: computed here.
        check_part_algorithm(Algo::Crc32, &Expected::default()).unwrap();
    }
}
