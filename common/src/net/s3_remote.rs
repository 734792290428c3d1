//! `RemoteClient`: a plain S3 client for a registered remote region (another
//! Godwit, or any S3 endpoint), used by the replication worker to write and
//! by PutBucketReplication to resolve a destination ARN to a remote.
//!
//! Path-style URLs, SigV4 signing with aws-sigv4 (S3 flavour: single URI
//! encoding, no path normalization, `x-amz-content-sha256` sent). Streamed
//! bodies go out as `UNSIGNED-PAYLOAD` with an explicit `Content-Length`, so
//! a 5 GiB part costs the memory of one chunk. One pooled `reqwest::Client`
//! per remote, with TCP_NODELAY and keep-alive, so small objects ride warm
//! connections (the XDCR "nozzles" are the worker's concurrent tasks).
//!
//! Errors say whether a retry can help ([`RemoteError::is_retryable`]):
//! transport failures, 5xx, 408, 429 and S3's transient codes are; any other
//! 4xx (NoSuchBucket, AccessDenied, ...) is not. Secrets never appear in a
//! `Debug` output, an error or a log line.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    sign, PayloadChecksumKind, PercentEncodingMode, SignableBody, SignableRequest, SigningSettings,
    UriPathNormalizationMode,
};
use aws_sigv4::sign::v4;
use base64::Engine;
use bytes::Bytes;
use md5::Digest as _;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, ETAG};
use reqwest::{Method, Response, StatusCode};
use sha2::Sha256;

use crate::replication::RemoteInfo;
use crate::ByteStream;

/// `x-amz-content-sha256` of a request without a body.
pub const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
/// `x-amz-content-sha256` of a streamed body the server is not asked to hash.
pub const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";

/// Deadline of a request without a streamed body.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// A streamed body gets `REQUEST_TIMEOUT` plus its length at this rate: a
/// stall guard, not a speed requirement (a bandwidth-limited remote shares
/// its rate between lanes, so this is deliberately low).
const MIN_STREAM_BYTES_PER_SEC: u64 = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle keep-alive connections kept per remote.
const POOL_IDLE_PER_HOST: usize = 64;
/// HeadBucket deadline while resolving a destination ARN.
const RESOLVE_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a request to a remote failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RemoteError {
    /// No usable response: connect failure, timeout, a body that broke.
    #[error("{op}: {message}")]
    Transport {
        op: &'static str,
        message: String,
        retryable: bool,
    },
    /// The remote answered with an error status, and the S3 error code of
    /// its XML body when there was one (HEAD responses have none).
    #[error("{op}: HTTP {status}{}", code.as_deref().map(|c| format!(" {c}")).unwrap_or_default())]
    Status {
        op: &'static str,
        status: u16,
        code: Option<String>,
    },
    /// The request could not be built (bad endpoint URL, header value) or
    /// the answer could not be understood.
    #[error("{op}: {message}")]
    Invalid { op: &'static str, message: String },
}

impl RemoteError {
    /// True when the same request may succeed later.
    pub fn is_retryable(&self) -> bool {
        match self {
            RemoteError::Transport { retryable, .. } => *retryable,
            RemoteError::Status { status, code, .. } => {
                is_retryable_status(*status, code.as_deref())
            }
            RemoteError::Invalid { .. } => false,
        }
    }

    /// The S3 error code, if the remote sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            RemoteError::Status { code, .. } => code.as_deref(),
            _ => None,
        }
    }

    /// The HTTP status, if the remote answered.
    pub fn status(&self) -> Option<u16> {
        match self {
            RemoteError::Status { status, .. } => Some(*status),
            _ => None,
        }
    }

    fn transport(op: &'static str, e: reqwest::Error) -> RemoteError {
        // reqwest's Display leaves out the cause (e.g. "connection refused").
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message.push_str(": ");
            message.push_str(&s.to_string());
            source = s.source();
        }
        // Builder errors are ours (a bad URL or header): retrying cannot help.
        // Everything else (connect, timeout, a broken body stream, a reset
        // connection) is the network or the source's datanodes.
        let retryable = !e.is_builder();
        RemoteError::Transport {
            op,
            message,
            retryable,
        }
    }
}

/// S3's retry classification: 5xx, 408 and 429 always; a few 4xx codes that
/// name a transient condition (the AWS SDKs' list: RequestTimeout,
/// RequestTimeTooSkewed, SlowDown, ...), plus BadDigest and IncompleteBody,
/// which mean the bytes were damaged or cut on the way and a resend heals.
pub fn is_retryable_status(status: u16, code: Option<&str>) -> bool {
    if status >= 500 || status == 408 || status == 429 {
        return true;
    }
    matches!(
        code,
        Some(
            "RequestTimeout"
                | "RequestTimeTooSkewed"
                | "SlowDown"
                | "Throttling"
                | "ThrottlingException"
                | "InternalError"
                | "ServiceUnavailable"
                | "OperationAborted"
                | "BadDigest"
                | "IncompleteBody"
        )
    )
}

/// What HeadObject tells about a destination object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteObject {
    pub size: u64,
    /// Unquoted.
    pub etag: String,
    pub version_id: Option<String>,
    /// `x-amz-replication-status`, if any.
    pub replication_status: Option<String>,
    /// `x-godwit-replica-of`, if the destination is a Godwit that keeps it.
    pub replica_of: Option<String>,
}

/// One part of a destination multipart upload (ListParts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePart {
    pub number: u32,
    /// Unquoted.
    pub etag: String,
    pub size: u64,
}

/// Extra request headers: (lowercase name, value). They are signed.
pub type Headers = Vec<(String, String)>;

enum Body {
    Empty,
    Bytes(Bytes),
    Stream(ByteStream, u64),
}

/// Signed S3 requests to one remote, over one connection pool.
pub struct RemoteClient {
    name: String,
    /// `scheme://host[:port][/path]` without a trailing slash.
    base: String,
    region: String,
    credentials: Credentials,
    http: reqwest::Client,
}

impl fmt::Debug for RemoteClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteClient")
            .field("name", &self.name)
            .field("endpoint", &self.base)
            .field("region", &self.region)
            .finish_non_exhaustive()
    }
}

impl RemoteClient {
    pub fn new(remote: &RemoteInfo) -> Result<RemoteClient, RemoteError> {
        let op = "remote client";
        let url = reqwest::Url::parse(&remote.endpoint).map_err(|e| RemoteError::Invalid {
            op,
            message: format!("endpoint `{}` is not a URL: {e}", remote.endpoint),
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(RemoteError::Invalid {
                op,
                message: format!("endpoint `{}`: expected http(s)://host", remote.endpoint),
            });
        }
        if url.query().is_some() {
            return Err(RemoteError::Invalid {
                op,
                message: format!("endpoint `{}` must not carry a query", remote.endpoint),
            });
        }
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(POOL_IDLE_PER_HOST)
            .pool_idle_timeout(Duration::from_secs(90))
            .tcp_nodelay(true)
            .tcp_keepalive(Duration::from_secs(30))
            .connect_timeout(CONNECT_TIMEOUT)
            .no_proxy()
            .build()
            .map_err(|e| RemoteError::Invalid {
                op,
                message: format!("building the HTTP client: {e}"),
            })?;
        Ok(RemoteClient {
            name: remote.name.clone(),
            base: url.as_str().trim_end_matches('/').to_string(),
            region: if remote.region.is_empty() {
                "us-east-1".to_string()
            } else {
                remote.region.clone()
            },
            credentials: Credentials::new(
                &remote.access_key,
                &remote.secret_key,
                None,
                None,
                "godwit-remote",
            ),
            http,
        })
    }

    /// The remote's registered name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// HeadBucket: `Ok(true)` when the bucket exists and these credentials
    /// reach it, `Ok(false)` on 404.
    pub async fn head_bucket(&self, bucket: &str) -> Result<bool, RemoteError> {
        let op = "HeadBucket";
        let resp = self
            .send(
                op,
                Method::HEAD,
                bucket_path(bucket),
                Vec::new(),
                Body::Empty,
            )
            .await?;
        match resp.status() {
            s if s.is_success() => Ok(true),
            StatusCode::NOT_FOUND => Ok(false),
            _ => Err(error_from(op, resp).await),
        }
    }

    /// HeadObject of the latest version; `None` on 404 (no such key, or a
    /// delete marker on top).
    pub async fn head_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<RemoteObject>, RemoteError> {
        let op = "HeadObject";
        let resp = self
            .send(
                op,
                Method::HEAD,
                object_path(bucket, key),
                Vec::new(),
                Body::Empty,
            )
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        let resp = check(op, resp).await?;
        let h = resp.headers();
        Ok(Some(RemoteObject {
            size: content_length(h).unwrap_or(0),
            etag: etag_of(h).unwrap_or_default(),
            version_id: header_str(h, "x-amz-version-id"),
            replication_status: header_str(h, "x-amz-replication-status"),
            replica_of: header_str(h, crate::replication::REPLICA_HEADER),
        }))
    }

    /// PutObject with a streamed body of exactly `len` bytes; returns the
    /// destination's ETag (unquoted).
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        body: ByteStream,
        len: u64,
        headers: Headers,
    ) -> Result<String, RemoteError> {
        let op = "PutObject";
        let resp = self
            .send(
                op,
                Method::PUT,
                object_path(bucket, key),
                headers,
                Body::Stream(body, len),
            )
            .await?;
        let resp = check(op, resp).await?;
        Ok(etag_of(resp.headers()).unwrap_or_default())
    }

    /// DeleteObject of the key (a delete marker in a versioned bucket).
    /// S3 answers 204 whether or not the key existed.
    pub async fn delete_object(
        &self,
        bucket: &str,
        key: &str,
        headers: Headers,
    ) -> Result<(), RemoteError> {
        let op = "DeleteObject";
        let resp = self
            .send(
                op,
                Method::DELETE,
                object_path(bucket, key),
                headers,
                Body::Empty,
            )
            .await?;
        check(op, resp).await.map(drop)
    }

    /// PutObjectTagging on the latest version (`version_id` None) or one
    /// version.
    pub async fn put_object_tagging(
        &self,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        tags: &BTreeMap<String, String>,
        mut headers: Headers,
    ) -> Result<(), RemoteError> {
        let op = "PutObjectTagging";
        let mut xml =
            String::from("<Tagging xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><TagSet>");
        for (k, v) in tags {
            xml.push_str(&format!(
                "<Tag><Key>{}</Key><Value>{}</Value></Tag>",
                xml_escape(k),
                xml_escape(v)
            ));
        }
        xml.push_str("</TagSet></Tagging>");
        // S3 demands an integrity header on PutObjectTagging.
        headers.push(("content-md5".into(), content_md5(xml.as_bytes())));
        headers.push(("content-type".into(), "application/xml".into()));
        let mut path = format!("{}?tagging", object_path(bucket, key));
        if let Some(v) = version_id {
            path.push_str(&format!("&versionId={}", uri_encode(v, true)));
        }
        let resp = self
            .send(
                op,
                Method::PUT,
                path,
                headers,
                Body::Bytes(Bytes::from(xml)),
            )
            .await?;
        check(op, resp).await.map(drop)
    }

    /// CreateMultipartUpload; returns the destination's upload id.
    pub async fn create_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        headers: Headers,
    ) -> Result<String, RemoteError> {
        let op = "CreateMultipartUpload";
        let path = format!("{}?uploads", object_path(bucket, key));
        let resp = self
            .send(op, Method::POST, path, headers, Body::Empty)
            .await?;
        let xml = read_xml(op, check(op, resp).await?).await?;
        xml_element(&xml, "UploadId")
            .map(xml_unescape)
            .filter(|id| !id.is_empty())
            .ok_or_else(|| RemoteError::Invalid {
                op,
                message: "the answer names no UploadId".into(),
            })
    }

    /// UploadPart with a streamed body of exactly `len` bytes; returns the
    /// part's ETag (unquoted). `content_md5` (base64) lets the destination
    /// check the bytes.
    #[allow(clippy::too_many_arguments)]
    pub async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        body: ByteStream,
        len: u64,
        content_md5: Option<&str>,
    ) -> Result<String, RemoteError> {
        let op = "UploadPart";
        let path = format!(
            "{}?partNumber={part_number}&uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let headers = content_md5
            .map(|m| vec![("content-md5".to_string(), m.to_string())])
            .unwrap_or_default();
        let resp = self
            .send(op, Method::PUT, path, headers, Body::Stream(body, len))
            .await?;
        let resp = check(op, resp).await?;
        Ok(etag_of(resp.headers()).unwrap_or_default())
    }

    /// ListParts, every page.
    pub async fn list_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<Vec<RemotePart>, RemoteError> {
        let op = "ListParts";
        let mut parts = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut path = format!("{}?", object_path(bucket, key));
            if let Some(m) = &marker {
                path.push_str(&format!("part-number-marker={}&", uri_encode(m, true)));
            }
            path.push_str(&format!("uploadId={}", uri_encode(upload_id, true)));
            let resp = self
                .send(op, Method::GET, path, Vec::new(), Body::Empty)
                .await?;
            let xml = read_xml(op, check(op, resp).await?).await?;
            for part in xml_elements(&xml, "Part") {
                let number = xml_element(part, "PartNumber").and_then(|n| n.trim().parse().ok());
                let etag = xml_element(part, "ETag").map(|e| unquote(&xml_unescape(e)));
                let size = xml_element(part, "Size").and_then(|n| n.trim().parse().ok());
                if let (Some(number), Some(etag)) = (number, etag) {
                    parts.push(RemotePart {
                        number,
                        etag,
                        size: size.unwrap_or(0),
                    });
                }
            }
            let truncated = xml_element(&xml, "IsTruncated").is_some_and(|v| v.trim() == "true");
            let next = xml_element(&xml, "NextPartNumberMarker").map(|m| m.trim().to_string());
            match (truncated, next) {
                (true, Some(n)) if marker.as_deref() != Some(n.as_str()) => marker = Some(n),
                _ => return Ok(parts),
            }
        }
    }

    /// CompleteMultipartUpload with (part number, unquoted ETag) in order;
    /// returns the object's ETag (unquoted).
    pub async fn complete_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[(u32, String)],
        headers: Headers,
    ) -> Result<String, RemoteError> {
        let op = "CompleteMultipartUpload";
        let mut xml = String::from(
            "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">",
        );
        for (n, etag) in parts {
            xml.push_str(&format!(
                "<Part><PartNumber>{n}</PartNumber><ETag>\"{}\"</ETag></Part>",
                xml_escape(etag)
            ));
        }
        xml.push_str("</CompleteMultipartUpload>");
        let mut headers = headers;
        headers.push(("content-type".into(), "application/xml".into()));
        let path = format!(
            "{}?uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let resp = self
            .send(
                op,
                Method::POST,
                path,
                headers,
                Body::Bytes(Bytes::from(xml)),
            )
            .await?;
        let xml = read_xml(op, check(op, resp).await?).await?;
        // S3 may answer 200 and then report a failure in the body
        // (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html).
        if xml.contains("<Error>") {
            return Err(RemoteError::Status {
                op,
                status: 200,
                code: xml_element(&xml, "Code")
                    .map(|c| xml_unescape(c.trim()))
                    .or(Some("InternalError".into())),
            });
        }
        Ok(xml_element(&xml, "ETag")
            .map(|e| unquote(&xml_unescape(e)))
            .unwrap_or_default())
    }

    /// AbortMultipartUpload.
    pub async fn abort_multipart_upload(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
    ) -> Result<(), RemoteError> {
        let op = "AbortMultipartUpload";
        let path = format!(
            "{}?uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let resp = self
            .send(op, Method::DELETE, path, Vec::new(), Body::Empty)
            .await?;
        check(op, resp).await.map(drop)
    }

    /// Signs and sends one request; answers whatever status came back.
    /// `path_and_query` is already URI-encoded.
    async fn send(
        &self,
        op: &'static str,
        method: Method,
        path_and_query: String,
        headers: Headers,
        body: Body,
    ) -> Result<Response, RemoteError> {
        let url = format!("{}{path_and_query}", self.base);
        let payload_hash = match &body {
            Body::Empty => EMPTY_SHA256.to_string(),
            Body::Bytes(b) => hex::encode(Sha256::digest(b)),
            Body::Stream(..) => UNSIGNED_PAYLOAD.to_string(),
        };
        let signed = sign_headers(
            method.as_str(),
            &url,
            &headers,
            &payload_hash,
            &self.credentials,
            &self.region,
            SystemTime::now(),
        )
        .map_err(|message| RemoteError::Invalid { op, message })?;
        let mut request = self.http.request(method, &url);
        for (name, value) in headers.iter().chain(signed.iter()) {
            request = request.header(name.as_str(), value.as_bytes());
        }
        request = match body {
            Body::Empty => request.timeout(REQUEST_TIMEOUT),
            Body::Bytes(b) => request
                .header(CONTENT_LENGTH, b.len() as u64)
                .timeout(REQUEST_TIMEOUT)
                .body(b),
            // An explicit length keeps a streamed body from going chunked.
            Body::Stream(s, len) => request
                .header(CONTENT_LENGTH, len)
                .timeout(REQUEST_TIMEOUT + Duration::from_secs(len / MIN_STREAM_BYTES_PER_SEC))
                .body(reqwest::Body::wrap_stream(s)),
        };
        request
            .send()
            .await
            .map_err(|e| RemoteError::transport(op, e))
    }
}

/// The SigV4 headers (`authorization`, `x-amz-date`, `x-amz-content-sha256`)
/// for a request to `url` carrying `headers`, S3 flavour: single URI
/// encoding, no path normalization, the payload hash sent as a header. The
/// signature covers `host` (from the URL, default port dropped, as reqwest
/// sends it) and every header in `headers`.
pub fn sign_headers(
    method: &str,
    url: &str,
    headers: &[(String, String)],
    payload_hash: &str,
    credentials: &Credentials,
    region: &str,
    time: SystemTime,
) -> Result<Vec<(String, String)>, String> {
    let mut settings = SigningSettings::default();
    settings.percent_encoding_mode = PercentEncodingMode::Single;
    settings.payload_checksum_kind = PayloadChecksumKind::XAmzSha256;
    settings.uri_path_normalization_mode = UriPathNormalizationMode::Disabled;
    let identity = credentials.clone().into();
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("s3")
        .time(time)
        .settings(settings)
        .build()
        .map_err(|e| format!("SigV4 parameters: {e}"))?
        .into();
    let request = SignableRequest::new(
        method,
        url,
        headers.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        SignableBody::Precomputed(payload_hash.to_string()),
    )
    .map_err(|e| format!("preparing the request for signing: {e}"))?;
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| format!("signing: {e}"))?
        .into_parts();
    Ok(instructions
        .headers()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect())
}

/// Which remote holds `bucket`: HeadBucket on every remote at once. Used by
/// PutBucketReplication to turn `arn:aws:s3:::NAME` into a remote. A remote
/// that cannot be reached counts as not holding it (and is logged).
pub async fn resolve_destination(
    remotes: &[RemoteInfo],
    bucket: &str,
) -> Result<String, ResolveError> {
    let probes = remotes.iter().map(|r| async move {
        let found = match RemoteClient::new(r) {
            Ok(client) => tokio::time::timeout(RESOLVE_TIMEOUT, client.head_bucket(bucket))
                .await
                .unwrap_or_else(|_| {
                    Err(RemoteError::Transport {
                        op: "HeadBucket",
                        message: "timed out".into(),
                        retryable: true,
                    })
                }),
            Err(e) => Err(e),
        };
        (r.name.clone(), found)
    });
    let mut holders = Vec::new();
    for (name, found) in futures::future::join_all(probes).await {
        match found {
            Ok(true) => holders.push(name),
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(remote = %name, bucket, error = %e, "remote not reachable while resolving a destination bucket")
            }
        }
    }
    match holders.len() {
        0 => Err(ResolveError::NotFound),
        1 => Ok(holders.pop().unwrap_or_default()),
        _ => Err(ResolveError::Ambiguous(holders)),
    }
}

/// Why a destination bucket could not be tied to one remote.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResolveError {
    /// No registered remote holds the bucket (or none could be reached).
    #[error("no registered remote holds the destination bucket")]
    NotFound,
    /// Several remotes hold a bucket of that name: these.
    #[error("several remotes hold the destination bucket: {}", .0.join(", "))]
    Ambiguous(Vec<String>),
}

/// `Content-MD5` (base64 of the MD5) of a body.
pub fn content_md5(body: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(body))
}

/// `Content-MD5` from an unquoted hex MD5 ETag, when it is one (not a
/// multipart `hex-N` ETag).
pub fn content_md5_from_etag(etag: &str) -> Option<String> {
    if etag.len() != 32 {
        return None;
    }
    let raw = hex::decode(etag).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(raw))
}

/// `/bucket`.
fn bucket_path(bucket: &str) -> String {
    format!("/{}", uri_encode(bucket, true))
}

/// `/bucket/key`, with the key URI-encoded and its slashes kept.
fn object_path(bucket: &str, key: &str) -> String {
    format!("/{}/{}", uri_encode(bucket, true), uri_encode(key, false))
}

/// S3's URI encoding: every byte but `A-Za-z0-9-_.~` as `%XX` (uppercase),
/// and `/` too when `encode_slash`
/// (<https://docs.aws.amazon.com/AmazonS3/latest/API/sig-v4-header-based-auth.html>).
pub fn uri_encode(s: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if !encode_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `x-amz-tagging` value: `k1=v1&k2=v2`, each part URI-encoded.
pub fn tagging_header(tags: &BTreeMap<String, String>) -> String {
    tags.iter()
        .map(|(k, v)| format!("{}={}", uri_encode(k, true), uri_encode(v, true)))
        .collect::<Vec<_>>()
        .join("&")
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

fn header_str(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn etag_of(headers: &HeaderMap) -> Option<String> {
    headers.get(ETAG).and_then(|v| v.to_str().ok()).map(unquote)
}

fn unquote(s: &str) -> String {
    s.trim().trim_matches('"').to_string()
}

/// Passes a success through; turns anything else into a `RemoteError`.
async fn check(op: &'static str, resp: Response) -> Result<Response, RemoteError> {
    if resp.status().is_success() {
        Ok(resp)
    } else {
        Err(error_from(op, resp).await)
    }
}

/// A `RemoteError::Status` with the `<Code>` of the S3 error body, if any.
async fn error_from(op: &'static str, resp: Response) -> RemoteError {
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    RemoteError::Status {
        op,
        status,
        code: xml_element(&body, "Code").map(|c| xml_unescape(c.trim())),
    }
}

async fn read_xml(op: &'static str, resp: Response) -> Result<String, RemoteError> {
    resp.text().await.map_err(|e| RemoteError::transport(op, e))
}

/// The text of the first `<name>...</name>` element.
fn xml_element<'a>(xml: &'a str, name: &str) -> Option<&'a str> {
    xml_elements(xml, name).next()
}

/// The texts of every `<name>...</name>` element, in order (not nested in
/// themselves: enough for S3's flat answers).
fn xml_elements<'a>(xml: &'a str, name: &str) -> impl Iterator<Item = &'a str> {
    let open = format!("<{name}>");
    let close = format!("</{name}>");
    let mut rest = xml;
    std::iter::from_fn(move || {
        let start = rest.find(&open)? + open.len();
        let len = rest[start..].find(&close)?;
        let found = &rest[start..start + len];
        rest = &rest[start + len + close.len()..];
        Some(found)
    })
}

fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// Undoes XML character escapes (the five named entities and `&#N;`/`&#xN;`).
fn xml_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest.find(';') else { break };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => entity
                .strip_prefix("#x")
                .and_then(|h| u32::from_str_radix(h, 16).ok())
                .or_else(|| entity.strip_prefix('#').and_then(|d| d.parse().ok()))
                .and_then(char::from_u32),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_classification_follows_s3() {
        assert!(is_retryable_status(500, Some("InternalError")));
        assert!(is_retryable_status(503, Some("SlowDown")));
        assert!(is_retryable_status(503, None));
        assert!(is_retryable_status(408, None));
        assert!(is_retryable_status(429, None));
        assert!(is_retryable_status(400, Some("RequestTimeout")));
        assert!(is_retryable_status(400, Some("BadDigest")));
        assert!(!is_retryable_status(404, Some("NoSuchBucket")));
        assert!(!is_retryable_status(403, Some("AccessDenied")));
        assert!(!is_retryable_status(400, Some("InvalidArgument")));
        assert!(!is_retryable_status(404, None));
    }

    #[test]
    fn list_parts_answer_parses() {
        let xml = "<ListPartsResult><Bucket>b</Bucket><IsTruncated>false</IsTruncated>\
                   <Part><PartNumber>1</PartNumber><ETag>&quot;aa&quot;</ETag><Size>5</Size></Part>\
                   <Part><PartNumber>2</PartNumber><ETag>\"bb\"</ETag><Size>7</Size></Part>\
                   </ListPartsResult>";
        let parts: Vec<_> = xml_elements(xml, "Part")
            .map(|p| {
                (
                    xml_element(p, "PartNumber").unwrap().to_string(),
                    unquote(&xml_unescape(xml_element(p, "ETag").unwrap())),
                )
            })
            .collect();
        assert_eq!(
            parts,
            vec![("1".into(), "aa".into()), ("2".into(), "bb".into())]
        );
    }

    #[test]
    fn tagging_header_and_md5_helpers() {
        let tags = BTreeMap::from([
            ("a b".to_string(), "x&y".to_string()),
            ("k".to_string(), "v=1".to_string()),
        ]);
        assert_eq!(tagging_header(&tags), "a%20b=x%26y&k=v%3D1");
        assert_eq!(
            content_md5_from_etag("9e107d9d372bb6826bd81d3542a419d6").as_deref(),
            Some("nhB9nTcrtoJr2B01QqQZ1g==")
        );
        assert_eq!(
            content_md5(b"The quick brown fox jumps over the lazy dog"),
            "nhB9nTcrtoJr2B01QqQZ1g=="
        );
        assert_eq!(
            content_md5_from_etag("9e107d9d372bb6826bd81d3542a419d6-2"),
            None
        );
    }

    #[test]
    fn debug_output_hides_the_secret() {
        let client = RemoteClient::new(&RemoteInfo {
            name: "r".into(),
            endpoint: "http://127.0.0.1:9".into(),
            access_key: "AK".into(),
            secret_key: "very-secret".into(),
            region: "eu-1".into(),
            bandwidth_limit: None,
        })
        .unwrap();
        assert!(!format!("{client:?}").contains("very-secret"));
    }
}
