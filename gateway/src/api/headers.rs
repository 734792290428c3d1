//! Object headers: the standard content headers and `x-amz-meta-*` taken
//! from a write request, and written back on GET/HEAD (with the
//! `response-*` query overrides).

use std::collections::BTreeMap;

use godwit_common::types::{ContentHeaders, ObjectVersion};
use http::HeaderMap;

use super::set_header;
use crate::error::S3Error;
use crate::router::Query;
use crate::xml::{http_date, quote_etag};

/// The type S3 reports for objects stored without a Content-Type.
pub const DEFAULT_CONTENT_TYPE: &str = "binary/octet-stream";

/// User metadata limit: keys plus values, in UTF-8 bytes
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/UsingMetadata.html).
pub const MAX_USER_META: usize = 2048;

const USER_META_PREFIX: &str = "x-amz-meta-";

fn header_text(headers: &HeaderMap, name: &str) -> Option<String> {
    let values: Vec<String> = headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect();
    (!values.is_empty()).then(|| values.join(","))
}

/// The Content-Encoding S3 stores for `raw`: the `aws-chunked` coding
/// (any case, any spacing) removed, since it only describes the request's
/// framing, and everything else exactly as sent (`gzip, br` stays
/// `gzip, br`). None when nothing else was named: S3 then stores no
/// Content-Encoding at all. A value without `aws-chunked` is stored as is.
pub fn without_aws_chunked(raw: &str) -> Option<String> {
    let is_aws_chunked = |c: &str| c.trim().eq_ignore_ascii_case("aws-chunked");
    if !raw.split(',').any(is_aws_chunked) {
        let raw = raw.trim();
        return (!raw.is_empty()).then(|| raw.to_string());
    }
    let kept: Vec<&str> = raw
        .split(',')
        .filter(|c| !is_aws_chunked(c) && !c.trim().is_empty())
        .collect();
    let joined = kept.join(",");
    let joined = joined.trim();
    (!joined.is_empty()).then(|| joined.to_string())
}

fn stored_encoding(headers: &HeaderMap) -> Option<String> {
    without_aws_chunked(&header_text(headers, "content-encoding")?)
}

pub fn content_headers(headers: &HeaderMap) -> ContentHeaders {
    ContentHeaders {
        content_type: header_text(headers, "content-type"),
        content_encoding: stored_encoding(headers),
        content_disposition: header_text(headers, "content-disposition"),
        content_language: header_text(headers, "content-language"),
        cache_control: header_text(headers, "cache-control"),
        expires: header_text(headers, "expires"),
    }
}

/// `x-amz-meta-*` (names lower-cased by HTTP parsing), MetadataTooLarge
/// above 2 KiB.
pub fn user_meta(headers: &HeaderMap) -> Result<BTreeMap<String, String>, S3Error> {
    let mut meta = BTreeMap::new();
    for name in headers.keys() {
        if let Some(short) = name.as_str().strip_prefix(USER_META_PREFIX) {
            if let Some(value) = header_text(headers, name.as_str()) {
                meta.insert(short.to_string(), value);
            }
        }
    }
    let size: usize = meta.iter().map(|(k, v)| k.len() + v.len()).sum();
    if size > MAX_USER_META {
        return Err(S3Error::MetadataTooLarge);
    }
    Ok(meta)
}

/// The headers of a GET/HEAD response describing `v` (not the length or
/// range, which depend on the request). `show_version_id`: see
/// `s3::shows_version_id`.
pub fn write_object_headers(
    out: &mut HeaderMap,
    v: &ObjectVersion,
    query: &Query,
    show_version_id: bool,
) {
    let h = &v.headers;
    let pick = |param: &str, stored: &Option<String>| -> Option<String> {
        query
            .get(param)
            .map(str::to_string)
            .or_else(|| stored.clone())
    };
    let content_type = pick("response-content-type", &h.content_type)
        .unwrap_or_else(|| DEFAULT_CONTENT_TYPE.into());
    set_header(out, "content-type", &content_type);
    let optional = [
        (
            "content-encoding",
            pick("response-content-encoding", &h.content_encoding),
        ),
        (
            "content-disposition",
            pick("response-content-disposition", &h.content_disposition),
        ),
        (
            "content-language",
            pick("response-content-language", &h.content_language),
        ),
        (
            "cache-control",
            pick("response-cache-control", &h.cache_control),
        ),
        ("expires", pick("response-expires", &h.expires)),
    ];
    for (name, value) in optional {
        if let Some(value) = value {
            set_header(out, name, &value);
        }
    }
    set_header(out, "etag", &quote_etag(&v.etag));
    set_header(out, "last-modified", &http_date(v.last_modified_ms));
    set_header(out, "accept-ranges", "bytes");
    super::version_header(out, &v.version_id, show_version_id);
    for (k, val) in &v.user_meta {
        set_header(out, &format!("{USER_META_PREFIX}{k}"), val);
    }
    if let Some(status) = v.replication_status {
        set_header(out, "x-amz-replication-status", status.as_header());
    }
    if !v.tags.is_empty() {
        set_header(out, "x-amz-tagging-count", &v.tags.len().to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use godwit_common::types::{Checksums, ObjectData};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
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
    fn aws_chunked_is_not_stored() {
        let h = headers(&[("content-encoding", "aws-chunked")]);
        assert_eq!(content_headers(&h).content_encoding, None);
        let h = headers(&[("content-encoding", "aws-chunked,gzip")]);
        assert_eq!(
            content_headers(&h).content_encoding.as_deref(),
            Some("gzip")
        );
        let h = headers(&[("content-encoding", "gzip")]);
        assert_eq!(
            content_headers(&h).content_encoding.as_deref(),
            Some("gzip")
        );
        // Two header lines are one list.
        let h = headers(&[
            ("content-encoding", "gzip"),
            ("content-encoding", "aws-chunked"),
        ]);
        assert_eq!(
            content_headers(&h).content_encoding.as_deref(),
            Some("gzip")
        );
    }

    #[test]
    fn only_aws_chunked_is_removed_the_rest_is_kept_as_sent() {
        for (sent, stored) in [
            ("aws-chunked", None),
            (" AWS-Chunked ", None),
            ("aws-chunked, aws-chunked", None),
            ("aws-chunked,gzip", Some("gzip")),
            ("gzip,aws-chunked", Some("gzip")),
            ("gzip, aws-chunked", Some("gzip")),
            ("aws-chunked, gzip", Some("gzip")),
            ("Aws-Chunked,gzip", Some("gzip")),
            ("gzip, AWS-CHUNKED, br", Some("gzip, br")),
            ("aws-chunked,gzip, br", Some("gzip, br")),
            // Without aws-chunked, untouched.
            ("deflate, gzip", Some("deflate, gzip")),
            ("gzip,br", Some("gzip,br")),
            ("x-custom;q=1", Some("x-custom;q=1")),
            ("", None),
        ] {
            assert_eq!(without_aws_chunked(sent).as_deref(), stored, "{sent:?}");
        }
    }

    #[test]
    fn user_meta_is_collected_and_limited() {
        let h = headers(&[
            ("X-Amz-Meta-Color", "blue"),
            ("x-amz-meta-shape", "round"),
            ("x-amz-other", "no"),
        ]);
        let meta = user_meta(&h).unwrap();
        assert_eq!(meta.len(), 2);
        assert_eq!(meta["color"], "blue");
        let big = "v".repeat(2048);
        let h = headers(&[("x-amz-meta-k", &big)]);
        assert!(matches!(user_meta(&h), Err(S3Error::MetadataTooLarge)));
        let fits = "v".repeat(2047);
        let h = headers(&[("x-amz-meta-k", &fits)]);
        assert!(user_meta(&h).is_ok());
    }

    #[test]
    fn response_overrides_win_and_type_defaults() {
        let v = ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "null".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 1_796_011_200_000,
            size: 3,
            etag: "abc".into(),
            headers: ContentHeaders {
                cache_control: Some("no-cache".into()),
                ..Default::default()
            },
            user_meta: [("color".to_string(), "blue".to_string())].into(),
            checksums: Checksums::default(),
            data: ObjectData::Inline(vec![]),
            parts: vec![],
            tags: Default::default(),
            owner: "ak".into(),
            acl: None,
            replication_status: None,
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        };
        let mut out = HeaderMap::new();
        write_object_headers(
            &mut out,
            &v,
            &Query::parse(Some("response-cache-control=max-age%3D5")),
            false,
        );
        assert_eq!(out["content-type"], "binary/octet-stream");
        assert_eq!(out["cache-control"], "max-age=5");
        assert_eq!(out["etag"], "\"abc\"");
        assert_eq!(out["last-modified"], "Mon, 30 Nov 2026 04:00:00 GMT");
        assert_eq!(out["x-amz-meta-color"], "blue");
        assert!(out.get("x-amz-version-id").is_none());
        // Neither replication status nor tags: no headers for them.
        assert!(out.get("x-amz-replication-status").is_none());
        assert!(out.get("x-amz-tagging-count").is_none());
        // A "null" version of a bucket that has had versioning says so.
        let mut out = HeaderMap::new();
        write_object_headers(&mut out, &v, &Query::parse(None), true);
        assert_eq!(out["x-amz-version-id"], "null");
    }

    #[test]
    fn replication_status_and_tag_count_are_shown() {
        use godwit_common::replication::ReplicationStatus;
        let mut v = ObjectVersion {
            bucket: "b".into(),
            key: "k".into(),
            version_id: "v1".into(),
            is_delete_marker: false,
            is_latest: true,
            last_modified_ms: 0,
            size: 0,
            etag: "e".into(),
            headers: ContentHeaders::default(),
            user_meta: Default::default(),
            checksums: Checksums::default(),
            data: ObjectData::Inline(vec![]),
            parts: vec![],
            tags: [("a", "1"), ("b", "2")]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            owner: String::new(),
            acl: None,
            replication_status: Some(ReplicationStatus::Pending),
            replica_of: None,
            oss_type: None,
            lock: Default::default(),
            sse: None,
        };
        for (status, shown) in [
            (ReplicationStatus::Pending, "PENDING"),
            (ReplicationStatus::Completed, "COMPLETED"),
            (ReplicationStatus::Failed, "FAILED"),
            (ReplicationStatus::Replica, "REPLICA"),
        ] {
            v.replication_status = Some(status);
            let mut out = HeaderMap::new();
            write_object_headers(&mut out, &v, &Query::parse(None), true);
            assert_eq!(out["x-amz-replication-status"], shown);
            assert_eq!(out["x-amz-tagging-count"], "2");
        }
    }
}
