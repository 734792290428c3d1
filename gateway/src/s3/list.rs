//! The S3 documents of ListObjects (v1), ListObjectsV2 and
//! ListObjectVersions, from the queries and pages of `api::list`.

use godwit_common::types::{ChecksumType, ListObjectsPage, ListVersionsPage, ObjectVersion};
use http::StatusCode;

use crate::api::list::{encode_token, fetch_v1, Enc, Listing, V1Listing, V2Query, VersionsQuery};
use crate::api::{xml_response, ApiResult, Ctx, OwnerNames};
use crate::body::checksum::{get_checksum, Algo};
use crate::error::S3Error;
use crate::xml::responses::*;
use crate::xml::{iso8601_ms, quote_etag, render};

/// The `ChecksumAlgorithm` elements of a listed object.
fn algorithms(v: &ObjectVersion) -> Vec<String> {
    Algo::ALL
        .iter()
        .filter(|a| get_checksum(&v.checksums, **a).is_some())
        .map(|a| a.name().to_string())
        .collect()
}

fn entry(v: &ObjectVersion, enc: &Enc, owners: Option<&OwnerNames>) -> ObjectEntry {
    ObjectEntry {
        key: enc.s(&v.key),
        last_modified: iso8601_ms(v.last_modified_ms),
        etag: quote_etag(&v.etag),
        checksum_algorithm: algorithms(v),
        checksum_type: v.checksums.effective_type().map(ChecksumType::as_str),
        size: v.size,
        storage_class: "STANDARD",
        owner: owners.map(|o| o.get(&v.owner)),
    }
}

pub async fn list_objects_v2(ctx: &Ctx) -> ApiResult {
    let q = V2Query::parse(&ctx.query)?;
    let page = q.fetch(ctx).await?;
    let owners = match q.fetch_owner {
        true => Some(
            ctx.owner_names(page.objects.iter().map(|v| v.owner.clone()).collect())
                .await?,
        ),
        false => None,
    };
    let list = q.list;
    let doc = v2_result(
        ctx.bucket(),
        &list.prefix,
        list.delimiter,
        q.token.as_deref(),
        q.start_after,
        list.max,
        owners.as_ref(),
        &list.enc,
        page,
    );
    Ok(xml_response(
        StatusCode::OK,
        render("ListBucketResult", &doc)?,
    ))
}

#[allow(clippy::too_many_arguments)]
pub fn v2_result(
    bucket: &str,
    prefix: &str,
    delimiter: Option<String>,
    token: Option<&str>,
    start_after: Option<String>,
    max_keys: usize,
    owners: Option<&OwnerNames>,
    enc: &Enc,
    page: ListObjectsPage,
) -> ListBucketResult {
    let contents: Vec<ObjectEntry> = page.objects.iter().map(|v| entry(v, enc, owners)).collect();
    let common_prefixes = enc.prefixes(&page.common_prefixes);
    ListBucketResult {
        name: bucket.to_string(),
        prefix: enc.s(prefix),
        continuation_token: token.map(str::to_string),
        next_continuation_token: page
            .is_truncated
            .then(|| page.next_marker.as_deref().map(encode_token))
            .flatten(),
        start_after: enc.opt(start_after.as_deref()),
        key_count: Some(contents.len() + common_prefixes.len()),
        max_keys,
        delimiter: enc.opt(delimiter.as_deref()),
        encoding_type: enc.name(),
        is_truncated: page.is_truncated,
        contents,
        common_prefixes,
        ..Default::default()
    }
}

pub async fn list_objects_v1(ctx: &Ctx) -> ApiResult {
    let V1Listing { list, marker, page } = fetch_v1(ctx).await?;
    let owners = ctx
        .owner_names(page.objects.iter().map(|v| v.owner.clone()).collect())
        .await?;
    let doc = v1_result(ctx.bucket(), &list, marker.as_deref(), &owners, page);
    Ok(xml_response(
        StatusCode::OK,
        render("ListBucketResult", &doc)?,
    ))
}

/// The ListObjects (v1) document. With `encoding-type=url` S3 encodes
/// the keys, common prefixes, Delimiter, Marker and NextMarker of a v1
/// listing, but not its top-level Prefix: botocore's `decode_list_object`
/// decodes exactly those fields (and v2's Prefix, which S3 does encode),
/// so an encoded v1 Prefix would reach a boto3 caller still encoded.
pub(crate) fn v1_result(
    bucket: &str,
    list: &Listing,
    marker: Option<&str>,
    owners: &OwnerNames,
    page: ListObjectsPage,
) -> ListBucketResult {
    let enc = &list.enc;
    ListBucketResult {
        name: bucket.to_string(),
        prefix: list.prefix.clone(),
        marker: Some(enc.s(marker.unwrap_or_default())),
        next_marker: page
            .is_truncated
            .then(|| enc.opt(page.next_marker.as_deref()))
            .flatten(),
        max_keys: list.max,
        delimiter: enc.opt(list.delimiter.as_deref()),
        encoding_type: enc.name(),
        is_truncated: page.is_truncated,
        contents: page
            .objects
            .iter()
            .map(|v| entry(v, enc, Some(owners)))
            .collect(),
        common_prefixes: enc.prefixes(&page.common_prefixes),
        ..Default::default()
    }
}

pub async fn list_versions(ctx: &Ctx) -> ApiResult {
    let q = VersionsQuery::parse(&ctx.query)?;
    if q.version_id_marker.is_some() && q.key_marker.is_none() {
        return Err(S3Error::InvalidArgument(
            "A version-id marker cannot be specified without a key marker.".into(),
        )
        .into());
    }
    let page = q.fetch(ctx).await?;
    let owners = ctx
        .owner_names(page.versions.iter().map(|v| v.owner.clone()).collect())
        .await?;
    let list = q.list;
    let doc = versions_result(
        ctx.bucket(),
        &list.prefix,
        list.delimiter,
        q.key_marker,
        q.version_id_marker,
        list.max,
        &list.enc,
        &owners,
        page,
    );
    Ok(xml_response(
        StatusCode::OK,
        render("ListVersionsResult", &doc)?,
    ))
}

#[allow(clippy::too_many_arguments)]
pub fn versions_result(
    bucket: &str,
    prefix: &str,
    delimiter: Option<String>,
    key_marker: Option<String>,
    version_id_marker: Option<String>,
    max_keys: usize,
    enc: &Enc,
    owners: &OwnerNames,
    page: ListVersionsPage,
) -> ListVersionsResult {
    // Meta lists in key order, newest first within a key; S3 keeps that
    // order across both element kinds, and some clients rely on it.
    let entries = page
        .versions
        .iter()
        .map(|v| {
            if v.is_delete_marker {
                VersionListEntry::DeleteMarker(DeleteMarkerEntry {
                    key: enc.s(&v.key),
                    version_id: v.version_id.clone(),
                    is_latest: v.is_latest,
                    last_modified: iso8601_ms(v.last_modified_ms),
                    owner: owners.get(&v.owner),
                })
            } else {
                VersionListEntry::Version(VersionEntry {
                    key: enc.s(&v.key),
                    version_id: v.version_id.clone(),
                    is_latest: v.is_latest,
                    last_modified: iso8601_ms(v.last_modified_ms),
                    etag: quote_etag(&v.etag),
                    checksum_algorithm: algorithms(v),
                    checksum_type: v.checksums.effective_type().map(ChecksumType::as_str),
                    size: v.size,
                    storage_class: "STANDARD",
                    owner: owners.get(&v.owner),
                })
            }
        })
        .collect();
    ListVersionsResult {
        name: bucket.to_string(),
        prefix: enc.s(prefix),
        key_marker: enc.s(key_marker.as_deref().unwrap_or_default()),
        version_id_marker: version_id_marker.unwrap_or_default(),
        next_key_marker: page
            .is_truncated
            .then(|| enc.opt(page.next_key_marker.as_deref()))
            .flatten(),
        next_version_id_marker: page
            .is_truncated
            .then_some(page.next_version_id_marker)
            .flatten(),
        max_keys,
        delimiter: enc.opt(delimiter.as_deref()),
        encoding_type: enc.name(),
        is_truncated: page.is_truncated,
        entries,
        common_prefixes: enc.prefixes(&page.common_prefixes),
        ..Default::default()
    }
}

#[cfg(test)]
#[path = "list_tests.rs"]
mod tests;
