//! `RemoteClient`: a plain S3 client for a registered remote region (another
//! Godwit, or any S3 endpoint), used by the replication worker to write and
//! by PutBucketReplication to resolve a destination ARN to a remote. It is
//! also the one S3 client of the tools (`godwit-tools`: `godwit bench`,
//! `godwit demo`), which use [`RemoteClient::send`] with their own bodies,
//! headers and [`RequestSigner`]s.
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
//!
//! `client` holds the requests, `signing` the SigV4 and URI-encoding rules
//! (shared with the admin CLI and the tools), `xml` the S3 documents as serde types for
//! quick-xml.

mod client;
#[cfg(test)]
mod fuzz_tests;
mod signing;
mod xml;

use std::time::Duration;

use crate::replication::RemoteInfo;

pub use client::{
    Body, ClientOptions, CompletePart, Headers, PartChecksum, RemoteClient, RemoteObject,
    RemotePart, SendError,
};
pub use signing::{
    bucket_path, content_md5, content_md5_from_etag, list_objects_path, object_path, sign_headers,
    sign_service_headers, tagging_header, uri_encode, RequestSigner, SigV4, ToSign, ADMIN_SERVICE,
    EMPTY_SHA256, UNSIGNED_PAYLOAD,
};
pub use xml::{
    error_code, list_entries_page, list_objects_page, EntriesPage, ListPage, ListedEntry,
};

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
        let message = error_with_causes(&e);
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

/// An error and its chain of causes, `outer: inner: ...`. reqwest's
/// Display leaves out the cause (e.g. "connection refused").
pub fn error_with_causes(e: &dyn std::error::Error) -> String {
    let mut message = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        message.push_str(": ");
        message.push_str(&s.to_string());
        source = s.source();
    }
    message
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
    fn error_messages_carry_their_causes() {
        #[derive(Debug, thiserror::Error)]
        #[error("sending the request")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::other("connection refused"));
        assert_eq!(
            error_with_causes(&e),
            "sending the request: connection refused"
        );
    }
}
