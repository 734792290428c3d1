//! The few signed S3 and admin requests the demo makes: bucket setup,
//! PutObject, the multipart calls with streamed part bodies, HEAD for the
//! ETag, ListObjectsV2 and ListParts for the pollers. Path-style URLs,
//! SigV4 through the bench client's `sign_headers`.

use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use aws_credential_types::Credentials;
use base64::Engine;
use bytes::Bytes;
use md5::Digest as _;
use reqwest::header::{CONTENT_LENGTH, ETAG};
use reqwest::{Method, Response, StatusCode};
use sha2::Sha256;

use crate::bench::client::{
    parse_list_page, sign_admin_headers, sign_headers, uri_encode, UNSIGNED_PAYLOAD,
};

/// The SHA-256 of an empty body, as `x-amz-content-sha256`.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Signed requests to one S3 (or admin) endpoint.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    region: String,
    credentials: Credentials,
    /// Signs for the admin API's scope instead of S3's.
    admin: bool,
}

/// A request body: in memory (hashed and signed) or streamed (sent as
/// `UNSIGNED-PAYLOAD` with an explicit length).
pub enum Body {
    Empty,
    Bytes(Bytes),
    Stream(reqwest::Body, u64),
}

impl Client {
    pub fn new(endpoint: &str, region: &str, access_key: &str, secret_key: &str) -> Client {
        let http = reqwest::Client::builder()
            .http1_only()
            .pool_max_idle_per_host(64)
            .tcp_nodelay(true)
            .no_proxy()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .expect("a plain HTTP client builds");
        Client {
            http,
            base: endpoint.trim_end_matches('/').to_string(),
            region: region.to_string(),
            credentials: Credentials::new(access_key, secret_key, None, None, "godwit-demo"),
            admin: false,
        }
    }

    /// A client of an admin listener (SigV4 scoped to the admin service).
    pub fn admin(endpoint: &str, region: &str, access_key: &str, secret_key: &str) -> Client {
        Client {
            admin: true,
            ..Client::new(endpoint, region, access_key, secret_key)
        }
    }

    /// Signs and sends one request; `path_and_query` is already encoded,
    /// its query parameters in sorted order.
    pub async fn send(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(&str, String)],
        body: Body,
    ) -> anyhow::Result<Response> {
        let url = format!("{}{path_and_query}", self.base);
        let hash = match &body {
            Body::Empty => EMPTY_SHA256.to_string(),
            Body::Bytes(b) => hex::encode(Sha256::digest(b)),
            Body::Stream(..) => UNSIGNED_PAYLOAD.to_string(),
        };
        let sign = if self.admin {
            sign_admin_headers
        } else {
            sign_headers
        };
        let signed = sign(
            method.as_str(),
            &url,
            &hash,
            &self.credentials,
            &self.region,
            SystemTime::now(),
        )?;
        let mut request = self.http.request(method.clone(), &url).headers(signed);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request = match body {
            Body::Empty => request,
            Body::Bytes(b) => request.body(b),
            // An explicit length keeps the stream from going out chunked.
            Body::Stream(b, len) => request.header(CONTENT_LENGTH, len).body(b),
        };
        request
            .send()
            .await
            .with_context(|| format!("{method} {url}"))
    }

    /// Like `send`, and fails on any non-2xx answer with its body.
    pub async fn send_ok(
        &self,
        method: Method,
        path_and_query: &str,
        headers: &[(&str, String)],
        body: Body,
    ) -> anyhow::Result<Response> {
        let resp = self
            .send(method.clone(), path_and_query, headers, body)
            .await?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        bail!("{method} {path_and_query}: {status}: {text}")
    }

    /// CreateBucket in this client's region; one we already own is fine.
    pub async fn create_bucket(&self, bucket: &str) -> anyhow::Result<()> {
        let body = if self.region == "us-east-1" {
            Body::Empty
        } else {
            Body::Bytes(Bytes::from(format!(
                "<CreateBucketConfiguration><LocationConstraint>{}</LocationConstraint>\
                 </CreateBucketConfiguration>",
                self.region
            )))
        };
        let resp = self
            .send(Method::PUT, &bucket_path(bucket), &[], body)
            .await?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if status.is_success() || text.contains("<Code>BucketAlreadyOwnedByYou</Code>") {
            Ok(())
        } else {
            bail!("creating bucket {bucket}: {status}: {text}")
        }
    }

    /// PutBucketVersioning Enabled.
    pub async fn enable_versioning(&self, bucket: &str) -> anyhow::Result<()> {
        let xml = "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
        self.send_ok(
            Method::PUT,
            &format!("{}?versioning", bucket_path(bucket)),
            &[],
            Body::Bytes(Bytes::from_static(xml.as_bytes())),
        )
        .await
        .map(drop)
    }

    /// PutBucketReplication (S3 wants a Content-MD5 on it).
    pub async fn put_replication(&self, bucket: &str, xml: String) -> anyhow::Result<()> {
        let md5 = base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&xml));
        self.send_ok(
            Method::PUT,
            &format!("{}?replication", bucket_path(bucket)),
            &[("content-md5", md5)],
            Body::Bytes(Bytes::from(xml)),
        )
        .await
        .map(drop)
    }

    pub async fn put_object(&self, bucket: &str, key: &str, body: Bytes) -> anyhow::Result<()> {
        self.send_ok(
            Method::PUT,
            &object_path(bucket, key),
            &[("content-type", "text/csv".to_string())],
            Body::Bytes(body),
        )
        .await
        .map(drop)
    }

    /// HeadObject: the ETag (quotes included) or `None` on 404.
    pub async fn head_etag(&self, bucket: &str, key: &str) -> anyhow::Result<Option<String>> {
        let resp = self
            .send(Method::HEAD, &object_path(bucket, key), &[], Body::Empty)
            .await?;
        match resp.status() {
            StatusCode::NOT_FOUND => Ok(None),
            s if s.is_success() => Ok(Some(header(&resp, ETAG))),
            s => bail!("HEAD {bucket}/{key}: {s}"),
        }
    }

    /// Every key under `prefix`, page by page (ListObjectsV2).
    pub async fn list_keys(&self, bucket: &str, prefix: &str) -> anyhow::Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            // Query parameters in sorted order, as SigV4 canonicalizes them.
            let mut query = String::new();
            if let Some(t) = &token {
                query.push_str(&format!("continuation-token={}&", uri_encode(t, true)));
            }
            query.push_str(&format!(
                "list-type=2&max-keys=1000&prefix={}",
                uri_encode(prefix, true)
            ));
            let path = format!("{}?{query}", bucket_path(bucket));
            let xml = self
                .send_ok(Method::GET, &path, &[], Body::Empty)
                .await?
                .text()
                .await?;
            let page = parse_list_page(&xml);
            keys.extend(page.keys);
            match page.next_token {
                Some(t) => token = Some(t),
                None => return Ok(keys),
            }
        }
    }

    /// CreateMultipartUpload; returns the upload id.
    pub async fn create_multipart(&self, bucket: &str, key: &str) -> anyhow::Result<String> {
        let xml = self
            .send_ok(
                Method::POST,
                &format!("{}?uploads", object_path(bucket, key)),
                &[("content-type", "application/octet-stream".to_string())],
                Body::Empty,
            )
            .await?
            .text()
            .await?;
        element(&xml, "UploadId").context("CreateMultipartUpload answered without an UploadId")
    }

    /// UploadPart with a streamed body; returns the part's ETag.
    pub async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: u32,
        body: reqwest::Body,
        len: u64,
    ) -> anyhow::Result<String> {
        let path = format!(
            "{}?partNumber={part}&uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let resp = self
            .send_ok(Method::PUT, &path, &[], Body::Stream(body, len))
            .await?;
        Ok(header(&resp, ETAG))
    }

    /// CompleteMultipartUpload over `etags` (part 1 first).
    pub async fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        etags: &[String],
    ) -> anyhow::Result<()> {
        let parts: String = etags
            .iter()
            .enumerate()
            .map(|(i, e)| {
                format!(
                    "<Part><PartNumber>{}</PartNumber><ETag>{e}</ETag></Part>",
                    i + 1
                )
            })
            .collect();
        let xml = format!("<CompleteMultipartUpload>{parts}</CompleteMultipartUpload>");
        let path = format!(
            "{}?uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let resp = self
            .send_ok(Method::POST, &path, &[], Body::Bytes(Bytes::from(xml)))
            .await?;
        // S3 may answer 200 with an error document once the body started.
        let text = resp.text().await?;
        if text.contains("<Error>") {
            bail!("CompleteMultipartUpload failed: {text}");
        }
        Ok(())
    }

    /// AbortMultipartUpload (best effort, on the error path).
    pub async fn abort_multipart(&self, bucket: &str, key: &str, upload_id: &str) {
        let path = format!(
            "{}?uploadId={}",
            object_path(bucket, key),
            uri_encode(upload_id, true)
        );
        let _ = self.send(Method::DELETE, &path, &[], Body::Empty).await;
    }

    /// How many parts the open multipart uploads of `key` hold (0 when
    /// there is none): how far a destination got with a streamed upload.
    pub async fn uploaded_parts(&self, bucket: &str, key: &str) -> anyhow::Result<usize> {
        let path = format!(
            "{}?prefix={}&uploads",
            bucket_path(bucket),
            uri_encode(key, true)
        );
        let xml = self
            .send_ok(Method::GET, &path, &[], Body::Empty)
            .await?
            .text()
            .await?;
        let mut most = 0;
        for upload in xml.split("<Upload>").skip(1) {
            if element(upload, "Key").as_deref() != Some(key) {
                continue;
            }
            let Some(id) = element(upload, "UploadId") else {
                continue;
            };
            let path = format!(
                "{}?uploadId={}",
                object_path(bucket, key),
                uri_encode(&id, true)
            );
            let resp = self.send(Method::GET, &path, &[], Body::Empty).await?;
            // The upload may complete between the two calls.
            if resp.status().is_success() {
                most = most.max(resp.text().await?.matches("<Part>").count());
            }
        }
        Ok(most)
    }

    /// Plain unsigned GET, for `/metrics`.
    pub async fn get_text(&self, path: &str) -> anyhow::Result<String> {
        let url = format!("{}{path}", self.base);
        let resp = self.http.get(&url).send().await.context("GET /metrics")?;
        if !resp.status().is_success() {
            bail!("GET {url}: {}", resp.status());
        }
        Ok(resp.text().await?)
    }
}

fn bucket_path(bucket: &str) -> String {
    format!("/{}", uri_encode(bucket, true))
}

fn object_path(bucket: &str, key: &str) -> String {
    format!("/{}/{}", uri_encode(bucket, true), uri_encode(key, false))
}

fn header(resp: &Response, name: reqwest::header::HeaderName) -> String {
    resp.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string()
}

/// The text of the first `<name>` element (no entities in the values the
/// demo reads: upload ids and its own keys).
fn element(xml: &str, name: &str) -> Option<String> {
    let open = format!("<{name}>");
    let start = xml.find(&open)? + open.len();
    let len = xml[start..].find(&format!("</{name}>"))?;
    Some(xml[start..start + len].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_reads_the_first_match() {
        let xml = "<R><UploadId>abc</UploadId><UploadId>x</UploadId></R>";
        assert_eq!(element(xml, "UploadId").as_deref(), Some("abc"));
        assert_eq!(element(xml, "Key"), None);
        assert_eq!(object_path("b", "d/k 1.csv"), "/b/d/k%201.csv");
    }
}
