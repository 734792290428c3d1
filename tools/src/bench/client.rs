//! The bench's S3 requests, over `common`'s `RemoteClient`: one pooled
//! reqwest client (HTTP/1.1, TCP_NODELAY, an idle connection per worker,
//! no deadlines: the bench measures them), path-style URLs, SigV4 from
//! `common`. It speaks plain S3, so the bench runs against any S3 server.
//!
//! With `--signer oss-v1|oss-v4` it signs as an Alibaba OSS client does
//! (`oss_sign`), and holds the server to OSS's answer: every PUT and GET
//! must return `x-oss-hash-crc64ecma`, a PUT's the CRC-64 of its body.

use std::fmt;
use std::sync::Arc;

use anyhow::anyhow;
use base64::Engine;
use godwit_common::net::s3_remote::{
    error_code, error_with_causes, list_objects_page, list_objects_path, object_path, Body,
    ClientOptions, ListPage, RemoteClient, RemoteError, RequestSigner, SendError, SigV4,
};
use godwit_common::replication::RemoteInfo;
use reqwest::header::{HeaderMap, CONTENT_LENGTH};
use reqwest::{Method, Response, StatusCode};

use super::args::{ChecksumHeader, Signer};
use super::body::Payload;
use super::oss_sign::{OssSigner, OssVersion};

/// Keys per ListObjectsV2 page (the S3 maximum).
pub const LIST_PAGE_KEYS: u32 = 1000;

/// Why one request failed; `label()` groups failures in the report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpError {
    /// The server answered with a non-success status, and the S3 error code
    /// from its XML body when there was one (HEAD responses have none).
    Status { status: u16, code: Option<String> },
    /// No usable response: connect, timeout, or a broken body stream.
    Transport { kind: &'static str, message: String },
    /// The body ended before its `Content-Length` or the expected size.
    WrongLength { expected: u64, got: u64 },
    /// An OSS answer without `x-oss-hash-crc64ecma`, or with another CRC
    /// than the body's.
    Crc64 {
        expected: Option<u64>,
        got: Option<String>,
    },
}

impl OpError {
    fn transport(e: reqwest::Error) -> OpError {
        let kind = if e.is_connect() {
            "connect error"
        } else if e.is_timeout() {
            "timeout"
        } else if e.is_body() || e.is_decode() {
            "body error"
        } else {
            "request error"
        };
        let message = error_with_causes(&e);
        OpError::Transport { kind, message }
    }

    /// A short grouping key for the report, e.g. `404 NoSuchKey`.
    pub fn label(&self) -> String {
        match self {
            OpError::Status {
                status,
                code: Some(code),
            } => format!("{status} {code}"),
            OpError::Status { status, code: None } => {
                let reason = StatusCode::from_u16(*status)
                    .ok()
                    .and_then(|s| s.canonical_reason())
                    .unwrap_or("");
                format!("{status} {reason}").trim_end().to_string()
            }
            OpError::Transport { kind, .. } => kind.to_string(),
            OpError::WrongLength { .. } => "wrong body length".to_string(),
            OpError::Crc64 { got: None, .. } => "no x-oss-hash-crc64ecma".to_string(),
            OpError::Crc64 { .. } => "wrong x-oss-hash-crc64ecma".to_string(),
        }
    }
}

impl fmt::Display for OpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpError::Status { .. } => write!(f, "HTTP {}", self.label()),
            OpError::Transport { message, .. } => f.write_str(message),
            OpError::WrongLength { expected, got } => {
                write!(f, "body has {got} bytes, expected {expected}")
            }
            OpError::Crc64 { expected, got } => write!(
                f,
                "x-oss-hash-crc64ecma: {}, expected {}",
                got.as_deref().unwrap_or("(none)"),
                expected.map_or("a CRC-64".to_string(), |e| e.to_string())
            ),
        }
    }
}

impl std::error::Error for OpError {}

/// The bucket calls go through `RemoteClient`'s operations.
impl From<RemoteError> for OpError {
    fn from(e: RemoteError) -> OpError {
        match e {
            RemoteError::Status { status, code, .. } => OpError::Status { status, code },
            RemoteError::Transport { message, .. } | RemoteError::Invalid { message, .. } => {
                OpError::Transport {
                    kind: "request error",
                    message,
                }
            }
        }
    }
}

/// Signed S3 requests against one endpoint.
pub struct S3Client {
    remote: RemoteClient,
    signer: Signer,
    checksum: ChecksumHeader,
    sse: bool,
}

impl S3Client {
    /// A client whose pool keeps `concurrency` idle connections, so that
    /// every worker reuses its own keep-alive connection.
    pub fn new(
        endpoint: &str,
        region: &str,
        access_key: &str,
        secret_key: &str,
        concurrency: usize,
    ) -> anyhow::Result<S3Client> {
        let endpoint_info = RemoteInfo {
            name: "bench".into(),
            endpoint: endpoint.into(),
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            region: region.into(),
            bandwidth_limit: None,
            ca_pem: None,
        };
        let options = ClientOptions {
            pool_idle_per_host: concurrency,
            http1_only: true,
            request_timeout: None,
        };
        // https: the system's roots plus --ca-file (`OutboundTlsArgs`).
        let remote = RemoteClient::with_options(&endpoint_info, &options).map_err(|e| {
            anyhow!("{e} (expected an http(s):// URL with a host, e.g. http://127.0.0.1:9000)")
        })?;
        Ok(S3Client {
            remote,
            signer: Signer::AwsV4,
            checksum: ChecksumHeader::None,
            sse: false,
        })
    }

    /// Signs every request with `signer` (AWS SigV4 by default).
    pub fn with_signer(mut self, signer: Signer) -> S3Client {
        let scheme: Arc<dyn RequestSigner> = match signer {
            Signer::AwsV4 => Arc::new(SigV4::S3),
            Signer::OssV1 => Arc::new(OssSigner(OssVersion::V1)),
            Signer::OssV4 => Arc::new(OssSigner(OssVersion::V4)),
        };
        self.remote = self.remote.with_signer(scheme);
        self.signer = signer;
        self
    }

    /// Sends `checksum` with every PUT (none by default); the payload must
    /// carry its CRCs (`Payload::with_crcs`).
    pub fn with_checksum(mut self, checksum: ChecksumHeader) -> S3Client {
        self.checksum = checksum;
        self
    }

    /// Asks for SSE-S3 on every PUT when `sse` (the data is encrypted at
    /// rest, and decrypted on every GET).
    pub fn with_sse(mut self, sse: bool) -> S3Client {
        self.sse = sse;
        self
    }

    /// HeadBucket: `Ok(true)` if it exists and is ours, `Ok(false)` on 404.
    pub async fn bucket_exists(&self, bucket: &str) -> Result<bool, OpError> {
        Ok(self.remote.head_bucket(bucket).await?)
    }

    /// CreateBucket; an existing bucket of ours counts as success.
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), OpError> {
        Ok(self.remote.create_bucket(bucket).await?)
    }

    /// DeleteBucket (the bucket must be empty).
    pub async fn delete_bucket(&self, bucket: &str) -> Result<(), OpError> {
        Ok(self.remote.delete_bucket(bucket).await?)
    }

    /// PutObject with the run's payload; returns the bytes sent.
    pub async fn put_object(
        &self,
        bucket: &str,
        key: &str,
        payload: &Payload,
    ) -> Result<u64, OpError> {
        let mut extra = Vec::new();
        if self.checksum == ChecksumHeader::Crc32c {
            let crc = payload.crcs().expect("--checksum needs the payload's CRCs");
            extra.push((
                "x-amz-checksum-crc32c".to_string(),
                base64::engine::general_purpose::STANDARD.encode(crc.crc32c.to_be_bytes()),
            ));
        }
        if self.sse {
            extra.push(("x-amz-server-side-encryption".into(), "AES256".into()));
        }
        // The hash of a signed payload was computed once for the run.
        let body = Body::Stream {
            body: payload.body(),
            len: payload.size(),
            sha256: payload.sha256_hex().map(str::to_string),
        };
        let resp = self
            .send(Method::PUT, &object_path(bucket, key), &extra, body)
            .await?;
        let resp = check(resp).await?;
        if self.signer.is_oss() {
            check_crc64(resp.headers(), payload.crcs().map(|c| c.crc64xz))?;
        }
        Ok(payload.size())
    }

    /// GetObject, reading and dropping the body as it arrives. Fails if the
    /// body is shorter than its `Content-Length` or differs from `expect`.
    pub async fn get_object(
        &self,
        bucket: &str,
        key: &str,
        expect: Option<u64>,
    ) -> Result<u64, OpError> {
        let resp = self
            .send(Method::GET, &object_path(bucket, key), &[], Body::Empty)
            .await?;
        let mut resp = check(resp).await?;
        if self.signer.is_oss() {
            check_crc64(resp.headers(), None)?;
        }
        let announced = content_length(resp.headers());
        let mut got = 0u64;
        while let Some(chunk) = resp.chunk().await.map_err(OpError::transport)? {
            got += chunk.len() as u64;
        }
        for expected in [announced, expect].into_iter().flatten() {
            if got != expected {
                return Err(OpError::WrongLength { expected, got });
            }
        }
        Ok(got)
    }

    /// HeadObject; returns the object's `Content-Length`.
    pub async fn head_object(&self, bucket: &str, key: &str) -> Result<u64, OpError> {
        let resp = self
            .send(Method::HEAD, &object_path(bucket, key), &[], Body::Empty)
            .await?;
        let resp = check(resp).await?;
        Ok(content_length(resp.headers()).unwrap_or(0))
    }

    /// DeleteObject.
    pub async fn delete_object(&self, bucket: &str, key: &str) -> Result<(), OpError> {
        let resp = self
            .send(Method::DELETE, &object_path(bucket, key), &[], Body::Empty)
            .await?;
        check(resp).await.map(drop)
    }

    /// One ListObjectsV2 page of up to `max_keys` keys under `prefix`.
    pub async fn list_objects(
        &self,
        bucket: &str,
        prefix: &str,
        token: Option<&str>,
        max_keys: u32,
    ) -> Result<ListPage, OpError> {
        let path = list_objects_path(bucket, prefix, token, max_keys);
        let resp = self.send(Method::GET, &path, &[], Body::Empty).await?;
        let resp = check(resp).await?;
        let xml = resp.text().await.map_err(OpError::transport)?;
        Ok(list_objects_page(&xml))
    }

    /// Signs and sends one request; the measured requests keep reqwest's
    /// error, whose kind labels the failure in the report.
    async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        extra: &[(String, String)],
        body: Body,
    ) -> Result<Response, OpError> {
        self.remote
            .send(method, path_and_query, extra, body)
            .await
            .map_err(|e| match e {
                SendError::Sign(message) => OpError::Transport {
                    kind: "signing error",
                    message,
                },
                SendError::Http(e) => OpError::transport(e),
            })
    }
}

/// OSS returns the stored object's CRC-64/XZ as an unsigned decimal in
/// `x-oss-hash-crc64ecma`; `expected` is the body's, when known.
fn check_crc64(headers: &HeaderMap, expected: Option<u64>) -> Result<(), OpError> {
    let got = headers
        .get("x-oss-hash-crc64ecma")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let parsed = got.as_deref().and_then(|v| v.parse::<u64>().ok());
    match (parsed, expected) {
        (Some(crc), Some(want)) if crc == want => Ok(()),
        (Some(_), None) => Ok(()),
        _ => Err(OpError::Crc64 { expected, got }),
    }
}

fn content_length(headers: &HeaderMap) -> Option<u64> {
    headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// Passes a success through; turns anything else into an `OpError`.
async fn check(resp: Response) -> Result<Response, OpError> {
    if resp.status().is_success() {
        Ok(resp)
    } else {
        Err(error_from(resp).await)
    }
}

/// An `OpError::Status` with the `<Code>` of the S3 error body, if any.
async fn error_from(resp: Response) -> OpError {
    let status = resp.status().as_u16();
    let body = resp.text().await.unwrap_or_default();
    OpError::Status {
        status,
        code: error_code(&body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_labels_group_by_status_and_code() {
        let e = OpError::Status {
            status: 404,
            code: Some("NoSuchKey".into()),
        };
        assert_eq!(e.label(), "404 NoSuchKey");
        let e = OpError::Status {
            status: 404,
            code: None,
        };
        assert_eq!(e.label(), "404 Not Found");
        assert_eq!(
            error_code("<Error><Code>SlowDown</Code></Error>").as_deref(),
            Some("SlowDown")
        );
        assert_eq!(error_code("a&amp;b&bogus;c"), None);
    }
}
