//! The S3 documents of ListBuckets, GetBucketLocation, GetBucketCors,
//! GetBucketTagging and GetBucketEncryption, from the typed results of
//! `api::bucket`, `api::cors`, `api::bucket_tagging` and
//! `api::bucket_encryption`, and ListBuckets' paging
//! parameters (`max-buckets`, `continuation-token`, `prefix`,
//! `bucket-region`).

use axum::response::Response;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as TOKEN_B64;
use base64::Engine;
use godwit_common::bucket_config::{
    BucketEncryption, CorsConfiguration, LifecycleConfiguration, Tag,
};
use http::StatusCode;

use crate::api::bucket::{BucketList, BucketLocation, BucketsQuery, US_EAST_1};
use crate::api::xml_response;
use crate::error::S3Error;
use crate::router::Query;
use crate::xml::responses::{BucketEntry, Buckets, ListAllMyBucketsResult, LocationConstraint, Ns};
use crate::xml::{iso8601_ms, render};

/// The largest page of buckets, and the page of a request that names
/// any paging parameter but `max-buckets`
/// (https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListBuckets.html).
pub const MAX_BUCKETS: usize = 10_000;

/// The parameters that make a ListBuckets page (without any, every
/// bucket is listed, as before AWS added them).
const PAGING_PARAMS: [&str; 4] = [
    "max-buckets",
    "continuation-token",
    "prefix",
    "bucket-region",
];

/// ListBuckets' parameters: `max-buckets` an integer in 1..=10000
/// (InvalidArgument otherwise), `continuation-token` one this gateway
/// issued, `prefix` and `bucket-region` filters.
pub fn buckets_query(q: &Query) -> Result<BucketsQuery, S3Error> {
    let paged = PAGING_PARAMS.iter().any(|p| q.has(p));
    let max = match q.get("max-buckets") {
        None => paged.then_some(MAX_BUCKETS),
        Some(raw) => match raw.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_BUCKETS).contains(&n) => Some(n),
            _ => {
                return Err(S3Error::InvalidArgument(format!(
                    "Argument max-buckets must be an integer between 1 and {MAX_BUCKETS}"
                )))
            }
        },
    };
    let after = match q.get("continuation-token").filter(|t| !t.is_empty()) {
        Some(token) => Some(decode_token(token)?),
        None => None,
    };
    Ok(BucketsQuery {
        prefix: q.get("prefix").map(str::to_string),
        after,
        region: q
            .get("bucket-region")
            .filter(|r| !r.is_empty())
            .map(str::to_string),
        max,
    })
}

/// The continuation token of a page that ends at bucket `last`: opaque
/// to clients (base64url of the name, which the next page starts after).
pub fn encode_token(last: &str) -> String {
    TOKEN_B64.encode(last.as_bytes())
}

fn decode_token(token: &str) -> Result<String, S3Error> {
    TOKEN_B64
        .decode(token.trim())
        .ok()
        .and_then(|raw| String::from_utf8(raw).ok())
        .ok_or_else(|| {
            S3Error::InvalidArgument("The continuation token provided is incorrect".into())
        })
}

pub fn list_buckets(list: BucketList) -> Result<Response, S3Error> {
    let continuation_token = list.next_after().map(encode_token);
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
        continuation_token,
        prefix: list.query.prefix,
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

/// GetBucketEncryption.
pub fn encryption(cfg: BucketEncryption) -> Result<Response, S3Error> {
    Ok(xml_response(
        StatusCode::OK,
        crate::xml::encryption::render_encryption(&cfg)?,
    ))
}

/// GetBucketLifecycleConfiguration, with the transition setting S3
/// answers alongside.
pub fn lifecycle(cfg: LifecycleConfiguration) -> Result<Response, S3Error> {
    let mut resp = xml_response(
        StatusCode::OK,
        crate::xml::lifecycle::render_lifecycle(&cfg)?,
    );
    crate::api::lifecycle::add_get_headers(resp.headers_mut());
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xml::responses::Owner;
    use godwit_common::types::{BucketInfo, VersioningState};

    fn query(raw: &str) -> Result<BucketsQuery, S3Error> {
        buckets_query(&Query::parse(Some(raw)))
    }

    #[test]
    fn without_paging_parameters_every_bucket_is_listed() {
        assert_eq!(query("").unwrap(), BucketsQuery::default());
    }

    #[test]
    fn any_paging_parameter_pages_by_ten_thousand() {
        for raw in ["prefix=a", "bucket-region=us-east-1", "continuation-token="] {
            assert_eq!(query(raw).unwrap().max, Some(MAX_BUCKETS), "{raw}");
        }
        let q = query("max-buckets=2&prefix=ph&bucket-region=eu-west-1").unwrap();
        assert_eq!(q.max, Some(2));
        assert_eq!(q.prefix.as_deref(), Some("ph"));
        assert_eq!(q.region.as_deref(), Some("eu-west-1"));
        assert_eq!(query("max-buckets=10000").unwrap().max, Some(10_000));
        // An empty prefix is still echoed.
        assert_eq!(query("prefix=").unwrap().prefix.as_deref(), Some(""));
    }

    #[test]
    fn max_buckets_outside_1_to_10000_is_invalid_argument() {
        for raw in [
            "max-buckets=0",
            "max-buckets=10001",
            "max-buckets=-1",
            "max-buckets=abc",
            "max-buckets=",
        ] {
            assert!(
                matches!(query(raw), Err(S3Error::InvalidArgument(m)) if m.contains("max-buckets")),
                "{raw}"
            );
        }
    }

    #[test]
    fn continuation_tokens_round_trip_and_bad_ones_are_refused() {
        for name in ["a", "photos-2024", "x.y-z"] {
            let token = encode_token(name);
            assert!(!token.contains(['+', '/', '=']), "{token}");
            let q = query(&format!("continuation-token={token}")).unwrap();
            assert_eq!(q.after.as_deref(), Some(name));
        }
        assert!(matches!(
            query("continuation-token=%2A%2A%2A"),
            Err(S3Error::InvalidArgument(m)) if m.contains("continuation token")
        ));
    }

    #[tokio::test]
    async fn a_truncated_page_carries_the_token_of_its_last_bucket_and_echoes_prefix() {
        let bucket = |name: &str| BucketInfo {
            name: name.into(),
            created_ms: 0,
            region: "us-east-1".into(),
            versioning: VersioningState::Unversioned,
            owner: String::new(),
            policy: None,
            access: Default::default(),
            config: Default::default(),
        };
        let list = BucketList {
            owner: Owner::new("id", "name"),
            buckets: vec![bucket("pa"), bucket("pb")],
            is_truncated: true,
            query: BucketsQuery {
                prefix: Some("p".into()),
                max: Some(2),
                ..Default::default()
            },
        };
        let resp = list_buckets(list).unwrap();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let xml = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            xml.contains(&format!(
                "</Buckets><ContinuationToken>{}</ContinuationToken><Prefix>p</Prefix>",
                encode_token("pb")
            )),
            "{xml}"
        );
        assert!(
            xml.contains("<Bucket><Name>pa</Name><CreationDate>1970-01-01T00:00:00.000Z</CreationDate><BucketRegion>us-east-1</BucketRegion></Bucket>"),
            "{xml}"
        );
    }
}
