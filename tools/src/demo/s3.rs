//! The few signed S3 and admin requests the demo makes: bucket setup,
//! PutObject, the multipart calls with streamed part bodies, HEAD for the
//! ETag, ListObjectsV2 and ListParts for the pollers. A thin layer over
//! `common`'s `RemoteClient` (path-style URLs, SigV4), whose errors it
//! turns into `anyhow` ones.

use std::sync::Arc;

use anyhow::{bail, Context};
use bytes::Bytes;
use godwit_common::net::s3_remote::{
    bucket_path, content_md5, object_path, uri_encode, ClientOptions, RemoteClient, SigV4,
};
use godwit_common::replication::RemoteInfo;
use godwit_common::ByteStream;
use reqwest::{Method, Response};

pub use godwit_common::net::s3_remote::Body;

/// Signed requests to one S3 (or admin) endpoint.
#[derive(Clone)]
pub struct Client {
    remote: RemoteClient,
}

impl Client {
    pub fn new(
        endpoint: &str,
        region: &str,
        access_key: &str,
        secret_key: &str,
    ) -> anyhow::Result<Client> {
        let endpoint_info = RemoteInfo {
            name: "demo".into(),
            endpoint: endpoint.into(),
            access_key: access_key.into(),
            secret_key: secret_key.into(),
            region: region.into(),
            bandwidth_limit: None,
            ca_pem: None,
        };
        let options = ClientOptions {
            http1_only: true,
            // The pollers and a large part may take their time.
            request_timeout: None,
            ..ClientOptions::default()
        };
        let remote = RemoteClient::with_options(&endpoint_info, &options)?;
        Ok(Client { remote })
    }

    /// A client of an admin listener (SigV4 scoped to the admin service).
    pub fn admin(
        endpoint: &str,
        region: &str,
        access_key: &str,
        secret_key: &str,
    ) -> anyhow::Result<Client> {
        let client = Client::new(endpoint, region, access_key, secret_key)?;
        Ok(Client {
            remote: client.remote.with_signer(Arc::new(SigV4::ADMIN)),
        })
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
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        self.remote
            .send(method.clone(), path_and_query, &headers, body)
            .await
            .with_context(|| format!("{method} {}", self.remote.url(path_and_query)))
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
        self.remote
            .create_bucket(bucket)
            .await
            .with_context(|| format!("creating bucket {bucket}"))
    }

    /// PutBucketVersioning Enabled.
    pub async fn enable_versioning(&self, bucket: &str) -> anyhow::Result<()> {
        Ok(self.remote.enable_versioning(bucket).await?)
    }

    /// PutBucketReplication (S3 wants a Content-MD5 on it).
    pub async fn put_replication(&self, bucket: &str, xml: String) -> anyhow::Result<()> {
        self.send_ok(
            Method::PUT,
            &format!("{}?replication", bucket_path(bucket)),
            &[("content-md5", content_md5(xml.as_bytes()))],
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

    /// HeadObject: the ETag (unquoted) or `None` on 404.
    pub async fn head_etag(&self, bucket: &str, key: &str) -> anyhow::Result<Option<String>> {
        let head = self
            .remote
            .head_object(bucket, key)
            .await
            .with_context(|| format!("HEAD {bucket}/{key}"))?;
        Ok(head.map(|o| o.etag))
    }

    /// Every key under `prefix`, page by page (ListObjectsV2).
    pub async fn list_keys(&self, bucket: &str, prefix: &str) -> anyhow::Result<Vec<String>> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = self
                .remote
                .list_objects_page(bucket, prefix, token.as_deref(), 1000)
                .await?;
            keys.extend(page.keys);
            match page.next_token {
                Some(t) => token = Some(t),
                None => return Ok(keys),
            }
        }
    }

    /// CreateMultipartUpload; returns the upload id.
    pub async fn create_multipart(&self, bucket: &str, key: &str) -> anyhow::Result<String> {
        let headers = vec![(
            "content-type".to_string(),
            "application/octet-stream".to_string(),
        )];
        Ok(self
            .remote
            .create_multipart_upload(bucket, key, headers)
            .await?)
    }

    /// UploadPart with a streamed body; returns the part's ETag (unquoted).
    pub async fn upload_part(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        part: u32,
        body: ByteStream,
        len: u64,
    ) -> anyhow::Result<String> {
        Ok(self
            .remote
            .upload_part(bucket, key, upload_id, part, body, len, None)
            .await?)
    }

    /// CompleteMultipartUpload over `etags` (part 1 first, unquoted).
    pub async fn complete_multipart(
        &self,
        bucket: &str,
        key: &str,
        upload_id: &str,
        etags: &[String],
    ) -> anyhow::Result<()> {
        let parts: Vec<(u32, String)> = (1u32..).zip(etags.iter().cloned()).collect();
        self.remote
            .complete_multipart_upload(bucket, key, upload_id, &parts, Vec::new())
            .await?;
        Ok(())
    }

    /// AbortMultipartUpload (best effort, on the error path).
    pub async fn abort_multipart(&self, bucket: &str, key: &str, upload_id: &str) {
        let _ = self
            .remote
            .abort_multipart_upload(bucket, key, upload_id)
            .await;
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
            // The upload may complete between the two calls.
            match self.remote.list_parts(bucket, key, &id).await {
                Ok(parts) => most = most.max(parts.len()),
                Err(e) if e.status().is_some() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(most)
    }

    /// Plain unsigned GET, for `/metrics`.
    pub async fn get_text(&self, path: &str) -> anyhow::Result<String> {
        let url = self.remote.url(path);
        let resp = self
            .remote
            .http()
            .get(&url)
            .send()
            .await
            .context("GET /metrics")?;
        if !resp.status().is_success() {
            bail!("GET {url}: {}", resp.status());
        }
        Ok(resp.text().await?)
    }
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
