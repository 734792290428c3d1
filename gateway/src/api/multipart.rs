//! Multipart uploads: CreateMultipartUpload, UploadPart,
//! CompleteMultipartUpload, AbortMultipartUpload, ListParts,
//! ListMultipartUploads. (UploadPartCopy lives in `copy`.) ListParts and
//! ListMultipartUploads answer with a typed listing that each dialect
//! renders its own way (`s3::multipart`, `oss::ops`).

use axum::body::Body;
use godwit_common::types::{
    Checksums, CompleteUpload, ListPartsPage, ListUploadsPage, ListUploadsQuery, NewUpload,
    ObjectVersion, PartRecord, UploadInfo,
};
use http::StatusCode;

use super::conditions::write_precondition;
use super::headers::{content_headers, user_meta};
use super::list::{non_empty, parse_max, Listing};
use super::object::{write_checksum_headers, write_refusal};
use super::tagging::tags_from_headers;
use super::{
    empty_response, read_small_body, replica_origin, set_header, shows_version_id, version_header,
    xml_response, ApiResult, Ctx, ObjectFacts, OwnerNames, MAX_XML_BODY,
};
use crate::blocks::{write_stream, Written};
use crate::body::checksum::{
    algo_from_name, composite_checksum, expected_from_headers, get_checksum, set_checksum, verify,
    Algo,
};
use crate::error::S3Error;
use crate::names::check_key;
use crate::router::Query;
use crate::xml::requests::{parse_complete, CompleteMultipartUpload, CompletePart};
use crate::xml::responses::*;
use crate::xml::{quote_etag, render, unquote_etag, url_encode};
use crate::MAX_PUT_SIZE;

pub use godwit_common::clock::now_ms;

/// `x-amz-checksum-algorithm` of CreateMultipartUpload.
fn upload_algorithm(ctx: &Ctx) -> Result<Option<Algo>, S3Error> {
    match ctx.header("x-amz-checksum-algorithm") {
        None => Ok(None),
        Some(name) => algo_from_name(name).map(Some).ok_or_else(|| {
            S3Error::InvalidRequest(format!(
                "Checksum algorithm provided is unsupported: {name}"
            ))
        }),
    }
}

pub async fn create_upload(ctx: &Ctx) -> ApiResult {
    check_key(ctx.key())?;
    let algo = upload_algorithm(ctx)?;
    let tags = tags_from_headers(ctx)?;
    // A replication worker's upload: its parts and object are replicas.
    let replica_of = replica_origin(ctx.headers())?;
    // The completed object's owner and ACL, settled now (S3 takes them
    // from CreateMultipartUpload).
    let access =
        super::access::object_access(ctx, &*ctx.gw.buckets.get(ctx.bucket()).await?).await?;
    let info = ctx
        .gw
        .meta
        .create_upload(NewUpload {
            bucket: ctx.bucket().to_string(),
            key: ctx.key().to_string(),
            headers: content_headers(ctx.headers()),
            user_meta: user_meta(ctx.headers())?,
            checksum_algorithm: algo.map(|a| a.name().to_string()),
            tags,
            owner: access.owner,
            acl: access.acl,
            replica_of,
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
    if let Some(a) = algo {
        set_header(resp.headers_mut(), "x-amz-checksum-algorithm", a.name());
    }
    Ok(resp)
}

/// The algorithm an upload was created with, if any.
fn stored_algorithm(name: Option<&str>) -> Option<Algo> {
    name.and_then(algo_from_name)
}

/// Records a part whose bytes are durable, and answers with its ETag and
/// checksums (UploadPart and UploadPartCopy share it).
pub async fn commit_part(
    ctx: &Ctx,
    upload_id: &str,
    part_number: u32,
    written: Written,
) -> Result<PartRecord, S3Error> {
    let part = PartRecord {
        number: part_number,
        size: written.size,
        etag: written.digests.md5_hex(),
        last_modified_ms: now_ms(),
        checksums: written.digests.checksums.clone(),
        data: written.data,
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
    // composite can be computed at completion.
    if let Some(a) = stored_algorithm(upload.checksum_algorithm.as_deref()) {
        if !algos.contains(&a) {
            algos.push(a);
        }
    }
    let decoded = crate::body::decode(&ctx.parts, &ctx.auth, body)?;
    if decoded.decoded_len.is_some_and(|n| n > MAX_PUT_SIZE) {
        return Err(S3Error::EntityTooLarge.into());
    }
    // Parts always go to blocks: completion stitches block lists together.
    let target = ctx.gw.write_target(false, MAX_PUT_SIZE);
    let written = write_stream(&target, decoded.stream, decoded.decoded_len, &algos).await?;
    let trailers = decoded
        .trailers
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .clone();
    verify(&expected, &written.digests, trailers.as_ref())?;
    ctx.rules
        .check_body_crc64(written.digests.checksums.crc64ecma)?;
    let part = commit_part(ctx, upload_id, part_number, written).await?;

    let mut resp = empty_response(StatusCode::OK);
    set_header(resp.headers_mut(), "etag", &quote_etag(&part.etag));
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

/// The composite checksum of the listed parts (S3's `base64(H(c1..cn))-n`),
/// checking any checksum the client repeated in the Complete request.
pub fn composite_of(
    algo: Algo,
    listed: &[CompletePart],
    stored: &[PartRecord],
) -> Result<Option<String>, S3Error> {
    let mut values = Vec::with_capacity(listed.len());
    for p in listed {
        // A part that was never uploaded is meta's to reject (InvalidPart).
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
        if let Some(given) = get_checksum(&p.checksums(), algo) {
            if given.trim() != value {
                return Err(S3Error::InvalidPart(format!(
                    "The {} checksum of part {} does not match the uploaded part.",
                    algo.name(),
                    p.part_number
                )));
            }
        }
        values.push(value.clone());
    }
    Ok(Some(composite_checksum(algo, &values)))
}

pub async fn complete_upload(ctx: &Ctx, upload_id: &str, body: Body) -> ApiResult {
    let precondition = write_precondition(ctx.headers())?;
    // A replication worker's completion carries the source's final mtime.
    let replica_of = replica_origin(ctx.headers())?;
    let body = read_small_body(ctx, body, MAX_XML_BODY).await?;
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
    let mut checksums = Checksums::default();
    // The parts are read for the whole object's CRC-64 (kept for OSS
    // readers whatever the writer's dialect) and any composite checksum.
    let stored = all_parts(ctx, upload_id).await?;
    let doc = match completes_all {
        Some(refusal) => complete_all(&body.bytes, &stored, refusal)?,
        None => parse_complete(&body.bytes)?,
    };
    if let Some(algo) = stored_algorithm(upload.checksum_algorithm.as_deref()) {
        if let Some(value) = composite_of(algo, &doc.parts, &stored)? {
            set_checksum(&mut checksums, algo, value);
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
    };
    let mut resp = xml_response(
        StatusCode::OK,
        render("CompleteMultipartUploadResult", &result)?,
    );
    let shown = shows_version_id(ctx, ctx.bucket(), &version.version_id).await;
    version_header(resp.headers_mut(), &version.version_id, shown);
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
            .map(|p| CompletePart {
                part_number: p.number,
                etag: p.etag.clone(),
                crc32: None,
                crc32c: None,
                crc64nvme: None,
                sha1: None,
                sha256: None,
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

    #[test]
    fn composite_checksum_uses_listed_parts_in_order() {
        let parts = [
            stored(1, Some("AAAAAA==")),
            stored(2, Some("AAAAAQ==")),
            stored(3, Some("AAAAAg==")),
        ];
        let got = composite_of(
            Algo::Crc32,
            &[listed(1, None), listed(3, Some("AAAAAg=="))],
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

    #[test]
    fn composite_checksum_rejects_mismatch_and_missing() {
        let parts = [stored(1, Some("AAAAAA==")), stored(2, None)];
        assert!(matches!(
            composite_of(Algo::Crc32, &[listed(1, Some("AAAAAQ=="))], &parts),
            Err(S3Error::InvalidPart(_))
        ));
        assert!(matches!(
            composite_of(Algo::Crc32, &[listed(2, None)], &parts),
            Err(S3Error::InvalidPart(_))
        ));
        // Unknown part: left to meta.
        assert_eq!(
            composite_of(Algo::Crc32, &[listed(9, None)], &parts).unwrap(),
            None
        );
    }
}
