//! The S3 gateway: an axum app that speaks the S3 REST API and Alibaba's
//! OSS dialect, path-style or virtual-hosted (`vhost`), authenticates
//! every request (`auth`, `oss::auth`), streams bodies (`body`, `blocks`)
//! to datanodes and commits metadata through `ObjectMeta`.
//!
//! One `Endpoint` per operation (`router`); the operations themselves are
//! dialect-neutral (`api`), and each dialect renders its own answers and
//! adds its own operations: `s3` and `oss` (everything OSS: signing,
//! headers, documents, errors, replication API). `dialect` tells them
//! apart, `dispatch` joins them. Neither dialect module imports the
//! other, and `api` imports neither (`module_graph_tests`).
//!
//! It never touches rocksdb or a disk: its only doors are the
//! `godwit_common::ObjectMeta` (buckets, objects, uploads),
//! `godwit_common::BlockMeta` (block ids and intents for writes) and
//! `godwit_common::BlockRouter` traits, so it runs the same against
//! in-process roles or remote ones.

pub mod accounts;
pub mod acl;
pub mod api;
pub mod auth;
pub mod authz;
pub mod blocks;
pub mod body;
pub mod dialect;
mod dispatch;
pub mod error;
pub mod intents;
pub mod keys;
pub mod metrics;
#[cfg(test)]
mod module_graph_tests;
pub mod names;
pub mod oss;
pub mod policy;
pub mod router;
pub mod s3;
pub mod vhost;
pub mod xml;

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State};
use axum::response::Response;
use godwit_common::{BlockMeta, BlockRouter, ObjectMeta};
use http::{HeaderValue, Method, StatusCode};
use tracing::Instrument;

use crate::api::Ctx;
use crate::dialect::Dialect;
use crate::error::S3Error;
use crate::router::Query;

/// Settings of the S3 listener.
#[derive(Clone, Debug)]
pub struct GatewayConfig {
    /// This region's name: `LocationConstraint`, `x-amz-bucket-region`.
    pub region: String,
    /// Bodies up to this size live inline in the version record.
    pub inline_threshold: usize,
    /// Objects larger than the inline threshold are cut into blocks of this size.
    pub block_size: usize,
    /// Largest object accepted (S3: 5 TiB).
    pub max_object_size: u64,
    /// Domains for virtual-hosted-style requests (`<bucket>.<domain>`),
    /// lowercased without dots at either end (`vhost::normalize_domains`).
    /// Path style works whatever this holds.
    pub domains: Vec<String>,
    /// New S3 buckets get a public access block with all four switches
    /// on (AWS's default since 2023); off, they get none.
    pub default_public_access_block: bool,
    /// The master keys SSE-S3 seals data keys with (None: SSE-S3 writes
    /// and reads of SSE-S3 objects answer NotImplemented).
    pub sse_keys: Option<Arc<godwit_common::sse::KeyRing>>,
}

pub use godwit_common::defaults::{DEFAULT_BLOCK_SIZE, DEFAULT_INLINE_THRESHOLD};
/// S3's largest object.
pub const DEFAULT_MAX_OBJECT_SIZE: u64 = 5 * 1024 * 1024 * 1024 * 1024;
/// S3's largest single PUT (PutObject, UploadPart).
pub const MAX_PUT_SIZE: u64 = 5 * 1024 * 1024 * 1024;

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            region: "us-east-1".into(),
            inline_threshold: DEFAULT_INLINE_THRESHOLD,
            block_size: DEFAULT_BLOCK_SIZE,
            max_object_size: DEFAULT_MAX_OBJECT_SIZE,
            domains: Vec::new(),
            default_public_access_block: true,
            sse_keys: None,
        }
    }
}

pub struct Gateway {
    pub(crate) cfg: GatewayConfig,
    pub(crate) meta: Arc<dyn ObjectMeta>,
    /// Block ids and write intents (the write path).
    pub(crate) block_meta: Arc<dyn BlockMeta>,
    pub(crate) blocks: Arc<dyn BlockRouter>,
    pub(crate) keys: keys::SecretCache,
    pub(crate) accounts: accounts::AccountCache,
    pub(crate) policies: authz::PolicyCache,
    pub(crate) buckets: api::bucket_cache::BucketCache,
}

impl Gateway {
    pub fn new(
        cfg: GatewayConfig,
        meta: Arc<dyn ObjectMeta>,
        block_meta: Arc<dyn BlockMeta>,
        blocks: Arc<dyn BlockRouter>,
    ) -> Arc<Self> {
        let keys = keys::SecretCache::new(meta.clone(), keys::SECRET_TTL);
        let accounts = accounts::AccountCache::new(meta.clone(), accounts::ACCOUNT_TTL);
        let buckets =
            api::bucket_cache::BucketCache::new(meta.clone(), api::bucket_cache::BUCKET_TTL);
        Arc::new(Gateway {
            cfg,
            meta,
            block_meta,
            blocks,
            keys,
            accounts,
            policies: authz::PolicyCache::new(),
            buckets,
        })
    }

    /// The S3 listener's app: every method and path goes to one handler.
    pub fn router(self: &Arc<Self>) -> axum::Router {
        axum::Router::new()
            .fallback(handle_catching)
            .with_state(self.clone())
    }

    pub fn config(&self) -> &GatewayConfig {
        &self.cfg
    }

    /// An access key was created (by this process's admin API): requests
    /// with it must not meet the unknown-key cache.
    pub fn key_created(&self, access_key_id: &str) {
        self.keys.forget_unknown(access_key_id);
    }

    /// Where bodies go, for `blocks::write_stream`.
    pub(crate) fn write_target(
        &self,
        allow_inline: bool,
        max_size: u64,
    ) -> blocks::WriteTarget<'_> {
        blocks::WriteTarget {
            meta: &self.block_meta,
            router: &self.blocks,
            block_size: self.cfg.block_size.max(1) as u64,
            inline_threshold: if allow_inline {
                self.cfg.inline_threshold
            } else {
                0
            },
            max_size: max_size.min(self.cfg.max_object_size),
        }
    }
}

/// 16 upper-case hex digits, like S3's request ids.
fn new_request_id() -> String {
    let id = uuid::Uuid::new_v4();
    hex::encode_upper(&id.as_bytes()[..8])
}

/// Runs [`handle`], turning a panic into a logged, counted 500: a bug
/// must not drop the client's connection (and with it every request
/// pipelined behind this one).
async fn handle_catching(gw: State<Arc<Gateway>>, req: Request) -> Response {
    use futures::FutureExt;
    // Cheap copies (a `Uri` shares its bytes): the request moves into the
    // handler, the panic answer still needs its method and path.
    let method = req.method().clone();
    let uri = req.uri().clone();
    match std::panic::AssertUnwindSafe(handle(gw, req))
        .catch_unwind()
        .await
    {
        Ok(resp) => resp,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            metrics::s3().panics.inc();
            let path = uri.path();
            tracing::error!(%method, %path, panic = %what, "request handler panicked");
            let request_id = new_request_id();
            let err = S3Error::InternalError("request handler panicked".into());
            let mut resp =
                s3::error_response(err.into(), path, &request_id, method == Method::HEAD);
            resp.headers_mut()
                .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
            resp
        }
    }
}

async fn handle(State(gw): State<Arc<Gateway>>, req: Request) -> Response {
    let started = Instant::now();
    let request_id = new_request_id();
    let (parts, body) = req.into_parts();
    let (body, unread) = body::reclaim::wrap(body);
    let is_head = parts.method == Method::HEAD;
    // A client that sent `Expect: 100-continue` and gets its final answer
    // without a 100 (an early error, or an empty body hyper never asked
    // for) may still be about to send a body, or (botocore 1.43) keep
    // waiting state on the connection: close it after this response.
    let expects_continue = parts
        .headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    let empty_body = parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .is_none_or(|v| v == "0");
    let resource = parts.uri.path().to_string();
    // Before authentication, so that its errors speak the client's dialect.
    let dialect = Dialect::detect(&parts);
    let host = parts
        .headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();

    let query = Query::parse(parts.uri.query());
    let vhost_bucket = vhost::bucket_from_host(&parts, &gw.cfg.domains);
    let path = match &vhost_bucket {
        Some(b) => vhost::split_path(b, parts.uri.path()),
        None => router::split_path(parts.uri.path()),
    };
    let (bucket, key) = path.as_ref().cloned().unwrap_or_default();
    let (err_bucket, err_key) = (bucket.clone(), key.clone());
    let endpoint = path.and_then(|(b, k)| {
        router::parse(
            &parts.method,
            b.as_deref(),
            k.as_deref(),
            &query,
            &parts.headers,
        )
    });
    let operation = endpoint.as_ref().map(|e| e.name()).unwrap_or("Unknown");
    // A cross-origin request's answer carries the bucket's CORS headers,
    // success or error (`api::cors`); a preflight answers them itself.
    let cors_origin = match parts.method {
        Method::OPTIONS => None,
        _ => parts
            .headers
            .get(http::header::ORIGIN)
            .and_then(|v| v.to_str().ok())
            .filter(|o| !o.is_empty())
            .map(|o| (o.to_string(), parts.method.clone())),
    };

    let span = tracing::info_span!(
        "s3",
        request_id = %request_id,
        operation,
        bucket = bucket.as_deref().unwrap_or(""),
        key = key.as_deref().unwrap_or(""),
    );
    let result = async {
        // Authenticate before saying anything about the request itself.
        let auth = authenticate(
            &parts,
            &gw.keys,
            time::OffsetDateTime::now_utc(),
            vhost_bucket.as_deref(),
        )
        .await?;
        check_region(&auth, &gw.cfg.region, &query)?;
        let caller = match auth.scheme {
            auth::AuthScheme::Anonymous => accounts::anonymous(),
            _ => {
                let signer = gw.keys.key(&auth.access_key_id).await?;
                gw.accounts.of_key(&signer).await?
            }
        };
        let endpoint = match endpoint {
            Ok(ep) => ep,
            // An anonymous caller learns nothing of a request it may not
            // make: no operation, no access.
            Err(_) if authz::is_anonymous(&caller) => return Err(authz::denied().into()),
            Err(e) => return Err(e.into()),
        };
        let access = authz::Access {
            ep: &endpoint,
            bucket: bucket.as_deref(),
            key: key.as_deref(),
            caller: &caller,
            parts: &parts,
            query: &query,
            signature_version: auth.scheme.signature_version(),
        };
        // A browser form carries its credentials in its body: the
        // handler authenticates the form and authorizes the PutObject it
        // asks for (`api::post_object`). A signed request is authorized
        // here as well.
        let form_authorizes_itself =
            endpoint == router::Endpoint::PostObject && authz::is_anonymous(&caller);
        // A CORS preflight is answered without authorization (browsers
        // send it without credentials); it reads only the bucket's CORS
        // rules and changes nothing (`api::cors`).
        let preflight = endpoint == router::Endpoint::Options;
        if !form_authorizes_itself && !preflight {
            authz::authorize(&gw, &access).await?;
        }
        let mut parts = parts;
        if dialect.is_oss() {
            oss::wire::alias_request_headers(&mut parts.headers);
        }
        let rules = oss::wire::rules(&parts.headers, dialect);
        let ctx = Ctx {
            gw: gw.clone(),
            parts,
            query,
            bucket,
            key,
            auth,
            caller,
            dialect,
            rules,
        };
        dispatch::dispatch(ctx, endpoint, body).await
    }
    .instrument(span.clone())
    .await;

    let mut resp = match (result, dialect) {
        (Ok(resp), Dialect::S3) => resp,
        (Err(e), Dialect::S3) => s3::error_response(e, &resource, &request_id, is_head),
        (Ok(resp), Dialect::Oss) => oss::wire::finish(resp, &request_id).await,
        (Err(e), Dialect::Oss) => {
            let site = oss::error::ErrorSite {
                request_id: &request_id,
                host: &host,
                bucket: err_bucket.as_deref(),
                key: err_key.as_deref(),
            };
            let resp = oss::error::response(e, &site, is_head);
            oss::wire::finish(resp, &request_id).await
        }
    };
    if let (Some((origin, method)), Some(bucket)) = (&cors_origin, err_bucket.as_deref()) {
        api::cors::add_response_headers(&gw, bucket, origin, method, resp.headers_mut()).await;
    }
    if dialect == Dialect::S3 {
        let headers = resp.headers_mut();
        if let Ok(v) = HeaderValue::from_str(&request_id) {
            headers.insert("x-amz-request-id", v.clone());
            headers.insert("x-amz-id-2", v);
        }
    }

    let status = resp.status();
    if expects_continue && (empty_body || !status.is_success()) {
        resp.headers_mut()
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    } else if !status.is_success() && !unread.drain().await {
        // (A client that expects 100-continue was never asked for its
        // body: reading it now would only make it send.)
        resp.headers_mut()
            .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
    }
    let m = metrics::s3();
    m.requests
        .with_label_values(&[operation, status.as_str()])
        .inc();
    metrics::duration(operation).observe(started.elapsed().as_secs_f64());
    span.in_scope(|| {
        if status.is_server_error() && status != StatusCode::NOT_IMPLEMENTED {
            tracing::warn!(status = status.as_u16(), "request failed");
        } else {
            tracing::debug!(status = status.as_u16(), "request done");
        }
    });
    resp
}

/// Authenticates a request signed with any scheme the gateway accepts:
/// AWS SigV4 and SigV2 (`auth`), OSS V1, V4 and OSS2 (`oss::auth`).
/// `vhost_bucket` is the bucket of a virtual-hosted-style request, which
/// SigV2 and the OSS schemes sign as part of the path.
pub async fn authenticate(
    parts: &http::request::Parts,
    lookup: &dyn auth::SecretLookup,
    now: time::OffsetDateTime,
    vhost_bucket: Option<&str>,
) -> Result<auth::AuthOutcome, S3Error> {
    auth::authenticate_with_schemes(parts, lookup, now, vhost_bucket, &oss::auth::OssSchemes).await
}

/// S3 answers a SigV4 credential scoped to another region with a
/// malformed-authorization error naming the expected region.
///
/// OSS answers a V4 credential scoped to another region with
/// InvalidArgument (EC 0002-00000226); its region ids may carry the
/// `oss-` prefix of OSS locations or not.
fn check_region(auth: &auth::AuthOutcome, ours: &str, query: &Query) -> Result<(), S3Error> {
    if auth.scheme == auth::AuthScheme::OssV4 {
        return match &auth.region {
            Some(theirs) if !oss::auth::region_matches(theirs, ours) => Err(
                S3Error::InvalidArgument("Invalid signing region in Authorization header.".into()),
            ),
            _ => Ok(()),
        };
    }
    match &auth.region {
        Some(theirs) if theirs != ours => {
            let msg = format!("the region '{theirs}' is wrong; expecting '{ours}'");
            if query.get("X-Amz-Credential").is_some() {
                Err(S3Error::AuthorizationQueryParametersError(format!(
                    "Error parsing the X-Amz-Credential parameter; {msg}"
                )))
            } else {
                Err(S3Error::AuthorizationHeaderMalformed(format!(
                    "The authorization header is malformed; {msg}"
                )))
            }
        }
        _ => Ok(()),
    }
}
