//! `RemoteClient`: signed S3 requests to one remote region over one pooled
//! `reqwest::Client`. Each method is one S3 operation; the XML it writes or
//! reads is in `super::xml`, the signing in `super::signing`.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use bytes::Bytes;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, ETAG};
use reqwest::{Method, Response, StatusCode};
use sha2::{Digest, Sha256};

use super::signing::{
    bucket_path, content_md5, object_path, sign_headers, uri_encode, EMPTY_SHA256, UNSIGNED_PAYLOAD,
};
use super::xml::{self, unquote, Completed};
use super::RemoteError;
use crate::replication::RemoteInfo;
use crate::ByteStream;

/// Deadline of a request without a streamed body.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// A streamed body gets `REQUEST_TIMEOUT` plus its length at this rate: a
/// stall guard, not a speed requirement (a bandwidth-limited remote shares
/// its rate between lanes, so this is deliberately low).
const MIN_STREAM_BYTES_PER_SEC: u64 = 64 * 1024;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle keep-alive connections kept per remote.
const POOL_IDLE_PER_HOST: usize = 64;

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
        let own_roots = match &remote.ca_pem {
            None => Vec::new(),
            Some(pem) => crate::net::tls::roots_from_pem(pem.as_bytes()).map_err(|e| {
                RemoteError::Invalid {
                    op,
                    message: format!("the remote's CA: {e}"),
                }
            })?,
        };
        let http = crate::net::tls::with_roots(reqwest::Client::builder(), &own_roots)
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

    /// GetBucketVersioning: `Enabled`, `Suspended`, or `None` for a bucket
    /// that never had versioning (S3 answers an empty document then).
    pub async fn bucket_versioning(&self, bucket: &str) -> Result<Option<String>, RemoteError> {
        let op = "GetBucketVersioning";
        let resp = self
            .send(
                op,
                Method::GET,
                format!("{}?versioning", bucket_path(bucket)),
                Vec::new(),
                Body::Empty,
            )
            .await?;
        let resp = check(op, resp).await?;
        let body = resp
            .text()
            .await
            .map_err(|e| RemoteError::transport(op, e))?;
        Ok(xml::versioning_status(&body))
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
        let doc = xml::tagging(tags).map_err(|e| RemoteError::Invalid {
            op,
            message: format!("writing the Tagging document: {e}"),
        })?;
        // S3 demands an integrity header on PutObjectTagging.
        headers.push(("content-md5".into(), content_md5(doc.as_bytes())));
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
                Body::Bytes(Bytes::from(doc)),
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
        let answer = read_xml(op, check(op, resp).await?).await?;
        xml::upload_id(&answer).ok_or_else(|| RemoteError::Invalid {
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
            let answer = read_xml(op, check(op, resp).await?).await?;
            let page = xml::list_parts_page(&answer);
            parts.extend(page.parts);
            // A marker that does not move would loop forever.
            match page.next_marker {
                Some(n) if marker.as_deref() != Some(n.as_str()) => marker = Some(n),
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
        let doc = xml::complete_multipart_upload(parts).map_err(|e| RemoteError::Invalid {
            op,
            message: format!("writing the CompleteMultipartUpload document: {e}"),
        })?;
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
                Body::Bytes(Bytes::from(doc)),
            )
            .await?;
        let answer = read_xml(op, check(op, resp).await?).await?;
        // S3 may answer 200 and then report a failure in the body
        // (https://docs.aws.amazon.com/AmazonS3/latest/API/API_CompleteMultipartUpload.html).
        match xml::completed(&answer) {
            Completed::Done(etag) => Ok(etag),
            Completed::Failed(code) => Err(RemoteError::Status {
                op,
                status: 200,
                code: code.or(Some("InternalError".into())),
            }),
        }
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
        code: xml::error_code(&body),
    }
}

/// The body of a successful answer, as text.
async fn read_xml(op: &'static str, resp: Response) -> Result<String, RemoteError> {
    resp.text().await.map_err(|e| RemoteError::transport(op, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_output_hides_the_secret() {
        let client = RemoteClient::new(&RemoteInfo {
            name: "r".into(),
            endpoint: "http://127.0.0.1:9".into(),
            access_key: "AK".into(),
            secret_key: "very-secret".into(),
            region: "eu-1".into(),
            bandwidth_limit: None,
            ca_pem: None,
        })
        .unwrap();
        assert!(!format!("{client:?}").contains("very-secret"));
    }
}
