//! S3 XML bodies: serde structs rendered and parsed with quick-xml.
//! Responses carry the S3 namespace on their root element (as AWS sends
//! them); error bodies do not.

pub mod cors;
pub mod encryption;
pub mod lifecycle;
pub mod replication;
pub mod requests;
pub mod responses;
pub mod tagging;
pub mod tree;

use serde::de::DeserializeOwned;
use serde::Serialize;
use time::OffsetDateTime;

use crate::error::S3Error;

/// The namespace of every S3 response document.
pub const S3_NS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";

const DECLARATION: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";

/// Renders `value` as a document whose root element is `root`.
pub fn render<T: Serialize>(root: &str, value: &T) -> Result<String, S3Error> {
    let mut out = String::from(DECLARATION);
    quick_xml::se::to_writer_with_root(&mut out, root, value)
        .map_err(|e| S3Error::InternalError(format!("xml rendering failed: {e}")))?;
    Ok(out)
}

/// Parses a request document; anything that does not fit is `MalformedXML`.
///
/// A document with a DOCTYPE anywhere is refused first: S3's request
/// bodies have no DTD, and quick-xml 0.37's deserializer panics on a
/// DOCTYPE between two runs of text (`<a>x<!DOCTYPE y>z</a>`, found by
/// `fuzz_xml_request_bodies`; fixed upstream in tafia/quick-xml#964).
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, S3Error> {
    let text = std::str::from_utf8(body).map_err(|_| S3Error::MalformedXML)?;
    if has_doctype(body) {
        return Err(S3Error::MalformedXML);
    }
    quick_xml::de::from_str(text).map_err(|_| S3Error::MalformedXML)
}

/// Whether the reader meets a DOCTYPE before the end or the first error
/// (an error is the deserializer's to report).
fn has_doctype(body: &[u8]) -> bool {
    let mut reader = quick_xml::Reader::from_reader(body);
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::DocType(_)) => return true,
            Ok(quick_xml::events::Event::Eof) | Err(_) => return false,
            Ok(_) => {}
        }
    }
}

/// The error document of every failed request (GET/PUT/...; HEAD has none).
pub fn error_body(err: &S3Error, resource: &str, request_id: &str) -> String {
    #[derive(Serialize)]
    struct ErrorXml<'a> {
        #[serde(rename = "Code")]
        code: &'a str,
        #[serde(rename = "Message")]
        message: String,
        #[serde(rename = "Resource")]
        resource: &'a str,
        #[serde(rename = "RequestId")]
        request_id: &'a str,
    }
    let doc = ErrorXml {
        code: err.code(),
        message: err.to_string(),
        resource,
        request_id,
    };
    render("Error", &doc)
        .unwrap_or_else(|_| format!("{DECLARATION}<Error><Code>{}</Code></Error>", err.code()))
}

/// `2026-11-30T04:00:00.000Z`: the timestamp format of S3 XML bodies.
pub fn iso8601_ms(ms: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.millisecond()
    )
}

/// 9999-12-31T23:59:59Z in seconds since the epoch.
const MAX_HTTP_DATE_SECS: i64 = 253_402_300_799;

/// `Mon, 30 Nov 2026 04:00:00 GMT`: the format of Last-Modified and other
/// HTTP date headers (RFC 7231 IMF-fixdate, i.e. RFC 1123 in GMT).
/// Clamped to 9999-12-31T23:59:59Z, the last instant the format can
/// show (`httpdate` panics past it): a stored timestamp beyond it, such
/// as a replica's clock from another region, must not fail a GET.
pub fn http_date(ms: i64) -> String {
    let secs = ms.div_euclid(1000).clamp(0, MAX_HTTP_DATE_SECS) as u64;
    httpdate::fmt_http_date(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs))
}

/// ETags travel quoted in headers and XML; storage keeps them bare.
pub fn quote_etag(etag: &str) -> String {
    format!("\"{etag}\"")
}

/// Strips the quotes (and a weak `W/` prefix) clients may send.
pub fn unquote_etag(etag: &str) -> &str {
    let e = etag.trim();
    let e = e.strip_prefix("W/").unwrap_or(e);
    let e = e.strip_prefix('"').unwrap_or(e);
    e.strip_suffix('"').unwrap_or(e)
}

/// `encoding-type=url` encoding of keys and prefixes in listings: every
/// byte except unreserved characters and `/` is percent-encoded (so that
/// botocore's `unquote_plus` restores `+` and spaces exactly).
pub fn url_encode(s: &str) -> String {
    godwit_common::uri::uri_encode(s, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_has_milliseconds_and_z() {
        // 2026-11-30T04:00:00.123Z
        assert_eq!(iso8601_ms(1_796_011_200_123), "2026-11-30T04:00:00.123Z");
        assert_eq!(iso8601_ms(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn http_date_is_rfc1123_gmt() {
        assert_eq!(
            http_date(1_796_011_200_999),
            "Mon, 30 Nov 2026 04:00:00 GMT"
        );
    }

    /// Found by `fuzz_xml_record_dates`: 9999-12-31T23:59:59Z plus one
    /// millisecond-rounded second panicked in `httpdate`.
    #[test]
    fn http_date_past_year_9999_is_clamped() {
        assert_eq!(
            http_date(253_402_300_800_000),
            "Fri, 31 Dec 9999 23:59:59 GMT"
        );
        assert_eq!(http_date(i64::MAX), "Fri, 31 Dec 9999 23:59:59 GMT");
        assert_eq!(http_date(i64::MIN), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(iso8601_ms(i64::MAX), "1970-01-01T00:00:00.000Z");
    }

    /// Found by `fuzz_xml_request_bodies` (minimal input below): quick-xml's
    /// deserializer hit `unreachable!()` on a DOCTYPE inside text.
    #[test]
    fn doctype_anywhere_is_malformed_not_a_panic() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Rtc {
            #[serde(rename = "ID")]
            id: String,
        }
        for body in [
            "<RtcConfiguration><ID>r1</ID><RTC><Status>d<!DOCTYPE a [<!ENTITY e \"x\">]>isabled</Status></RTC></RtcConfiguration>",
            "<a><ID>x<!DOCTYPE y>z</ID></a>",
            "<!DOCTYPE a><a><ID>x</ID></a>",
        ] {
            assert!(
                matches!(parse::<Rtc>(body.as_bytes()), Err(S3Error::MalformedXML)),
                "{body}"
            );
        }
        assert_eq!(parse::<Rtc>(b"<a><ID>x</ID></a>").unwrap().id, "x");
    }

    #[test]
    fn etag_quoting_round_trips() {
        assert_eq!(quote_etag("abc"), "\"abc\"");
        assert_eq!(unquote_etag("\"abc\""), "abc");
        assert_eq!(unquote_etag("W/\"abc-2\""), "abc-2");
        assert_eq!(unquote_etag("abc"), "abc");
    }

    #[test]
    fn url_encoding_keeps_slash_and_unreserved() {
        assert_eq!(url_encode("a b+c/d~e_f.g-h"), "a%20b%2Bc/d~e_f.g-h");
        assert_eq!(url_encode("é"), "%C3%A9");
    }

    #[test]
    fn error_body_has_code_message_resource_request_id() {
        let body = error_body(&S3Error::NoSuchKey, "/b/k", "REQ1");
        assert_eq!(
            body,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>NoSuchKey</Code>\
             <Message>The specified key does not exist.</Message><Resource>/b/k</Resource>\
             <RequestId>REQ1</RequestId></Error>"
        );
    }
}
