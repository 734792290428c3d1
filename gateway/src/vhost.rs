//! Virtual-hosted-style addressing: `Host: <bucket>.<domain>[:port]` for
//! one of the configured domains names the bucket, and the whole path is
//! the key. Path style (`/bucket/key`) works whatever the Host header.
//! https://docs.aws.amazon.com/AmazonS3/latest/userguide/VirtualHosting.html

use percent_encoding::percent_decode_str;

use crate::error::S3Error;

/// The request's host without its port, lowercased: the Host header, or
/// the URI authority (HTTP/2).
fn request_host(parts: &http::request::Parts) -> Option<String> {
    let raw = match parts.headers.get(http::header::HOST) {
        Some(v) => v.to_str().ok()?,
        None => parts.uri.authority()?.as_str(),
    };
    let raw = raw.trim();
    // An IPv6 literal never names a bucket.
    if raw.starts_with('[') {
        return None;
    }
    let host = match raw.rsplit_once(':') {
        Some((host, port)) if port.bytes().all(|b| b.is_ascii_digit()) => host,
        _ => raw,
    };
    Some(host.trim_end_matches('.').to_ascii_lowercase())
}

/// The bucket a virtual-hosted-style request names, if its host is
/// `<bucket>.<domain>` for one of `domains` (the longest matching domain
/// wins, so `b.s3.example.com` with `example.com` and `s3.example.com`
/// configured is bucket `b`). A host equal to a domain is path style.
pub fn bucket_from_host(parts: &http::request::Parts, domains: &[String]) -> Option<String> {
    if domains.is_empty() {
        return None;
    }
    let host = request_host(parts)?;
    if domains.contains(&host) {
        return None;
    }
    domains
        .iter()
        .filter_map(|domain| {
            let bucket = host.strip_suffix(domain.as_str())?.strip_suffix('.')?;
            (!bucket.is_empty()).then_some((domain.len(), bucket))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, bucket)| bucket.to_string())
}

/// Normalizes configured domains: trimmed, lowercased, without leading or
/// trailing dots, empty ones dropped, duplicates removed.
pub fn normalize_domains<I, S>(domains: I) -> Vec<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let mut out: Vec<String> = domains
        .into_iter()
        .map(|d| d.as_ref().trim().trim_matches('.').to_ascii_lowercase())
        .filter(|d| !d.is_empty())
        .collect();
    out.sort();
    out.dedup();
    out
}

/// Bucket and key of a virtual-hosted-style request: the bucket came from
/// the Host header; the path, decoded whole (so `%2F` inside a key is a
/// `/` of the key), is the key, and `/` addresses the bucket.
pub fn split_path(bucket: &str, path: &str) -> Result<(Option<String>, Option<String>), S3Error> {
    let key = path.strip_prefix('/').unwrap_or(path);
    let key = if key.is_empty() {
        None
    } else {
        Some(
            percent_decode_str(key)
                .decode_utf8()
                .map_err(|_| S3Error::InvalidArgument("Invalid URI encoding".into()))?
                .into_owned(),
        )
    };
    Ok((Some(bucket.to_string()), key))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_host(host: &str) -> http::request::Parts {
        http::Request::get("/k")
            .header("host", host)
            .body(())
            .unwrap()
            .into_parts()
            .0
    }

    #[test]
    fn bucket_comes_from_the_host_under_a_configured_domain() {
        let domains = normalize_domains([" S3.Example.com ", "example.com.", "", "localhost"]);
        assert_eq!(domains, ["example.com", "localhost", "s3.example.com"]);
        let b = |host: &str| bucket_from_host(&with_host(host), &domains);
        assert_eq!(b("bkt.s3.example.com").as_deref(), Some("bkt"));
        assert_eq!(b("BKT.S3.Example.COM:9000").as_deref(), Some("bkt"));
        assert_eq!(
            b("my.dotted.bkt.example.com").as_deref(),
            Some("my.dotted.bkt")
        );
        assert_eq!(b("b1.localhost:9000").as_deref(), Some("b1"));
        assert_eq!(b("bkt.s3.example.com.").as_deref(), Some("bkt"));
        // The domain itself, other domains, IPs: path style.
        assert_eq!(b("s3.example.com"), None);
        assert_eq!(b("example.com:80"), None);
        assert_eq!(b("bkt.example.org"), None);
        assert_eq!(b("notexample.com"), None);
        assert_eq!(b("127.0.0.1:9000"), None);
        assert_eq!(b("[::1]:9000"), None);
        assert_eq!(bucket_from_host(&with_host("bkt.example.com"), &[]), None);

        // HTTP/2: no Host header, the authority instead.
        let p = http::Request::get("http://bkt.example.com:9000/k")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        assert_eq!(bucket_from_host(&p, &domains).as_deref(), Some("bkt"));
    }

    #[test]
    fn virtual_hosted_path_is_the_whole_key() {
        assert_eq!(split_path("bkt", "/").unwrap(), (Some("bkt".into()), None));
        assert_eq!(split_path("bkt", "").unwrap(), (Some("bkt".into()), None));
        assert_eq!(
            split_path("bkt", "/dir%2Fa%20b.txt").unwrap(),
            (Some("bkt".into()), Some("dir/a b.txt".into()))
        );
        assert_eq!(
            split_path("bkt", "/dir/a+b/").unwrap(),
            (Some("bkt".into()), Some("dir/a+b/".into()))
        );
        assert_eq!(
            split_path("bkt", "//x").unwrap(),
            (Some("bkt".into()), Some("/x".into()))
        );
        assert!(split_path("bkt", "/%FF").is_err());
    }

    /// oss2 percent-encodes the whole key, `/` included: path-style
    /// splitting happens before decoding, so `%2F` stays inside the key.
    #[test]
    fn path_style_key_with_encoded_slashes() {
        assert_eq!(
            crate::router::split_path("/bkt/dir%2Fa%20b%2B%C3%BC.txt").unwrap(),
            (Some("bkt".into()), Some("dir/a b+ü.txt".into()))
        );
    }
}
