//! Admin listener: `GET /health` (200 once every role in this process is
//! ready, 503 before), `GET /metrics` (Prometheus text of the process's
//! default registry) and `/admin/v1/...`, authenticated with SigV4 by the
//! root key only.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use godwit_common::replication::{RemoteInfo, RuleStats};
use godwit_common::sla::{parse_period, SlaReport};
use godwit_common::types::{AccessKey, Account};
use godwit_common::verify::{VerifyJob, VerifySpec};
use godwit_common::{AdminMeta, BlockMeta, MetaError, ObjectMeta};
use godwit_gateway::auth::{self, SecretLookup};
use godwit_gateway::error::S3Error;
use serde::{Deserialize, Serialize};
use sha2::Digest;

pub struct AdminState {
    pub ready: AtomicBool,
    meta: RwLock<Option<MetaHandles>>,
    /// On a meta node: the node itself and this process's root key, for
    /// the cluster routes (`cluster.rs`).
    meta_node: RwLock<Option<MetaNodeAccess>>,
    /// Told of every key created here (the all-in-one server's gateway
    /// clears it from its unknown-key cache).
    on_key_created: RwLock<Option<KeyCreated>>,
}

/// The meta contracts the admin API uses: what the operator changes
/// (`admin`), and the reads it shares with the S3 path (`objects`: keys,
/// remotes, replication figures) and the block routers (`blocks`: the
/// datanode list).
#[derive(Clone)]
pub struct MetaHandles {
    pub admin: Arc<dyn AdminMeta>,
    pub objects: Arc<dyn ObjectMeta>,
    pub blocks: Arc<dyn BlockMeta>,
}

impl MetaHandles {
    /// All three from one implementation (a `MetaNode` or a `MetaClient`).
    pub fn of<M: AdminMeta + ObjectMeta + BlockMeta>(meta: Arc<M>) -> Self {
        MetaHandles {
            admin: meta.clone(),
            objects: meta.clone(),
            blocks: meta,
        }
    }
}

/// Called with the id of each access key the admin API creates.
pub type KeyCreated = Arc<dyn Fn(&str) + Send + Sync>;

/// A meta node and the root key of its process.
pub(crate) type MetaNodeAccess = (
    Arc<godwit_meta::MetaNode>,
    crate::credentials::RootCredentials,
);

impl AdminState {
    pub fn new(meta: Option<MetaHandles>) -> Self {
        AdminState {
            ready: AtomicBool::new(false),
            meta: RwLock::new(meta),
            meta_node: RwLock::new(None),
            on_key_created: RwLock::new(None),
        }
    }

    pub fn set_on_key_created(&self, f: KeyCreated) {
        *self.on_key_created.write().expect("admin lock") = Some(f);
    }

    /// Serves the cluster routes from `node` (a meta node's process).
    pub fn set_meta_node(
        &self,
        node: Arc<godwit_meta::MetaNode>,
        root: crate::credentials::RootCredentials,
    ) {
        *self.meta_node.write().expect("admin lock") = Some((node, root));
    }

    pub(crate) fn meta_node(&self) -> Option<MetaNodeAccess> {
        self.meta_node.read().expect("admin lock").clone()
    }

    pub fn set_meta(&self, meta: MetaHandles) {
        *self.meta.write().expect("admin lock") = Some(meta);
    }

    /// The meta handles once set (the dashboard's reads, `ui/`).
    pub(crate) fn meta_handles(&self) -> Option<MetaHandles> {
        self.meta.read().expect("admin lock").clone()
    }

    fn meta(&self) -> Result<MetaHandles, AdminError> {
        self.meta
            .read()
            .expect("admin lock")
            .clone()
            .ok_or(AdminError::NotReady)
    }
}

/// A key as listed: never with its secret.
#[derive(Serialize, Deserialize, Debug)]
pub struct KeySummary {
    pub access_key_id: String,
    pub name: String,
    pub created_ms: i64,
    pub is_root: bool,
    /// The canonical id of the key's account.
    #[serde(default)]
    pub account: String,
}

impl KeySummary {
    fn of(k: AccessKey, root_id: &str) -> Self {
        KeySummary {
            account: k.account_id(root_id),
            access_key_id: k.access_key_id,
            name: k.name,
            created_ms: k.created_ms,
            is_root: k.is_root,
        }
    }
}

/// An account as `account list` and `account show` present it: its keys
/// (ids only) and the buckets it owns.
#[derive(Serialize, Deserialize, Debug)]
pub struct AccountSummary {
    pub id: String,
    pub name: String,
    #[serde(default)]
    pub email: Option<String>,
    pub created_ms: i64,
    pub is_root: bool,
    pub keys: Vec<String>,
    pub buckets: Vec<String>,
}

#[derive(Debug)]
pub(crate) enum AdminError {
    NotReady,
    Auth(S3Error),
    NotRoot,
    BadRequest(String),
    NotFound(String),
    Meta(MetaError),
}

impl IntoResponse for AdminError {
    fn into_response(self) -> Response {
        let (status, msg) = match self {
            AdminError::NotReady => (StatusCode::SERVICE_UNAVAILABLE, "not ready".to_string()),
            AdminError::Auth(e) => (e.http_status(), format!("{}: {e}", e.code())),
            AdminError::NotRoot => (
                StatusCode::FORBIDDEN,
                "the admin API needs the root key".into(),
            ),
            AdminError::BadRequest(m) => (StatusCode::BAD_REQUEST, m),
            AdminError::NotFound(m) => (StatusCode::NOT_FOUND, m),
            AdminError::Meta(e @ MetaError::NoSuchReplicationRule(_))
            | AdminError::Meta(e @ MetaError::ReplicationConfigurationNotFound) => {
                (StatusCode::NOT_FOUND, e.to_string())
            }
            AdminError::Meta(MetaError::NoSuchAccessKey) => {
                (StatusCode::NOT_FOUND, "no such access key".into())
            }
            AdminError::Meta(MetaError::NoSuchBucket) => {
                (StatusCode::NOT_FOUND, "no such bucket".into())
            }
            AdminError::Meta(MetaError::NoSuchAccount) => {
                (StatusCode::NOT_FOUND, "no such account".into())
            }
            AdminError::Meta(e @ MetaError::InvalidArgument(_)) => {
                (StatusCode::BAD_REQUEST, e.to_string())
            }
            AdminError::Meta(e @ MetaError::NoSuchRemote(_)) => {
                (StatusCode::NOT_FOUND, e.to_string())
            }
            AdminError::Meta(e @ MetaError::InvalidRequest(_)) => {
                (StatusCode::CONFLICT, e.to_string())
            }
            AdminError::Meta(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        };
        (status, Json(serde_json::json!({ "error": msg }))).into_response()
    }
}

impl From<MetaError> for AdminError {
    fn from(e: MetaError) -> Self {
        AdminError::Meta(e)
    }
}

struct MetaSecrets(Arc<dyn ObjectMeta>);

#[async_trait]
impl SecretLookup for MetaSecrets {
    async fn secret(&self, access_key_id: &str) -> Result<String, S3Error> {
        match self.0.get_access_key(access_key_id).await {
            Ok(k) => Ok(k.secret_access_key),
            Err(MetaError::NoSuchAccessKey) => Err(S3Error::InvalidAccessKeyId),
            Err(e) => Err(e.into()),
        }
    }
}

/// Verifies the SigV4 signature of an admin request and that it was made
/// with a root key.
async fn require_root(state: &AdminState, req: Request) -> Result<(), AdminError> {
    let meta = state.meta()?;
    let (parts, _body) = req.into_parts();
    let outcome = auth::authenticate_admin(
        &parts,
        &MetaSecrets(meta.objects.clone()),
        time::OffsetDateTime::now_utc(),
    )
    .await
    .map_err(AdminError::Auth)?;
    let key = meta.objects.get_access_key(&outcome.access_key_id).await?;
    if key.is_root {
        Ok(())
    } else {
        Err(AdminError::NotRoot)
    }
}

async fn health(State(s): State<Arc<AdminState>>) -> StatusCode {
    if s.ready.load(Ordering::Acquire) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

async fn metrics() -> Response {
    use prometheus::Encoder;
    let encoder = prometheus::TextEncoder::new();
    let mut buf = Vec::new();
    match encoder.encode(&prometheus::default_registry().gather(), &mut buf) {
        Ok(()) => (
            [(
                axum::http::header::CONTENT_TYPE,
                encoder.format_type().to_string(),
            )],
            buf,
        )
            .into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
    }
}

async fn list_keys(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<Vec<KeySummary>>, AdminError> {
    require_root(&s, req).await?;
    let meta = s.meta()?;
    let root = root_account(&meta).await?;
    let keys = meta.admin.list_access_keys().await?;
    Ok(Json(
        keys.into_iter()
            .map(|k| KeySummary::of(k, &root.id))
            .collect(),
    ))
}

/// The root account (made at start-up).
async fn root_account(meta: &MetaHandles) -> Result<Account, AdminError> {
    let accounts = meta.admin.list_accounts().await?;
    accounts
        .into_iter()
        .find(|a| a.is_root)
        .ok_or(AdminError::NotReady)
}

/// The account named `name_or_id` (its display name or canonical id).
async fn find_account(meta: &MetaHandles, name_or_id: &str) -> Result<Account, AdminError> {
    meta.admin
        .list_accounts()
        .await?
        .into_iter()
        .find(|a| a.name == name_or_id || a.id == name_or_id)
        .ok_or(AdminError::Meta(MetaError::NoSuchAccount))
}

/// Every account with its keys and buckets.
async fn account_summaries(meta: &MetaHandles) -> Result<Vec<AccountSummary>, AdminError> {
    let accounts = meta.admin.list_accounts().await?;
    let root = accounts
        .iter()
        .find(|a| a.is_root)
        .map(|a| a.id.clone())
        .unwrap_or_default();
    let keys = meta.admin.list_access_keys().await?;
    let mut owners = Vec::new();
    for b in meta.objects.list_buckets().await? {
        let owner = match meta.objects.get_account(&b.owner).await {
            Ok(a) => a.id,
            Err(MetaError::NoSuchAccount) => b.owner.clone(),
            Err(e) => return Err(e.into()),
        };
        owners.push((owner, b.name));
    }
    Ok(accounts
        .into_iter()
        .map(|a| AccountSummary {
            keys: keys
                .iter()
                .filter(|k| k.account_id(&root) == a.id)
                .map(|k| k.access_key_id.clone())
                .collect(),
            buckets: owners
                .iter()
                .filter(|(owner, _)| *owner == a.id)
                .map(|(_, name)| name.clone())
                .collect(),
            id: a.id,
            name: a.name,
            email: a.email,
            created_ms: a.created_ms,
            is_root: a.is_root,
        })
        .collect())
}

async fn list_accounts(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<Vec<AccountSummary>>, AdminError> {
    require_root(&s, req).await?;
    Ok(Json(account_summaries(&s.meta()?).await?))
}

async fn show_account(
    State(s): State<Arc<AdminState>>,
    Path(name_or_id): Path<String>,
    req: Request,
) -> Result<Json<AccountSummary>, AdminError> {
    require_root(&s, req).await?;
    account_summaries(&s.meta()?)
        .await?
        .into_iter()
        .find(|a| a.name == name_or_id || a.id == name_or_id)
        .map(Json)
        .ok_or(AdminError::Meta(MetaError::NoSuchAccount))
}

#[derive(Deserialize)]
struct CreateAccountQuery {
    name: String,
    email: Option<String>,
}

async fn create_account(
    State(s): State<Arc<AdminState>>,
    Query(q): Query<CreateAccountQuery>,
    req: Request,
) -> Result<Json<Account>, AdminError> {
    require_root(&s, req).await?;
    let meta = s.meta()?;
    if find_account(&meta, &q.name).await.is_ok() {
        return Err(AdminError::BadRequest(format!(
            "an account named {} exists already",
            q.name
        )));
    }
    let account = Account {
        id: Account::new_id(),
        name: q.name,
        email: q.email.filter(|e| !e.is_empty()),
        created_ms: time::OffsetDateTime::now_utc().unix_timestamp() * 1000,
        is_root: false,
    };
    Ok(Json(meta.admin.put_account(account).await?))
}

async fn delete_account(
    State(s): State<Arc<AdminState>>,
    Path(name_or_id): Path<String>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    require_root(&s, req).await?;
    let meta = s.meta()?;
    let account = find_account(&meta, &name_or_id).await?;
    meta.admin.delete_account(&account.id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct CreateKeyQuery {
    name: Option<String>,
    /// The account (name or id) the key signs for; absent: a new account
    /// named after the key.
    account: Option<String>,
}

/// Optional body of `POST /admin/v1/keys`: a key made elsewhere, imported
/// with its id and secret (`godwit admin key create --access-key-id`).
#[derive(Deserialize)]
struct ImportKey {
    access_key_id: String,
    secret_access_key: String,
}

async fn create_key(
    State(s): State<Arc<AdminState>>,
    Query(q): Query<CreateKeyQuery>,
    req: Request,
) -> Result<Json<AccessKey>, AdminError> {
    let has_body = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .is_some_and(|v| v != "0");
    let (id, secret) = if has_body {
        let k: ImportKey = signed_json(&s, req).await?;
        crate::credentials::check_imported_key(&k.access_key_id, &k.secret_access_key)
            .map_err(AdminError::BadRequest)?;
        (k.access_key_id, k.secret_access_key)
    } else {
        require_root(&s, req).await?;
        crate::credentials::generate_key_pair()
    };
    let meta = s.meta()?;
    let name = q.name.unwrap_or_default();
    let now_ms = time::OffsetDateTime::now_utc().unix_timestamp() * 1000;
    if meta.objects.get_access_key(&id).await.is_ok() {
        return Err(AdminError::BadRequest(format!(
            "access key {id} exists already"
        )));
    }
    let account = match q.account.as_deref().filter(|a| !a.is_empty()) {
        Some(name_or_id) => find_account(&meta, name_or_id).await?,
        None => {
            // A key of its own account, as every key made before
            // accounts existed became.
            let mut account_name = if name.is_empty() {
                format!("key-{id}")
            } else {
                name.clone()
            };
            if find_account(&meta, &account_name).await.is_ok() {
                account_name = format!("{account_name}-{id}");
            }
            meta.admin
                .put_account(Account {
                    id: Account::new_id(),
                    name: account_name,
                    email: None,
                    created_ms: now_ms,
                    is_root: false,
                })
                .await?
        }
    };
    let key = AccessKey {
        access_key_id: id,
        secret_access_key: secret,
        name,
        created_ms: now_ms,
        is_root: false,
        account: account.id,
    };
    let stored = meta.admin.put_access_key(key.clone()).await?;
    if stored.secret_access_key != key.secret_access_key {
        return Err(AdminError::BadRequest(format!(
            "access key {} exists already",
            key.access_key_id
        )));
    }
    if let Some(f) = s.on_key_created.read().expect("admin lock").clone() {
        f(&stored.access_key_id);
    }
    // The one response that carries the secret.
    Ok(Json(stored))
}

async fn delete_key(
    State(s): State<Arc<AdminState>>,
    Path(id): Path<String>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    require_root(&s, req).await?;
    let meta = s.meta()?;
    if meta.objects.get_access_key(&id).await?.is_root {
        return Err(AdminError::NotRoot);
    }
    meta.admin.delete_access_key(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Serialize, Deserialize)]
pub struct ClusterStatus {
    pub meta: godwit_common::types::MetaStatus,
    pub datanodes: Vec<godwit_common::types::DatanodeInfo>,
}

async fn status(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<ClusterStatus>, AdminError> {
    require_root(&s, req).await?;
    let meta = s.meta()?;
    Ok(Json(ClusterStatus {
        meta: meta.admin.status().await?,
        datanodes: meta.blocks.list_datanodes().await?,
    }))
}

/// A remote as listed: never with its secret.
#[derive(Serialize, Deserialize, Debug)]
pub struct RemoteSummary {
    pub name: String,
    pub endpoint: String,
    pub access_key: String,
    pub region: String,
    pub bandwidth_limit: Option<u64>,
}

impl From<RemoteInfo> for RemoteSummary {
    fn from(r: RemoteInfo) -> Self {
        RemoteSummary {
            name: r.name,
            endpoint: r.endpoint,
            access_key: r.access_key,
            region: r.region,
            bandwidth_limit: r.bandwidth_limit,
        }
    }
}

/// Reads the body (1 MiB at most) and checks it against the signed
/// `x-amz-content-sha256`; the signature itself is the caller's to check.
pub(crate) async fn signed_body(
    req: Request,
) -> Result<(axum::http::request::Parts, axum::body::Bytes), AdminError> {
    let (parts, body) = req.into_parts();
    let bytes = axum::body::to_bytes(body, 1 << 20)
        .await
        .map_err(|_| AdminError::Auth(S3Error::IncompleteBody))?;
    let want = parts
        .headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if want != hex::encode(sha2::Sha256::digest(&bytes)) {
        return Err(AdminError::Auth(S3Error::XAmzContentSHA256Mismatch));
    }
    Ok((parts, bytes))
}

/// Verifies the signature over the JSON body too (its SHA-256 is signed),
/// then parses it.
async fn signed_json<T: serde::de::DeserializeOwned>(
    state: &AdminState,
    req: Request,
) -> Result<T, AdminError> {
    let (parts, bytes) = signed_body(req).await?;
    require_root(state, Request::from_parts(parts, axum::body::Body::empty())).await?;
    serde_json::from_slice(&bytes).map_err(|e| AdminError::BadRequest(e.to_string()))
}

async fn add_remote(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    let remote: RemoteInfo = signed_json(&s, req).await?;
    if remote.name.is_empty() || !remote.endpoint.starts_with("http") {
        return Err(AdminError::BadRequest(
            "a remote needs a name and an http(s) endpoint".into(),
        ));
    }
    s.meta()?.admin.put_remote(remote).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn list_remotes(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<Vec<RemoteSummary>>, AdminError> {
    require_root(&s, req).await?;
    let remotes = s.meta()?.objects.list_remotes().await?;
    Ok(Json(remotes.into_iter().map(RemoteSummary::from).collect()))
}

async fn remove_remote(
    State(s): State<Arc<AdminState>>,
    Path(name): Path<String>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    require_root(&s, req).await?;
    s.meta()?.admin.delete_remote(&name).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[derive(Deserialize)]
struct BucketQuery {
    bucket: Option<String>,
}

async fn replication_status(
    State(s): State<Arc<AdminState>>,
    Query(q): Query<BucketQuery>,
    req: Request,
) -> Result<Json<Vec<RuleStats>>, AdminError> {
    require_root(&s, req).await?;
    Ok(Json(
        s.meta()?
            .objects
            .replication_stats(q.bucket.as_deref())
            .await?,
    ))
}

/// The period of a report asked without `since`.
pub const DEFAULT_REPORT_PERIOD: &str = "24h";

#[derive(Deserialize)]
struct ReportQuery {
    bucket: Option<String>,
    /// `7d`, `36h`, ... (`sla::parse_period`); default a day.
    since: Option<String>,
    /// One rule's rows only.
    rule: Option<String>,
}

/// `GET /admin/v1/replication/report?bucket=B[&since=7d][&rule=ID]`: the
/// SLA report of a bucket's rules (`godwit_common::sla`).
async fn replication_report(
    State(s): State<Arc<AdminState>>,
    Query(q): Query<ReportQuery>,
    req: Request,
) -> Result<Json<SlaReport>, AdminError> {
    require_root(&s, req).await?;
    let bucket = q
        .bucket
        .ok_or_else(|| AdminError::BadRequest("bucket is required".into()))?;
    let period = parse_period(q.since.as_deref().unwrap_or(DEFAULT_REPORT_PERIOD))
        .map_err(AdminError::BadRequest)?;
    let rule = q.rule.as_deref().filter(|r| !r.is_empty());
    Ok(Json(
        s.meta()?
            .admin
            .replication_report(&bucket, rule, period)
            .await?,
    ))
}

#[derive(Serialize, Deserialize)]
pub struct RetryOutcome {
    pub requeued: u64,
}

async fn retry_failed(
    State(s): State<Arc<AdminState>>,
    Query(q): Query<BucketQuery>,
    req: Request,
) -> Result<Json<RetryOutcome>, AdminError> {
    require_root(&s, req).await?;
    let bucket = q
        .bucket
        .ok_or_else(|| AdminError::BadRequest("bucket is required".into()))?;
    Ok(Json(RetryOutcome {
        requeued: s.meta()?.admin.retry_failed(&bucket).await?,
    }))
}

#[derive(Deserialize)]
struct VerifyQuery {
    bucket: Option<String>,
    level: Option<u8>,
    rule: Option<String>,
    prefix: Option<String>,
    /// `1` or `true`: requeue what is missing or differs.
    repair: Option<String>,
}

/// `POST /admin/v1/replication/verify?bucket=B&level=N[&rule=ID][&prefix=P][&repair=1]`:
/// starts a verify job (`godwit_common::verify`) and answers it (201).
async fn start_verify(
    State(s): State<Arc<AdminState>>,
    Query(q): Query<VerifyQuery>,
    req: Request,
) -> Result<(StatusCode, Json<VerifyJob>), AdminError> {
    require_root(&s, req).await?;
    let bucket = q
        .bucket
        .ok_or_else(|| AdminError::BadRequest("bucket is required".into()))?;
    let level = q
        .level
        .ok_or_else(|| AdminError::BadRequest("level (0, 1 or 2) is required".into()))?;
    let repair = match q.repair.as_deref() {
        None | Some("0") | Some("false") => false,
        Some("1") | Some("true") => true,
        Some(other) => {
            return Err(AdminError::BadRequest(format!(
                "repair must be 1 or 0, not {other}"
            )))
        }
    };
    let spec = VerifySpec {
        bucket,
        rule_id: q.rule.filter(|r| !r.is_empty()),
        prefix: q.prefix.unwrap_or_default(),
        level,
        repair,
    };
    let job = s.meta()?.admin.start_verify(spec).await?;
    Ok((StatusCode::CREATED, Json(job)))
}

/// `GET /admin/v1/replication/jobs`: every kept verify job, oldest first.
async fn list_jobs(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<Vec<VerifyJob>>, AdminError> {
    require_root(&s, req).await?;
    Ok(Json(s.meta()?.admin.list_verify_jobs().await?))
}

fn no_such_job(id: &str) -> AdminError {
    AdminError::NotFound(format!("no verify job {id}"))
}

/// `GET /admin/v1/replication/jobs/{id}`: one job, its report.
async fn show_job(
    State(s): State<Arc<AdminState>>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Json<VerifyJob>, AdminError> {
    require_root(&s, req).await?;
    match s.meta()?.admin.get_verify_job(&id).await? {
        Some(job) => Ok(Json(job)),
        None => Err(no_such_job(&id)),
    }
}

/// `POST /admin/v1/replication/jobs/{id}/cancel`: stops a running job at
/// its next page; answers the job.
async fn cancel_job(
    State(s): State<Arc<AdminState>>,
    Path(id): Path<String>,
    req: Request,
) -> Result<Json<VerifyJob>, AdminError> {
    require_root(&s, req).await?;
    let meta = s.meta()?;
    if meta.admin.get_verify_job(&id).await?.is_none() {
        return Err(no_such_job(&id));
    }
    Ok(Json(meta.admin.cancel_verify_job(&id).await?))
}

async fn list_datanodes(
    State(s): State<Arc<AdminState>>,
    req: Request,
) -> Result<Json<Vec<godwit_common::types::DatanodeStatus>>, AdminError> {
    require_root(&s, req).await?;
    Ok(Json(s.meta()?.admin.datanode_status().await?))
}

/// Starts draining a datanode (`godwit admin datanode decommission ID`).
async fn decommission_datanode(
    State(s): State<Arc<AdminState>>,
    Path(id): Path<u64>,
    req: Request,
) -> Result<StatusCode, AdminError> {
    require_root(&s, req).await?;
    match s.meta()?.admin.decommission_datanode(id).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT),
        Err(MetaError::InvalidArgument(m)) => Err(AdminError::BadRequest(m)),
        Err(e) => Err(e.into()),
    }
}

pub fn router(state: Arc<AdminState>) -> Router {
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/admin/v1/keys", get(list_keys).post(create_key))
        .route("/admin/v1/keys/{id}", delete(delete_key))
        .route(
            "/admin/v1/accounts",
            get(list_accounts).post(create_account),
        )
        .route(
            "/admin/v1/accounts/{name}",
            get(show_account).delete(delete_account),
        )
        .route("/admin/v1/status", get(status))
        .route("/admin/v1/remotes", get(list_remotes).post(add_remote))
        .route("/admin/v1/remotes/{name}", delete(remove_remote))
        .route("/admin/v1/replication/status", get(replication_status))
        .route("/admin/v1/replication/report", get(replication_report))
        .route("/admin/v1/replication/retry-failed", post(retry_failed))
        .route("/admin/v1/replication/verify", post(start_verify))
        .route("/admin/v1/replication/jobs", get(list_jobs))
        .route("/admin/v1/replication/jobs/{id}", get(show_job))
        .route("/admin/v1/replication/jobs/{id}/cancel", post(cancel_job))
        .route("/admin/v1/datanodes", get(list_datanodes))
        .route(
            "/admin/v1/datanodes/{id}/decommission",
            post(decommission_datanode),
        )
        .merge(super::cluster::routes())
        .with_state(state)
}
