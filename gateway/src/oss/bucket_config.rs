//! The OSS dialect's bucket CORS rules, bucket tags and default
//! encryption: the same stored documents as S3's (`BucketConfig`), with
//! OSS's limits and answers.
//!
//! - PutBucketCors takes at most 10 rules, no `ID`, and a root
//!   `ResponseVary`; refused values are InvalidArgument. GetBucketCors
//!   answers the rules without IDs, and `ResponseVary` always (oss2 reads
//!   it when present).
//! - PutBucketTags takes at most 20 tags, keys of up to 64 bytes and
//!   values of up to 128, and no key under OSS's reserved prefixes.
//!   GetBucketTags of a bucket without tags answers an empty set, and
//!   DeleteBucketTags `?tagging=k1,k2` removes only the keys named.
//! - PutBucketEncryption takes one `<ServerSideEncryptionRule>`; AES256
//!   is stored (with an empty `KMSMasterKeyID`, as OSS's own example
//!   sends it), KMS and SM4 are refused with InvalidArgument (no key
//!   management service, no SM4 cipher). GetBucketEncryption of a bucket
//!   without a rule is NoSuchServerSideEncryptionRule (`oss::error`).

use axum::response::Response;
use godwit_common::bucket_config::{
    BucketEncryption, ConfigChange, CorsConfiguration, EncryptionRule, SseByDefault, Tag,
};
use http::StatusCode;
use serde::Serialize;

use crate::api::bucket::change_config;
use crate::api::{empty_response, xml_response, ApiResult, Ctx};
use crate::error::S3Error;
use crate::xml::cors::CorsSchema;
use crate::xml::encryption::KMS_UNAVAILABLE;
use crate::xml::render;
use crate::xml::tree::{self, Element};

/// OSS's CORS document (PutBucketCors in OSS's API reference).
pub const OSS_CORS: CorsSchema = CorsSchema {
    max_rules: 10,
    ids: false,
    response_vary: true,
    invalid: S3Error::InvalidArgument,
};

/// Most tags on an OSS bucket.
const MAX_TAGS: usize = 20;
/// Longest key and value, in bytes.
const MAX_KEY_BYTES: usize = 64;
const MAX_VALUE_BYTES: usize = 128;
/// Prefixes OSS keeps for itself (compared without case).
const RESERVED_PREFIXES: [&str; 4] = ["http://", "https://", "aliyun", "acs:"];

#[derive(Serialize)]
struct CorsOut<'a> {
    #[serde(rename = "CORSRule")]
    rules: Vec<RuleOut<'a>>,
    #[serde(rename = "ResponseVary")]
    response_vary: bool,
}

#[derive(Serialize)]
struct RuleOut<'a> {
    #[serde(rename = "AllowedOrigin")]
    origins: &'a [String],
    #[serde(rename = "AllowedMethod")]
    methods: Vec<&'static str>,
    #[serde(rename = "AllowedHeader")]
    headers: &'a [String],
    #[serde(rename = "ExposeHeader")]
    expose: &'a [String],
    #[serde(rename = "MaxAgeSeconds", skip_serializing_if = "Option::is_none")]
    max_age: Option<u32>,
}

/// The GetBucketCors document of OSS.
pub fn render_cors(cfg: CorsConfiguration) -> Result<Response, S3Error> {
    let doc = CorsOut {
        rules: cfg
            .rules
            .iter()
            .map(|r| RuleOut {
                origins: &r.allowed_origins,
                methods: r.allowed_methods.iter().map(|m| m.as_str()).collect(),
                headers: &r.allowed_headers,
                expose: &r.expose_headers,
                max_age: r.max_age_seconds,
            })
            .collect(),
        response_vary: cfg.response_vary.unwrap_or(false),
    };
    Ok(xml_response(
        StatusCode::OK,
        render("CORSConfiguration", &doc)?,
    ))
}

/// OSS's limits on a bucket's tags (PutBucketTags).
pub fn check_tags(tags: Vec<(String, String)>) -> Result<Vec<Tag>, S3Error> {
    if tags.len() > MAX_TAGS {
        return Err(S3Error::InvalidTag(format!(
            "Bucket tag count cannot be greater than {MAX_TAGS}"
        )));
    }
    let mut out: Vec<Tag> = Vec::with_capacity(tags.len());
    for (key, value) in tags {
        if key.is_empty() || key.len() > MAX_KEY_BYTES {
            return Err(S3Error::InvalidTag(
                "The TagKey you have provided is invalid".into(),
            ));
        }
        if value.len() > MAX_VALUE_BYTES {
            return Err(S3Error::InvalidTag(
                "The TagValue you have provided is invalid".into(),
            ));
        }
        let lower = key.to_ascii_lowercase();
        if RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p)) {
            return Err(S3Error::InvalidTag(format!(
                "The TagKey you have provided is reserved: {key}"
            )));
        }
        if out.iter().any(|t| t.key == key) {
            return Err(S3Error::InvalidTag(
                "Cannot provide multiple Tags with the same key".into(),
            ));
        }
        out.push(Tag { key, value });
    }
    Ok(out)
}

/// GetBucketTags: a bucket without tags has an empty set.
pub fn render_tags(tags: Option<Vec<Tag>>) -> Result<Response, S3Error> {
    Ok(xml_response(
        StatusCode::OK,
        crate::xml::tagging::render_tag_list(tags.as_deref().unwrap_or_default())?,
    ))
}

/// DeleteBucketTags: every tag, or with `?tagging=k1,k2` the keys named
/// (read, filtered and written back: a concurrent PutBucketTags lands
/// whole before or after). 204 either way.
pub async fn delete_bucket_tags(ctx: &Ctx) -> ApiResult {
    let named: Vec<&str> = ctx
        .query
        .get("tagging")
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|k| !k.is_empty())
        .collect();
    let kept = match named.is_empty() {
        true => None,
        false => {
            let bucket = ctx.gw.meta.get_bucket(ctx.bucket()).await?;
            let kept: Vec<Tag> = bucket
                .config
                .tags
                .unwrap_or_default()
                .into_iter()
                .filter(|t| !named.contains(&t.key.as_str()))
                .collect();
            (!kept.is_empty()).then_some(kept)
        }
    };
    change_config(ctx, ConfigChange::Tags(kept)).await?;
    Ok(empty_response(StatusCode::NO_CONTENT))
}

// ---- default encryption ----

/// OSS's refusal of SM4, which OSS offers and Godwit does not.
const SM4_UNAVAILABLE: &str =
    "Server-side encryption with SM4 is not available on this server. Use AES256.";

/// Reads and checks OSS's `<ServerSideEncryptionRule>`
/// (https://help.aliyun.com/en/oss/developer-reference/putbucketencryption):
/// one `ApplyServerSideEncryptionByDefault` with an `SSEAlgorithm`, and
/// a `KMSMasterKeyID` and `KMSDataEncryption` that only KMS may fill.
/// Structure errors are MalformedXML; values OSS refuses, InvalidArgument.
pub fn parse_encryption(body: &[u8]) -> Result<BucketEncryption, S3Error> {
    let root = tree::parse(body)?;
    if root.name != "ServerSideEncryptionRule" || !root.blank() {
        return Err(S3Error::MalformedXML);
    }
    let [by_default] = root.children.as_slice() else {
        return Err(S3Error::MalformedXML);
    };
    if by_default.name != "ApplyServerSideEncryptionByDefault" || !by_default.blank() {
        return Err(S3Error::MalformedXML);
    }
    let [algorithm, key, data] = read_default(by_default)?;
    let algorithm = algorithm.ok_or(S3Error::MalformedXML)?;
    let invalid = |m: &str| Err(S3Error::InvalidArgument(m.into()));
    match algorithm.as_str() {
        "AES256" => {}
        "KMS" => return invalid(KMS_UNAVAILABLE),
        "SM4" => return invalid(SM4_UNAVAILABLE),
        // https://help.aliyun.com/en/oss/user-guide/0005-00000003
        _ => return invalid("The server-side encryption type is not supported."),
    }
    // https://help.aliyun.com/en/oss/user-guide/0005-00000204
    if key.is_some_and(|k| !k.is_empty()) {
        return invalid("KMSMasterKeyID is not applicable if the default sse algorithm is not KMS");
    }
    if data.is_some_and(|d| !d.is_empty()) {
        return invalid(
            "KMSDataEncryption is not applicable if the default sse algorithm is not KMS",
        );
    }
    Ok(BucketEncryption {
        rules: vec![EncryptionRule {
            apply: SseByDefault::default(),
            bucket_key_enabled: None,
            blocked_encryption_types: Vec::new(),
        }],
    })
}

/// `SSEAlgorithm`, `KMSMasterKeyID` and `KMSDataEncryption`, trimmed,
/// each at most once; any other element is MalformedXML.
fn read_default(e: &Element) -> Result<[Option<String>; 3], S3Error> {
    let mut out: [Option<String>; 3] = Default::default();
    for child in &e.children {
        let slot = match child.name.as_str() {
            "SSEAlgorithm" => 0,
            "KMSMasterKeyID" => 1,
            "KMSDataEncryption" => 2,
            _ => return Err(S3Error::MalformedXML),
        };
        if out[slot].is_some() {
            return Err(S3Error::MalformedXML);
        }
        out[slot] = Some(child.leaf_text()?.trim().to_string());
    }
    Ok(out)
}

#[derive(Serialize)]
struct EncryptionOut {
    #[serde(rename = "ApplyServerSideEncryptionByDefault")]
    by_default: EncryptionDefaultOut,
}

/// OSS answers `KMSMasterKeyID` only for KMS with a key, which Godwit
/// never stores.
#[derive(Serialize)]
struct EncryptionDefaultOut {
    #[serde(rename = "SSEAlgorithm")]
    algorithm: &'static str,
}

/// The GetBucketEncryption document of OSS (its first rule; OSS has one).
pub fn render_encryption(cfg: BucketEncryption) -> Result<Response, S3Error> {
    let algorithm = cfg
        .default_algorithm()
        .ok_or(S3Error::ServerSideEncryptionConfigurationNotFoundError)?;
    let doc = EncryptionOut {
        by_default: EncryptionDefaultOut {
            algorithm: algorithm.as_str(),
        },
    };
    Ok(xml_response(
        StatusCode::OK,
        render("ServerSideEncryptionRule", &doc)?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::bucket_config::{CorsMethod, CorsRule, SseAlgorithm};

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn invalid_tag(r: Result<Vec<Tag>, S3Error>) -> String {
        match r {
            Err(S3Error::InvalidTag(m)) => m,
            other => panic!("expected InvalidTag, got {other:?}"),
        }
    }

    #[test]
    fn oss_tag_limits() {
        let twenty: Vec<(String, String)> =
            (0..20).map(|i| (format!("k{i}"), "v".into())).collect();
        assert_eq!(check_tags(twenty.clone()).unwrap().len(), 20);
        let mut more = twenty;
        more.push(("k20".into(), "v".into()));
        invalid_tag(check_tags(more));
        let k64 = "k".repeat(64);
        let v128 = "v".repeat(128);
        assert!(check_tags(pairs(&[(&k64, &v128)])).is_ok());
        invalid_tag(check_tags(pairs(&[(&"k".repeat(65), "v")])));
        invalid_tag(check_tags(pairs(&[("k", &"v".repeat(129))])));
        // Bytes, not characters.
        invalid_tag(check_tags(pairs(&[(&"é".repeat(33), "v")])));
        for reserved in ["acs:x", "Aliyun-x", "http://x", "HTTPS://x"] {
            assert!(invalid_tag(check_tags(pairs(&[(reserved, "v")]))).contains("reserved"));
        }
        assert!(check_tags(pairs(&[("aws:x", "v")])).is_ok());
        invalid_tag(check_tags(pairs(&[("a", "1"), ("a", "2")])));
        assert!(check_tags(Vec::new()).unwrap().is_empty());
    }

    #[tokio::test]
    async fn cors_document_has_no_id_and_always_response_vary() {
        let cfg = CorsConfiguration {
            rules: vec![CorsRule {
                id: Some("from-s3".into()),
                allowed_origins: vec!["*".into()],
                allowed_methods: vec![CorsMethod::Get, CorsMethod::Put],
                allowed_headers: vec!["Authorization".into()],
                expose_headers: vec!["x-oss-test".into()],
                max_age_seconds: Some(100),
            }],
            response_vary: None,
        };
        let resp = render_cors(cfg).unwrap();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            text.ends_with(
                "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>\
                 <AllowedMethod>GET</AllowedMethod><AllowedMethod>PUT</AllowedMethod>\
                 <AllowedHeader>Authorization</AllowedHeader><ExposeHeader>x-oss-test</ExposeHeader>\
                 <MaxAgeSeconds>100</MaxAgeSeconds></CORSRule>\
                 <ResponseVary>false</ResponseVary></CORSConfiguration>"
            ),
            "{text}"
        );
        // What oss2 sends reads back.
        let sent = "<CORSConfiguration><CORSRule><AllowedOrigin>*</AllowedOrigin>\
                    <AllowedMethod>GET</AllowedMethod></CORSRule>\
                    <ResponseVary>true</ResponseVary></CORSConfiguration>";
        let parsed = crate::xml::cors::parse_cors(sent.as_bytes(), &OSS_CORS).unwrap();
        assert_eq!(parsed.response_vary, Some(true));
    }

    fn oss_rule(inner: &str) -> String {
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ServerSideEncryptionRule>\
             <ApplyServerSideEncryptionByDefault>{inner}</ApplyServerSideEncryptionByDefault>\
             </ServerSideEncryptionRule>"
        )
    }

    fn invalid_argument(r: Result<BucketEncryption, S3Error>) -> String {
        match r {
            Err(S3Error::InvalidArgument(m)) => m,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn oss_encryption_rule_takes_aes256_only() {
        // As OSS's example and oss2 send it.
        for inner in [
            "<SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID></KMSMasterKeyID>",
            "<SSEAlgorithm>AES256</SSEAlgorithm>",
            "<SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID/><KMSDataEncryption/>",
        ] {
            let cfg = parse_encryption(oss_rule(inner).as_bytes()).unwrap();
            assert_eq!(
                cfg.default_algorithm(),
                Some(SseAlgorithm::Aes256),
                "{inner}"
            );
        }
        assert_eq!(
            invalid_argument(parse_encryption(
                oss_rule("<SSEAlgorithm>KMS</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID>")
                    .as_bytes()
            )),
            KMS_UNAVAILABLE
        );
        assert_eq!(
            invalid_argument(parse_encryption(
                oss_rule("<SSEAlgorithm>SM4</SSEAlgorithm>").as_bytes()
            )),
            SM4_UNAVAILABLE
        );
        for inner in [
            "<SSEAlgorithm>DES</SSEAlgorithm>",
            "<SSEAlgorithm>aws:kms</SSEAlgorithm>",
            "<SSEAlgorithm>AES256</SSEAlgorithm><KMSMasterKeyID>k</KMSMasterKeyID>",
            "<SSEAlgorithm>AES256</SSEAlgorithm><KMSDataEncryption>SM4</KMSDataEncryption>",
        ] {
            invalid_argument(parse_encryption(oss_rule(inner).as_bytes()));
        }
        for body in [
            oss_rule(""),
            oss_rule("<KMSMasterKeyID/>"),
            oss_rule("<SSEAlgorithm>AES256</SSEAlgorithm><SSEAlgorithm>AES256</SSEAlgorithm>"),
            oss_rule("<SSEAlgorithm>AES256</SSEAlgorithm><Other/>"),
            "<ServerSideEncryptionRule/>".into(),
            "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault>\
             <SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault></Rule>\
             </ServerSideEncryptionConfiguration>"
                .into(),
        ] {
            assert!(
                matches!(
                    parse_encryption(body.as_bytes()),
                    Err(S3Error::MalformedXML)
                ),
                "{body}"
            );
        }
    }

    #[tokio::test]
    async fn oss_encryption_document_has_the_algorithm_and_no_namespace() {
        let cfg =
            parse_encryption(oss_rule("<SSEAlgorithm>AES256</SSEAlgorithm>").as_bytes()).unwrap();
        let resp = render_encryption(cfg).unwrap();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        assert_eq!(text, oss_rule("<SSEAlgorithm>AES256</SSEAlgorithm>"));
    }
}
