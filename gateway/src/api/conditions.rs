//! Conditional requests: If-Match, If-None-Match, If-Modified-Since,
//! If-Unmodified-Since (and their `x-amz-copy-source-if-*` twins), with
//! S3's precedence
//! (https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html,
//! RFC 7232 section 6).

use godwit_common::types::{EtagMatch, WritePrecondition};
use http::HeaderMap;

use crate::error::S3Error;
use crate::xml::unquote_etag;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Conditions {
    pub if_match: Option<String>,
    pub if_none_match: Option<String>,
    /// Seconds since the epoch.
    pub if_modified_since: Option<i64>,
    pub if_unmodified_since: Option<i64>,
}

fn parse_date(value: &str) -> Option<i64> {
    let t = httpdate::parse_http_date(value.trim()).ok()?;
    t.duration_since(std::time::UNIX_EPOCH)
        .ok()
        .map(|d| d.as_secs() as i64)
}

impl Conditions {
    /// Reads `<prefix>if-match` etc.; `prefix` is "" or
    /// "x-amz-copy-source-". Unparsable dates are ignored, as S3 does.
    pub fn from_headers(headers: &HeaderMap, prefix: &str) -> Self {
        let get = |name: &str| {
            headers
                .get(format!("{prefix}{name}"))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        Conditions {
            if_match: get("if-match"),
            if_none_match: get("if-none-match"),
            if_modified_since: get("if-modified-since").as_deref().and_then(parse_date),
            if_unmodified_since: get("if-unmodified-since").as_deref().and_then(parse_date),
        }
    }

    pub fn is_empty(&self) -> bool {
        *self == Conditions::default()
    }

    /// Ok to proceed, PreconditionFailed (412), or NotModified (304; for
    /// copy sources, where S3 has no 304, pass `not_modified_is_412`).
    pub fn evaluate(
        &self,
        etag: &str,
        last_modified_ms: i64,
        not_modified_is_412: bool,
    ) -> Result<(), S3Error> {
        // HTTP dates have whole seconds; so does the comparison.
        let lm = last_modified_ms.div_euclid(1000);
        let matches = self
            .if_match
            .as_deref()
            .map(|list| etag_in(list, etag, Comparison::Strong));
        let unmodified = self.if_unmodified_since.map(|t| lm <= t);
        let none_match = self
            .if_none_match
            .as_deref()
            .map(|list| !etag_in(list, etag, Comparison::Weak));
        let modified = self.if_modified_since.map(|t| lm > t);
        let not_modified = if not_modified_is_412 {
            S3Error::PreconditionFailed
        } else {
            S3Error::NotModified
        };

        match (matches, unmodified) {
            // If-Match failed: nothing else matters.
            (Some(false), _) => return Err(S3Error::PreconditionFailed),
            // If-Match held: S3 then ignores If-Unmodified-Since.
            (Some(true), _) => {}
            // Only If-Unmodified-Since, and the object changed since.
            (None, Some(false)) => return Err(S3Error::PreconditionFailed),
            (None, _) => {}
        }
        match (none_match, modified) {
            // The ETag is one the client has: 304 (412 for a copy source),
            // whatever If-Modified-Since says.
            (Some(false), _) => Err(not_modified),
            // If-None-Match held: If-Modified-Since is ignored (RFC 7232 3.3).
            (Some(true), _) => Ok(()),
            // Only If-Modified-Since, and nothing changed.
            (None, Some(false)) => Err(not_modified),
            (None, _) => Ok(()),
        }
    }
}

/// The precondition of a conditional write (PutObject, CopyObject,
/// CompleteMultipartUpload), None when the request has none:
/// `If-None-Match: *` writes only when the key has no current object, and
/// `If-Match` only when the current object has one of the listed ETags
/// (https://docs.aws.amazon.com/AmazonS3/latest/userguide/conditional-writes.html).
/// Meta evaluates it in the command that commits the write
/// (`WritePrecondition::evaluate`), so racing writers cannot both pass.
///
/// `If-None-Match` takes only `*`; any other value is functionality S3
/// does not offer for writes (501 NotImplemented). `If-Match` takes `*`
/// (any current object) or a comma-separated list of ETags, quoted or
/// not; a weak ETag (`W/"..."`) never matches, as RFC 7232 section 3.1
/// has it for If-Match.
pub fn write_precondition(headers: &HeaderMap) -> Result<Option<WritePrecondition>, S3Error> {
    let text = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).trim().to_string())
    };
    let if_none_match_any = match text("if-none-match") {
        None => false,
        Some(v) if v == "*" => true,
        Some(_) => return Err(S3Error::NotImplemented),
    };
    let if_match = text("if-match").map(|list| {
        let candidates: Vec<&str> = list.split(',').map(str::trim).collect();
        if candidates.contains(&"*") {
            return EtagMatch::Any;
        }
        EtagMatch::OneOf(
            candidates
                .into_iter()
                .filter(|c| !c.is_empty() && !c.starts_with("W/"))
                .map(|c| unquote_etag(c).to_string())
                .collect(),
        )
    });
    if !if_none_match_any && if_match.is_none() {
        return Ok(None);
    }
    Ok(Some(WritePrecondition {
        if_none_match_any,
        if_match,
    }))
}

/// RFC 7232 section 2.3.2: If-Match compares strongly (a weak
/// `W/"..."` candidate never matches), If-None-Match weakly.
#[derive(Clone, Copy)]
enum Comparison {
    Strong,
    Weak,
}

/// Whether `etag` is in a comma-separated If-Match / If-None-Match list
/// (`*` matches any existing object).
fn etag_in(list: &str, etag: &str, comparison: Comparison) -> bool {
    list.split(',').map(str::trim).any(|candidate| {
        let weak = candidate.starts_with("W/");
        candidate == "*"
            || (!(weak && matches!(comparison, Comparison::Strong))
                && unquote_etag(candidate) == etag)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const ETAG: &str = "abc";
    /// Last-Modified: second 1000 (plus 500 ms).
    const LM_MS: i64 = 1_000_500;

    fn c(im: Option<&str>, inm: Option<&str>, ims: Option<i64>, ius: Option<i64>) -> Conditions {
        Conditions {
            if_match: im.map(str::to_string),
            if_none_match: inm.map(str::to_string),
            if_modified_since: ims,
            if_unmodified_since: ius,
        }
    }

    fn eval(cond: Conditions) -> &'static str {
        match cond.evaluate(ETAG, LM_MS, false) {
            Ok(()) => "200",
            Err(S3Error::NotModified) => "304",
            Err(S3Error::PreconditionFailed) => "412",
            Err(e) => panic!("{e:?}"),
        }
    }

    #[test]
    fn decision_table() {
        let before = Some(999);
        let at = Some(1000);
        let cases = [
            (c(None, None, None, None), "200"),
            (c(Some("\"abc\""), None, None, None), "200"),
            (c(Some("abc"), None, None, None), "200"),
            (c(Some("*"), None, None, None), "200"),
            (c(Some("\"x\", \"abc\""), None, None, None), "200"),
            (c(Some("\"x\""), None, None, None), "412"),
            // If-Match compares strongly: a weak ETag never matches.
            (c(Some("W/\"abc\""), None, None, None), "412"),
            (c(Some("W/\"abc\", \"abc\""), None, None, None), "200"),
            // If-None-Match compares weakly.
            (c(None, Some("W/\"abc\""), None, None), "304"),
            (c(None, None, None, at), "200"),
            (c(None, None, None, before), "412"),
            // If-Match true + If-Unmodified-Since false: 200 (S3 doc).
            (c(Some("\"abc\""), None, None, before), "200"),
            (c(Some("\"x\""), None, None, at), "412"),
            (c(None, Some("\"abc\""), None, None), "304"),
            (c(None, Some("*"), None, None), "304"),
            (c(None, Some("\"x\""), None, None), "200"),
            (c(None, None, at, None), "304"),
            (c(None, None, before, None), "200"),
            // If-None-Match false + If-Modified-Since true: 304 (S3 doc).
            (c(None, Some("\"abc\""), before, None), "304"),
            // If-None-Match true: If-Modified-Since ignored.
            (c(None, Some("\"x\""), at, None), "200"),
            // 412 wins over 304.
            (c(Some("\"x\""), Some("\"abc\""), None, None), "412"),
            (c(None, Some("\"abc\""), None, before), "412"),
        ];
        for (cond, want) in cases {
            assert_eq!(eval(cond.clone()), want, "{cond:?}");
        }
    }

    #[test]
    fn write_preconditions_from_headers() {
        let parse = |pairs: &[(&str, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.append(
                    http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                    v.parse().unwrap(),
                );
            }
            write_precondition(&h)
        };
        let one_of = |etags: &[&str]| {
            Some(EtagMatch::OneOf(
                etags.iter().map(|e| e.to_string()).collect(),
            ))
        };
        assert_eq!(parse(&[]).unwrap(), None);
        let p = parse(&[("if-none-match", " * "), ("if-match", "\"abc\"")])
            .unwrap()
            .unwrap();
        assert!(p.if_none_match_any);
        assert_eq!(p.if_match, one_of(&["abc"]));
        let if_match = |v: &str| parse(&[("if-match", v)]).unwrap().unwrap().if_match;
        assert_eq!(if_match("abc"), one_of(&["abc"]));
        assert_eq!(if_match("\"x\", \"abc\""), one_of(&["x", "abc"]));
        assert_eq!(if_match("\"x\", *"), Some(EtagMatch::Any));
        // Weak ETags never match a write; what is left may be nothing.
        assert_eq!(if_match("W/\"abc\", \"x\""), one_of(&["x"]));
        assert_eq!(if_match("W/\"abc\""), one_of(&[]));
        assert_eq!(if_match(""), one_of(&[]));
        // If-None-Match takes "*" only.
        assert!(matches!(
            parse(&[("if-none-match", "\"abc\"")]),
            Err(S3Error::NotImplemented)
        ));
    }

    #[test]
    fn copy_source_conditions_fail_with_412() {
        let cond = c(None, Some("\"abc\""), None, None);
        assert!(matches!(
            cond.evaluate(ETAG, LM_MS, true),
            Err(S3Error::PreconditionFailed)
        ));
    }

    #[test]
    fn reads_headers_with_prefix_and_ignores_bad_dates() {
        let mut h = HeaderMap::new();
        h.insert("x-amz-copy-source-if-match", "\"abc\"".parse().unwrap());
        h.insert(
            "x-amz-copy-source-if-modified-since",
            "Thu, 01 Jan 1970 00:16:40 GMT".parse().unwrap(),
        );
        h.insert("if-unmodified-since", "yesterday".parse().unwrap());
        let cond = Conditions::from_headers(&h, "x-amz-copy-source-");
        assert_eq!(cond.if_match.as_deref(), Some("\"abc\""));
        assert_eq!(cond.if_modified_since, Some(1000));
        assert!(Conditions::from_headers(&h, "").is_empty());
    }
}
