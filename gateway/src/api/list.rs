//! The queries of ListObjects (v1), ListObjectsV2 and ListObjectVersions
//! and the pages they fetch, which each dialect renders its own way
//! (`s3::list`, `oss::ops`): page sizes, `encoding-type`, markers and
//! continuation tokens.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use godwit_common::types::{
    ListObjectsPage, ListObjectsQuery, ListVersionsPage, ListVersionsQuery,
};

use super::Ctx;
use crate::error::S3Error;
use crate::router::Query;
use crate::xml::responses::CommonPrefix;
use crate::xml::url_encode;

/// Default and largest page of a listing.
pub const MAX_KEYS: usize = 1000;

/// `max-keys` (also `max-uploads`, `max-parts`): a non-negative integer,
/// capped at 1000.
pub fn parse_max(query: &Query, name: &str) -> Result<usize, S3Error> {
    match query.get(name) {
        None => Ok(MAX_KEYS),
        Some(raw) => raw
            .trim()
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= 0)
            .map(|n| (n as usize).min(MAX_KEYS))
            .ok_or_else(|| {
                S3Error::InvalidArgument(format!(
                    "Provided {name} not an integer or within integer range"
                ))
            }),
    }
}

/// `encoding-type`: only `url` exists.
pub fn parse_encoding(query: &Query) -> Result<bool, S3Error> {
    match query.get("encoding-type") {
        None => Ok(false),
        Some(e) if e.eq_ignore_ascii_case("url") => Ok(true),
        Some(_) => Err(S3Error::InvalidArgument(
            "Invalid Encoding Method specified in Request".into(),
        )),
    }
}

/// Applies `encoding-type=url` to a key or prefix in a response.
pub struct Enc(pub bool);

impl Enc {
    pub fn s(&self, s: &str) -> String {
        if self.0 {
            url_encode(s)
        } else {
            s.to_string()
        }
    }

    pub fn opt(&self, s: Option<&str>) -> Option<String> {
        s.map(|s| self.s(s))
    }

    pub fn prefixes(&self, prefixes: &[String]) -> Vec<CommonPrefix> {
        prefixes
            .iter()
            .map(|p| CommonPrefix { prefix: self.s(p) })
            .collect()
    }

    pub fn name(&self) -> Option<String> {
        self.0.then(|| "url".to_string())
    }
}

/// V2 continuation tokens are opaque to clients: base64 of the last key
/// or common prefix returned.
pub fn encode_token(last: &str) -> String {
    B64.encode(last.as_bytes())
}

pub fn decode_token(token: &str) -> Result<String, S3Error> {
    B64.decode(token.trim())
        .ok()
        .and_then(|raw| String::from_utf8(raw).ok())
        .ok_or_else(|| {
            S3Error::InvalidArgument("The continuation token provided is incorrect".into())
        })
}

pub(crate) fn non_empty(s: Option<&str>) -> Option<String> {
    s.filter(|s| !s.is_empty()).map(str::to_string)
}

pub(crate) async fn fetch(
    ctx: &Ctx,
    prefix: &str,
    delimiter: Option<String>,
    start_after: Option<String>,
    max_keys: usize,
) -> Result<ListObjectsPage, S3Error> {
    if max_keys == 0 {
        ctx.gw.meta.get_bucket(ctx.bucket()).await?;
        return Ok(ListObjectsPage::default());
    }
    let q = ListObjectsQuery {
        bucket: ctx.bucket().to_string(),
        prefix: prefix.to_string(),
        delimiter,
        start_after,
        max_keys,
    };
    Ok(ctx.gw.meta.list_objects(q).await?)
}

/// What every listing reads from its query: the page size (`max-keys`,
/// `max-uploads`), `encoding-type`, `prefix` and `delimiter`.
pub(crate) struct Listing {
    pub max: usize,
    pub enc: Enc,
    pub prefix: String,
    pub delimiter: Option<String>,
}

impl Listing {
    pub(crate) fn parse(q: &Query, max_name: &str) -> Result<Self, S3Error> {
        Ok(Listing {
            max: parse_max(q, max_name)?,
            enc: Enc(parse_encoding(q)?),
            prefix: q.get("prefix").unwrap_or_default().to_string(),
            delimiter: non_empty(q.get("delimiter")),
        })
    }
}

/// A ListObjects (v1) request and its page, shared by the S3 and OSS
/// renderings.
pub(crate) struct V1Listing {
    pub list: Listing,
    pub marker: Option<String>,
    pub page: ListObjectsPage,
}

pub(crate) async fn fetch_v1(ctx: &Ctx) -> Result<V1Listing, S3Error> {
    let list = Listing::parse(&ctx.query, "max-keys")?;
    let marker = non_empty(ctx.query.get("marker"));
    let page = fetch(
        ctx,
        &list.prefix,
        list.delimiter.clone(),
        marker.clone(),
        list.max,
    )
    .await?;
    Ok(V1Listing { list, marker, page })
}

/// A ListObjectsV2 request as parsed, before its page is fetched.
/// `token` is the `continuation-token` as sent (S3 echoes an empty one;
/// OSS drops it before fetching).
pub(crate) struct V2Query {
    pub list: Listing,
    pub token: Option<String>,
    pub start_after: Option<String>,
    pub fetch_owner: bool,
}

impl V2Query {
    pub(crate) fn parse(q: &Query) -> Result<Self, S3Error> {
        Ok(V2Query {
            list: Listing::parse(q, "max-keys")?,
            token: q.get("continuation-token").map(str::to_string),
            start_after: non_empty(q.get("start-after")),
            fetch_owner: q
                .get("fetch-owner")
                .is_some_and(|v| v.eq_ignore_ascii_case("true")),
        })
    }

    /// The page after the continuation token, else after `start-after`.
    pub(crate) async fn fetch(&self, ctx: &Ctx) -> Result<ListObjectsPage, S3Error> {
        let from = match &self.token {
            Some(t) => Some(decode_token(t)?),
            None => self.start_after.clone(),
        };
        let list = &self.list;
        fetch(ctx, &list.prefix, list.delimiter.clone(), from, list.max).await
    }
}

/// A ListObjectVersions request as parsed, before its page is fetched.
pub(crate) struct VersionsQuery {
    pub list: Listing,
    pub key_marker: Option<String>,
    pub version_id_marker: Option<String>,
}

impl VersionsQuery {
    pub(crate) fn parse(q: &Query) -> Result<Self, S3Error> {
        Ok(VersionsQuery {
            list: Listing::parse(q, "max-keys")?,
            key_marker: non_empty(q.get("key-marker")),
            version_id_marker: non_empty(q.get("version-id-marker")),
        })
    }

    pub(crate) async fn fetch(&self, ctx: &Ctx) -> Result<ListVersionsPage, S3Error> {
        let list = &self.list;
        if list.max == 0 {
            ctx.gw.meta.get_bucket(ctx.bucket()).await?;
            return Ok(ListVersionsPage::default());
        }
        Ok(ctx
            .gw
            .meta
            .list_versions(ListVersionsQuery {
                bucket: ctx.bucket().to_string(),
                prefix: list.prefix.clone(),
                delimiter: list.delimiter.clone(),
                key_marker: self.key_marker.clone(),
                version_id_marker: self.version_id_marker.clone(),
                max_keys: list.max,
            })
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn max_keys_defaults_caps_and_rejects() {
        assert_eq!(parse_max(&Query::parse(None), "max-keys").unwrap(), 1000);
        assert_eq!(
            parse_max(&Query::parse(Some("max-keys=5000")), "max-keys").unwrap(),
            1000
        );
        assert_eq!(
            parse_max(&Query::parse(Some("max-keys=0")), "max-keys").unwrap(),
            0
        );
        assert_eq!(
            parse_max(&Query::parse(Some("max-keys=7")), "max-keys").unwrap(),
            7
        );
        for bad in ["max-keys=-1", "max-keys=abc", "max-keys="] {
            assert!(
                matches!(
                    parse_max(&Query::parse(Some(bad)), "max-keys"),
                    Err(S3Error::InvalidArgument(_))
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn encoding_type_is_url_or_nothing() {
        assert!(!parse_encoding(&Query::parse(None)).unwrap());
        assert!(parse_encoding(&Query::parse(Some("encoding-type=url"))).unwrap());
        assert!(parse_encoding(&Query::parse(Some("encoding-type=base64"))).is_err());
    }

    #[test]
    fn continuation_tokens_round_trip() {
        for key in ["a", "dir/sub/key with space", "ключ"] {
            assert_eq!(decode_token(&encode_token(key)).unwrap(), key);
        }
        assert!(
            matches!(decode_token("***"), Err(S3Error::InvalidArgument(m)) if m.contains("continuation token"))
        );
    }
}
