//! The S3 documents of ListBuckets, GetBucketLocation, GetBucketCors and
//! GetBucketTagging, from the typed results of `api::bucket`,
//! `api::cors` and `api::bucket_tagging`.

use axum::response::Response;
use godwit_common::bucket_config::{CorsConfiguration, Tag};
use http::StatusCode;

use crate::api::bucket::{BucketList, BucketLocation, US_EAST_1};
use crate::api::xml_response;
use crate::error::S3Error;
use crate::xml::responses::{BucketEntry, Buckets, ListAllMyBucketsResult, LocationConstraint, Ns};
use crate::xml::{iso8601_ms, render};

pub fn list_buckets(list: BucketList) -> Result<Response, S3Error> {
    let doc = ListAllMyBucketsResult {
        xmlns: Ns::default(),
        owner: list.owner,
        buckets: Buckets {
            bucket: list
                .buckets
                .into_iter()
                .map(|b| BucketEntry {
                    name: b.name,
                    creation_date: iso8601_ms(b.created_ms),
                    bucket_region: b.region,
                })
                .collect(),
        },
    };
    Ok(xml_response(
        StatusCode::OK,
        render("ListAllMyBucketsResult", &doc)?,
    ))
}

/// S3 writes us-east-1's LocationConstraint empty (a legacy of the
/// original region); every other region by name.
pub fn location(location: BucketLocation) -> Result<Response, S3Error> {
    let region = if location.region == US_EAST_1 {
        String::new()
    } else {
        location.region
    };
    let doc = LocationConstraint {
        xmlns: Ns::default(),
        region,
    };
    Ok(xml_response(
        StatusCode::OK,
        render("LocationConstraint", &doc)?,
    ))
}

pub fn cors(cfg: CorsConfiguration) -> Result<Response, S3Error> {
    Ok(xml_response(
        StatusCode::OK,
        crate::xml::cors::render_cors(&cfg)?,
    ))
}

/// A bucket without tags is NoSuchTagSet.
pub fn tagging(tags: Option<Vec<Tag>>) -> Result<Response, S3Error> {
    let tags = tags.ok_or(S3Error::NoSuchTagSet)?;
    Ok(xml_response(
        StatusCode::OK,
        crate::xml::tagging::render_tag_list(&tags)?,
    ))
}
