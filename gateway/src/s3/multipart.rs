//! The S3 documents of ListParts and ListMultipartUploads, from the
//! listings of `api::multipart`.

use axum::response::Response;
use http::StatusCode;

use crate::api::list::Listing;
use crate::api::multipart::{upload_checksum_of, PartsListing, PartsQuery, UploadsListing};
use crate::api::{xml_response, Ctx};
use crate::error::S3Error;
use crate::xml::responses::{
    ListMultipartUploadsResult, ListPartsResult, Ns, PartEntry, UploadEntry,
};
use crate::xml::{iso8601_ms, quote_etag, render};

/// ListParts; an upload created before owners were kept names the
/// requester as its initiator and owner.
pub fn list_parts(listing: PartsListing) -> Result<Response, S3Error> {
    let PartsListing {
        query: PartsQuery { max_parts, marker },
        upload,
        owner,
        page,
    } = listing;
    let checksum_type = upload_checksum_of(&upload).map(|(_, t)| t.as_str());
    let doc = ListPartsResult {
        xmlns: Ns::default(),
        bucket: upload.bucket,
        key: upload.key,
        upload_id: upload.upload_id,
        part_number_marker: marker,
        next_part_number_marker: page
            .is_truncated
            .then_some(page.next_part_number_marker)
            .flatten(),
        max_parts,
        is_truncated: page.is_truncated,
        parts: page
            .parts
            .iter()
            .map(|p| PartEntry {
                part_number: p.number,
                last_modified: iso8601_ms(p.last_modified_ms),
                etag: quote_etag(&p.etag),
                size: p.size,
                checksums: (&p.checksums).into(),
            })
            .collect(),
        initiator: owner.clone(),
        owner,
        storage_class: "STANDARD",
        checksum_type,
        checksum_algorithm: upload.checksum_algorithm,
    };
    Ok(xml_response(
        StatusCode::OK,
        render("ListPartsResult", &doc)?,
    ))
}

pub(crate) fn list_uploads(ctx: &Ctx, listing: UploadsListing) -> Result<Response, S3Error> {
    let UploadsListing {
        list,
        key_marker,
        upload_id_marker,
        page,
        owners,
    } = listing;
    let Listing {
        max: max_uploads,
        enc,
        prefix,
        delimiter,
    } = list;
    let doc = ListMultipartUploadsResult {
        bucket: ctx.bucket().to_string(),
        key_marker: enc.s(key_marker.as_deref().unwrap_or_default()),
        upload_id_marker: upload_id_marker.unwrap_or_default(),
        next_key_marker: page
            .is_truncated
            .then(|| enc.opt(page.next_key_marker.as_deref()))
            .flatten(),
        next_upload_id_marker: page
            .is_truncated
            .then_some(page.next_upload_id_marker)
            .flatten(),
        prefix: enc.s(&prefix),
        delimiter: enc.opt(delimiter.as_deref()),
        max_uploads,
        encoding_type: enc.name(),
        is_truncated: page.is_truncated,
        uploads: page
            .uploads
            .iter()
            .map(|u| UploadEntry {
                key: enc.s(&u.key),
                upload_id: u.upload_id.clone(),
                initiator: owners.get(&u.owner),
                owner: owners.get(&u.owner),
                storage_class: "STANDARD",
                initiated: iso8601_ms(u.initiated_ms),
                checksum_algorithm: u.checksum_algorithm.clone(),
                checksum_type: upload_checksum_of(u).map(|(_, t)| t.as_str()),
            })
            .collect(),
        common_prefixes: enc.prefixes(&page.common_prefixes),
        ..Default::default()
    };
    Ok(xml_response(
        StatusCode::OK,
        render("ListMultipartUploadsResult", &doc)?,
    ))
}
