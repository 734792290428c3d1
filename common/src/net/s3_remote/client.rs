//! `RemoteClient`: signed S3 requests to one endpoint over one pooled
//! `reqwest::Client`. Each method is one S3 operation; the XML it writes or
//! reads is in `super::xml`, the signing in `super::signing`. [`RemoteClient::send`]
//! is the door for requests no method covers (the load generator's
//! measured requests, the demo's admin calls): the caller picks the body
//! and headers and reads the raw answer.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use bytes::Bytes;
use reqwest::header::{HeaderMap, CONTENT_LENGTH, ETAG};
use reqwest::{Method, Response, StatusCode};
use sha2::{Digest, Sha256};

use super::signing::{
    bucket_path, content_md5, list_objects_after_path, list_objects_path, object_path, uri_encode,
    RequestSigner, SigV4, ToSign, EMPTY_SHA256, UNSIGNED_PAYLOAD,
};
use super::xml::{self, unquote, Completed, EntriesPage, ListPage};
use super::RemoteError;
use crate::replication::RemoteInfo;
use crate::ByteStream;

/// Deadline of a request without a streamed body (by default).
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
    /// `Content-Type`, if any.
    pub content_type: Option<String>,
    /// The user metadata (`x-amz-meta-*`), names lowercase without the
    /// prefix, values as sent (an RFC 2047 word stays encoded).
    pub user_meta: BTreeMap<String, String>,
}

/// One part of a destination multipart upload (ListParts).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemotePart {
    pub number: u32,
    /// Unquoted.
    pub etag: String,
    pub size: u64,
}

/// An S3 additional checksum: the algorithm as S3 names it (`CRC32`,
/// `CRC32C`, `CRC64NVME`, `SHA1`, `SHA256`) and its base64 value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartChecksum {
    pub algorithm: &'static str,
    pub value: String,
}

impl PartChecksum {
    fn all(c: &crate::types::Checksums) -> [(&'static str, &Option<String>); 5] {
        [
            ("CRC32", &c.crc32),
            ("CRC32C", &c.crc32c),
            ("CRC64NVME", &c.crc64nvme),
            ("SHA1", &c.sha1),
            ("SHA256", &c.sha256),
        ]
    }

    /// The first `x-amz-checksum-*` value stored in `c` (S3 takes one per
    /// request), None without any.
    pub fn first_of(c: &crate::types::Checksums) -> Option<PartChecksum> {
        Self::all(c).into_iter().find_map(|(algorithm, v)| {
            v.as_ref().map(|value| PartChecksum {
                algorithm,
                value: value.clone(),
            })
        })
    }

    /// The value of `algorithm` (any case) stored in `c`, if any.
    pub fn of(c: &crate::types::Checksums, algorithm: &str) -> Option<PartChecksum> {
        Self::all(c).into_iter().find_map(|(name, v)| {
            v.as_ref()
                .filter(|_| name.eq_ignore_ascii_case(algorithm))
                .map(|value| PartChecksum {
                    algorithm: name,
                    value: value.clone(),
                })
        })
    }

    /// The `x-amz-checksum-<algorithm>` header carrying it.
    pub fn header(&self) -> (String, String) {
        (
            format!("x-amz-checksum-{}", self.algorithm.to_ascii_lowercase()),
            self.value.clone(),
        )
    }
}

/// One part of a CompleteMultipartUpload: its number, unquoted ETag and,
/// for an upload created with a checksum algorithm, its checksum.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletePart {
    pub number: u32,
    pub etag: String,
    pub checksum: Option<PartChecksum>,
}

impl CompletePart {
    pub fn new(number: u32, etag: &str) -> CompletePart {
        CompletePart {
            number,
            etag: etag.to_string(),
            checksum: None,
        }
    }
}

/// Extra request headers: (lowercase name, value). They are signed.
pub type Headers = Vec<(String, String)>;

/// A request body.
pub enum Body {
    Empty,
    /// In memory: hashed (SHA-256) and signed.
    Bytes(Bytes),
    /// Sent as it is produced, with an explicit `Content-Length` (so it
    /// never goes out chunked). Signed with `sha256` (hex) when the caller
    /// knows it, else as `UNSIGNED-PAYLOAD`.
    Stream {
        body: reqwest::Body,
        len: u64,
        sha256: Option<String>,
    },
}

impl Body {
    /// A streamed body of exactly `len` bytes, sent unsigned.
    pub fn stream(s: ByteStream, len: u64) -> Body {
        Body::Stream {
            body: reqwest::Body::wrap_stream(s),
            len,
            sha256: None,
        }
    }
}

/// How a client talks to its endpoint. The default suits replication;
/// the load generator turns the deadlines off (it measures them) and
/// sizes the pool to its concurrency.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Idle keep-alive connections kept per host.
    pub pool_idle_per_host: usize,
    /// Speak HTTP/1.1 only.
    pub http1_only: bool,
    /// Deadline of a request without a streamed body; a streamed body
    /// gets it plus its length at `MIN_STREAM_BYTES_PER_SEC`. `None`: no
    /// deadline.
    pub request_timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> ClientOptions {
        ClientOptions {
            pool_idle_per_host: POOL_IDLE_PER_HOST,
            http1_only: false,
            request_timeout: Some(REQUEST_TIMEOUT),
        }
    }
}

/// Why [`RemoteClient::send`] got no answer.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The signer refused the request (a bad URL or header).
    #[error("signing: {0}")]
    Sign(String),
    /// reqwest's error: building, connecting, sending, or the answer's head.
    #[error(transparent)]
    Http(#[from] reqwest::Error),
}

/// Signed S3 requests to one remote, over one connection pool. Clones
/// share the pool.
#[derive(Clone)]
pub struct RemoteClient {
    name: String,
    /// `scheme://host[:port][/path]` without a trailing slash.
    base: String,
    region: String,
    credentials: Credentials,
    signer: Arc<dyn RequestSigner>,
    request_timeout: Option<Duration>,
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
        RemoteClient::with_options(remote, &ClientOptions::default())
    }

    /// A client of `remote` set up as `options` says, signing with SigV4
    /// for S3 until [`RemoteClient::with_signer`].
    pub fn with_options(
        remote: &RemoteInfo,
        options: &ClientOptions,
    ) -> Result<RemoteClient, RemoteError> {
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
        let mut builder = crate::net::tls::with_roots(reqwest::Client::builder(), &own_roots);
        if options.http1_only {
            builder = builder.http1_only();
        }
        let http = builder
            .pool_max_idle_per_host(options.pool_idle_per_host)
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
            signer: Arc::new(SigV4::S3),
            request_timeout: options.request_timeout,
            http,
        })
    }

    /// Signs every request with `signer` instead of SigV4 for S3 (the
    /// admin API's scope, or an OSS signature).
    pub fn with_signer(mut self, signer: Arc<dyn RequestSigner>) -> RemoteClient {
        self.signer = signer;
        self
    }

    /// The remote's registered name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The region requests are signed for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// `path_and_query` on this endpoint, for an unsigned request through
    /// [`RemoteClient::http`] (e.g. `/metrics`).
    pub fn url(&self, path_and_query: &str) -> String {
        format!("{}{path_and_query}", self.base)
    }

    /// The pooled HTTP client, for requests that need no signature.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// CreateBucket in this client's region; a bucket this key already
    /// owns counts as created.
    pub async fn create_bucket(&self, bucket: &str) -> Result<(), RemoteError> {
        let op = "CreateBucket";
        // us-east-1 is the one region S3 wants without a location body.
        let body = if self.region == "us-east-1" {
            String::new()
        } else {
            xml::create_bucket_configuration(&self.region)
        };
        let resp = self
            .send_op(
                op,
                Method::PUT,
                &bucket_path(bucket),
                &[],
                Body::Bytes(Bytes::from(body)),
            )
            .await?;
        match check(op, resp).await {
            Err(e) if e.code() == Some("BucketAlreadyOwnedByYou") => Ok(()),
            r => r.map(drop),
        }
    }

    /// DeleteBucket (it must be empty).
    pub async fn delete_bucket(&self, bucket: &str) -> Result<(), RemoteError> {
        let op = "DeleteBucket";
        let resp = self
            .send_op(op, Method::DELETE, &bucket_path(bucket), &[], Body::Empty)
            .await?;
        check(op, resp).await.map(drop)
    }

    /// PutBucketVersioning `Enabled`.
    pub async fn enable_versioning(&self, bucket: &str) -> Result<(), RemoteError> {
        let op = "PutBucketVersioning";
        let doc = xml::versioning_configuration("Enabled");
        let resp = self
            .send_op(
                op,
                Method::PUT,
                &format!("{}?versioning", bucket_path(bucket)),
                &[],
                Body::Bytes(Bytes::from(doc)),
            )
            .await?;
        check(op, resp).await.map(drop)
    }

    /// One ListObjectsV2 page of up to `max_keys` keys under `prefix`.
    pub async fn list_objects_page(
        &self,
        bucket: &str,
        prefix: &str,
        token: Option<&str>,
        max_keys: u32,
    ) -> Result<ListPage, RemoteError> {
        let op = "ListObjectsV2";
        let resp = self
            .send_op(
                op,
                Method::GET,
                &list_objects_path(bucket, prefix, token, max_keys),
                &[],
                Body::Empty,
            )
            .await?;
        let answer = read_xml(op, check(op, resp).await?).await?;
        Ok(xml::list_objects_page(&answer))
    }

    /// One ListObjectsV2 page of up to `max_keys` keys under `prefix`
    /// after `start_after` (StartAfter, which every S3 endpoint takes, so
    /// a listing can resume from a key it saved), with sizes and ETags.
    pub async fn list_entries_after(
        &self,
        bucket: &str,
        prefix: &str,
        start_after: Option<&str>,
        max_keys: u32,
    ) -> Result<EntriesPage, RemoteError> {
        let op = "ListObjectsV2";
        let resp = self
            .send_op(
                op,
                Method::GET,
                &list_objects_after_path(bucket, prefix, start_after, max_keys),
                &[],
                Body::Empty,
            )
            .await?;
        let answer = read_xml(op, check(op, resp).await?).await?;
        Ok(xml::list_entries_page(&answer))
    }

    /// HeadBucket: `Ok(true)` when the bucket exists and these credentials
    /// reach it, `Ok(false)` on 404.
    pub async fn head_bucket(&self, bucket: &str) -> Result<bool, RemoteError> {
        let op = "HeadBucket";
        let resp = self
            .send_op(op, Method::HEAD, &bucket_path(bucket), &[], Body::Empty)
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
            .send_op(
                op,
                Method::GET,
                &format!("{}?versioning", bucket_path(bucket)),
                &[],
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
            .send_op(
                op,
                Method::HEAD,
                &object_path(bucket, key),
                &[],
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
            content_type: header_str(h, "content-type"),
            user_meta: h
                .iter()
                .filter_map(|(name, value)| {
                    let name = name.as_str().strip_prefix("x-amz-meta-")?;
                    Some((name.to_string(), value.to_str().ok()?.to_string()))
                })
                .collect(),
        }))
    }

    /// GetObject of the latest version, its body unread (the caller
    /// streams it with `Response::chunk`); `None` on 404.
    pub async fn get_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<reqwest::Response>, RemoteError> {
        let op = "GetObject";
        let resp = self
            .send_op(op, Method::GET, &object_path(bucket, key), &[], Body::Empty)
            .await?;
        if resp.status() == StatusCode::NOT_FOUND {
            return Ok(None);
        }
        check(op, resp).await.map(Some)
    }

    /// CopyObject of the key's latest version onto itself, provided it
    /// still has ETag `etag` (`x-amz-copy-source-if-match`): with
    /// `x-amz-metadata-directive: REPLACE` in `headers` this replaces what
    /// is said about the bytes without sending them. Returns the new ETag
    /// (unquoted). S3 may answer 200 and report a failure in the body
    /// (<https://docs.aws.amazon.com/AmazonS3/latest/API/API_CopyObject.html>).
    pub async fn copy_object_in_place(
        &self,
        bucket: &str,
        key: &str,
        etag: &str,
        mut headers: Headers,
    ) -> Result<String, RemoteError> {
        let op = "CopyObject";
        let path = object_path(bucket, key);
        headers.push(("x-amz-copy-source".into(), path.clone()));
        headers.push(("x-amz-copy-source-if-match".into(), format!("\"{etag}\"")));
        // An explicit empty body: a PUT without Content-Length may be
        // refused (411).
        let resp = self
            .send_op(op, Method::PUT, &path, &headers, Body::Bytes(Bytes::new()))
            .await?;
        let resp = check(op, resp).await?;
        let status = resp.status().as_u16();
        let body = read_xml(op, resp).await?;
        if let Some(code) = xml::error_code(&body) {
            return Err(RemoteError::Status {
                op,
                status,
                code: Some(code),
            });
        }
        Ok(xml::copy_result_etag(&body).unwrap_or_default())
    }

    /// PutObjectRetention (`retention`: mode and RFC 3339 retain-until
    /// date) and PutObjectLegalHold of the key's latest version, each when
    /// given.
    pub async fn put_object_lock(
        &self,
        bucket: &str,
        key: &str,
        retention: Option<(&str, &str)>,
        legal_hold: Option<bool>,
        headers: Headers,
    ) -> Result<(), RemoteError> {
        let mut docs = Vec::new();
        if let Some((mode, until)) = retention {
            docs.push((
                "PutObjectRetention",
                "retention",
                xml::retention(mode, until),
            ));
        }
        if let Some(on) = legal_hold {
            docs.push(("PutObjectLegalHold", "legal-hold", xml::legal_hold(on)));
        }
        for (op, sub, doc) in docs {
            let mut headers = headers.clone();
            // S3 demands an integrity header on both.
            headers.push(("content-md5".into(), content_md5(doc.as_bytes())));
            headers.push(("content-type".into(), "application/xml".into()));
            let path = format!("{}?{sub}", object_path(bucket, key));
            let resp = self
                .send_op(
                    op,
                    Method::PUT,
                    &path,
                    &headers,
                    Body::Bytes(Bytes::from(doc)),
                )
                .await?;
            check(op, resp).await?;
        }
        Ok(())
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
            .send_op(
                op,
                Method::PUT,
                &object_path(bucket, key),
                &headers,
                Body::stream(body, len),
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
            .send_op(
                op,
                Method::DELETE,
                &object_path(bucket, key),
                &headers,
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
            .send_op(
                op,
                Method::PUT,
                &path,
                &headers,
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
            .send_op(op, Method::POST, &path, &headers, Body::Empty)
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
        self.upload_part_checked(
            bucket,
            key,
            upload_id,
            part_number,
            body,
            len,
            content_md5,
            None,
        )
        .await
    }

    /// [`Self::upload_part`] with the part's additional checksum too
    /// (`x-amz-checksum-*`), which the destination checks and stores: an
    /// upload created with a checksum algorithm wants it on every part.
    #[allow(clippy::too_many_arguments)]
    pub async fn upload_part_checked(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part_number: u32,
        body: ByteStream,
        len: u64,
        content_md5: Option<&str>,
        checksum: Option<&PartChecksum>,
    ) -> Result<String, RemoteError> {
        let op = "UploadPart";
        let path = format!(
            "{}?partNumber={part_number}&uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let mut headers: Headers = content_md5
            .map(|m| vec![("content-md5".to_string(), m.to_string())])
            .unwrap_or_default();
        headers.extend(checksum.map(PartChecksum::header));
        let resp = self
            .send_op(op, Method::PUT, &path, &headers, Body::stream(body, len))
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
                .send_op(op, Method::GET, &path, &[], Body::Empty)
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
        let parts: Vec<CompletePart> = parts
            .iter()
            .map(|(n, etag)| CompletePart::new(*n, etag))
            .collect();
        self.complete_multipart_upload_parts(bucket, key, upload_id, &parts, headers)
            .await
    }

    /// [`Self::complete_multipart_upload`] with each part's checksum in the
    /// document (`headers` may carry the object's own, with
    /// `x-amz-checksum-type`).
    pub async fn complete_multipart_upload_parts(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        parts: &[CompletePart],
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
            .send_op(
                op,
                Method::POST,
                &path,
                &headers,
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
            .send_op(op, Method::DELETE, &path, &[], Body::Empty)
            .await?;
        check(op, resp).await.map(drop)
    }

    /// [`RemoteClient::send`] for one of this client's operations: a
    /// failure to send is a `RemoteError` of `op`.
    async fn send_op(
        &self,
        op: &'static str,
        method: Method,
        path_and_query: &str,
        headers: &[(String, String)],
        body: Body,
    ) -> Result<Response, RemoteError> {
        self.send(method, path_and_query, headers, body)
            .await
            .map_err(|e| match e {
                SendError::Sign(message) => RemoteError::Invalid { op, message },
                SendError::Http(e) => RemoteError::transport(op, e),
            })
    }

    /// Signs and sends one request; answers whatever status came back.
    /// `path_and_query` is already URI-encoded, its query parameters in
    /// sorted order; `headers` (lowercase names) are sent and signed.
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(String, String)],
        body: Body,
    ) -> Result<Response, SendError> {
        let url = self.url(path_and_query);
        let payload_hash: Cow<'_, str> = match &body {
            Body::Empty => Cow::Borrowed(EMPTY_SHA256),
            Body::Bytes(b) => Cow::Owned(hex::encode(Sha256::digest(b))),
            Body::Stream {
                sha256: Some(h), ..
            } => Cow::Borrowed(h),
            Body::Stream { sha256: None, .. } => Cow::Borrowed(UNSIGNED_PAYLOAD),
        };
        let signed = self
            .signer
            .sign(&ToSign {
                method: method.as_str(),
                url: &url,
                headers,
                payload_hash: &payload_hash,
                credentials: &self.credentials,
                region: &self.region,
                time: SystemTime::now(),
            })
            .map_err(SendError::Sign)?;
        let mut request = self.http.request(method, &url);
        for (name, value) in headers.iter().chain(signed.iter()) {
            request = request.header(name.as_str(), value.as_bytes());
        }
        let deadline = self.request_timeout;
        let (request, deadline) = match body {
            Body::Empty => (request, deadline),
            Body::Bytes(b) => (
                request.header(CONTENT_LENGTH, b.len() as u64).body(b),
                deadline,
            ),
            // An explicit length keeps a streamed body from going chunked.
            Body::Stream { body, len, .. } => (
                request.header(CONTENT_LENGTH, len).body(body),
                deadline.map(|d| d + Duration::from_secs(len / MIN_STREAM_BYTES_PER_SEC)),
            ),
        };
        let request = match deadline {
            Some(d) => request.timeout(d),
            None => request,
        };
        Ok(request.send().await?)
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
